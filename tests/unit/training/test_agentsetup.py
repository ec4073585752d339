"""The agent's setup before any job (issue 21, R33): its token messages fit where the agent runs (a
machine, the agent image, a systemd unit)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from potato.training.agent import startup as agent


# -- the agent's token message: where the agent runs (issue 21, R33) ----------------------------------

def agent_args(**given: Any) -> argparse.Namespace:
    base: dict[str, Any] = {"token_stdin": False, "token_file": None, "backend": "lab-workstation",
                            "server": "https://annotate.example.org"}
    base.update(given)
    return argparse.Namespace(**base)


def test_a_missing_token_on_a_machine_says_export(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(agent.TOKEN_ENV, raising=False)
    monkeypatch.setattr(agent, "container_image", lambda: None)
    with pytest.raises(agent.TokenError) as missing:
        agent.read_token(agent_args())
    assert str(missing.value) == (
        "no token in POTATO_TRAINING_TOKEN. On the server run `potato training register lab-workstation "
        "config.yaml`, then on this machine `export POTATO_TRAINING_TOKEN=<token>` (or save it to a file and pass "
        "--token-file FILE).")


def test_a_missing_token_in_the_agent_image_says_docker_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In the agent image the agent is the container's command: no shell to export in, and only the
    files mounted into it."""
    monkeypatch.delenv(agent.TOKEN_ENV, raising=False)
    monkeypatch.setattr(agent, "container_image", lambda: "potato-agent")
    with pytest.raises(agent.TokenError) as missing:
        agent.read_token(agent_args())
    assert str(missing.value) == (
        "no token in POTATO_TRAINING_TOKEN. On the server run `potato training register lab-workstation "
        "config.yaml`, then start this container with the token in its environment: `docker run -e "
        "POTATO_TRAINING_TOKEN=<token> ... potato-agent --server https://annotate.example.org --backend "
        "lab-workstation` (or mount a file that holds it: `-v /path/to/token:/run/secrets/potato-token:ro` and "
        "pass --token-file /run/secrets/potato-token).")
    assert "export" not in str(missing.value)
    absent = tmp_path / "token"
    with pytest.raises(agent.AgentError) as unreadable:
        agent.read_token(agent_args(token_file=str(absent)))
    assert str(unreadable.value) == (
        f"cannot read --token-file {absent}: No such file or directory; this agent runs in a container, which sees "
        f"only the files mounted into it: `docker run -v /path/on/the/host/token:{absent}:ro ... potato-agent ... "
        f"--token-file {absent}`")


def test_the_agent_image_is_recognised(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The images write their name to /etc/potato-image; another container has /.dockerenv."""
    monkeypatch.setattr(agent, "image_name", lambda: "potato-agent")
    assert agent.container_image() == "potato-agent"
    monkeypatch.setattr(agent, "image_name", lambda: None)
    monkeypatch.setattr(agent, "CONTAINER_MARKERS", (str(tmp_path / "none"),))
    assert agent.container_image() is None
    (tmp_path / ".dockerenv").touch()
    monkeypatch.setattr(agent, "CONTAINER_MARKERS", (str(tmp_path / ".dockerenv"),))
    assert agent.container_image() == "<image>"
    monkeypatch.delenv(agent.TOKEN_ENV, raising=False)
    with pytest.raises(agent.TokenError) as missing:
        agent.read_token(agent_args())
    assert "`export POTATO_TRAINING_TOKEN=<token>`" in str(missing.value)
    assert "where the agent is a container's command: `docker run -e POTATO_TRAINING_TOKEN=<token>" in str(missing.value)


def test_under_systemd_the_token_messages_name_the_units_credential(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """A service has no shell to export in and reads files as its own user; under systemd in an image
    (the systemd test's) the docker hint was wrong. The fix is the credential the shipped unit uses."""
    monkeypatch.delenv(agent.TOKEN_ENV, raising=False)
    monkeypatch.setattr(agent, "container_image", lambda: "potato-server")
    monkeypatch.setattr(agent, "under_systemd", lambda: True)
    credential = ("hand it to the service as a credential: `LoadCredential=token:/etc/potato/agent-token` in the "
                  "unit and `--token-file ${CREDENTIALS_DIRECTORY}/token` on its command line, as the "
                  "potato-agent.service that Potato ships does")
    with pytest.raises(agent.TokenError) as missing:
        agent.read_token(agent_args())
    assert str(missing.value) == (
        "no token in POTATO_TRAINING_TOKEN. On the server run `potato training register lab-workstation "
        "config.yaml`, then save it on this machine (`install -m 600 /dev/stdin /etc/potato/agent-token`) and "
        + credential)
    absent = tmp_path / "token"
    with pytest.raises(agent.AgentError) as unreadable:
        agent.read_token(agent_args(token_file=str(absent)))
    assert str(unreadable.value) == (
        f"cannot read --token-file {absent}: No such file or directory; this agent runs as a systemd service, "
        f"whose user may not read files elsewhere: " + credential)


def test_systemd_is_recognised_by_its_parent_and_invocation_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """A desktop terminal started by the user's systemd has INVOCATION_ID too: only PID 1 as the
    parent makes the agent a system service."""
    monkeypatch.setenv("INVOCATION_ID", "0123456789abcdef0123456789abcdef")
    monkeypatch.setattr(agent.os, "getppid", lambda: 1)
    assert agent.under_systemd()
    monkeypatch.setattr(agent.os, "getppid", lambda: 4242)
    assert not agent.under_systemd()
    monkeypatch.setattr(agent.os, "getppid", lambda: 1)
    monkeypatch.delenv("INVOCATION_ID")
    assert not agent.under_systemd()
