"""What a newcomer meets first on the agent and local backends (issue 21): a check that is green only
when a run could start (R12, R34, E4, E10), run failures that name every missing package at once, and
agent messages that fit where the agent runs (R33)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from potato.config import load_config
from potato.config.schema import AgentBackendSettings, Config, LocalBackendSettings
from potato.db import Database
from potato.server.training.backends.agent import agent_entries, check_agent, explain_queued
from potato.server.training.backends.local import check_local
from potato.server.training.runs.store import RunState, RunStore
from potato.server.training.runs.tokens import BackendTokens
from potato.training import agentsetup as agent
from tests.unit.training.jobdirs import review_job, run_worker
from tests.unit.training.test_worker import assert_failed

HF_PACKAGES = ("torch", "transformers", "peft")


def hide_modules(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """As if ``names`` were not installed: ``import`` fails and ``find_spec`` finds nothing."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


def hiding_path(tmp_path: Path, *names: str) -> Path:
    """A folder whose sitecustomize hides ``names`` in every Python started with it on PYTHONPATH."""
    folder = tmp_path / "hide"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in names), encoding="utf-8")
    return folder


def agent_project(make_project: Callable[..., Path], **lab: Any) -> Config:
    backend: dict[str, Any] = {"type": "agent"}
    backend.update(lab)
    return load_config(make_project(model_training={"enabled": True, "backends": {"lab": backend}}))


# -- check local: trainers this Python cannot import (issue 21, E4) -----------------------------------

def test_check_local_names_every_missing_package_of_a_trainer_with_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain setup has no torch, transformers, peft: the check names all three, once, and the one pip
    command (Potato's extra) that brings them; still ok while the default trainer imports."""
    hide_modules(monkeypatch, *HF_PACKAGES)
    report = check_local(LocalBackendSettings(), "sklearn-text-classification")
    python = sys.executable
    assert report.ok
    assert report.details["missing_packages"] == {"hf-text-classification": list(HF_PACKAGES),
                                                  "hf-llm-classification": list(HF_PACKAGES),
                                                  "llm-zero-shot": ["torch", "transformers"]}  # issue 34
    assert (f"Trainer 'hf-text-classification' could not be imported on this machine: {python} lacks torch, "
            f"transformers, peft (`{python} -m pip install 'potato-annotation[train-text]'`)") in report.lines
    assert not check_local(LocalBackendSettings(), "hf-text-classification").ok


def test_check_local_names_the_trainers_of_the_projects_kinds_of_scheme_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23: a span project hears about the span trainers' packages, a classification project
    (the default) about the classification trainers' only."""
    hide_modules(monkeypatch, *HF_PACKAGES)
    spans = check_local(LocalBackendSettings(), "sklearn-token-classification", {"span"})
    assert spans.ok and spans.details["missing_packages"] == {"hf-token-classification": list(HF_PACKAGES)}
    assert "hf-token-classification" not in check_local(LocalBackendSettings(), "sklearn-text-classification",
                                                        {"radio"}).details["missing_packages"]


def test_check_local_is_not_ok_when_the_default_trainer_cannot_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_modules(monkeypatch, "sklearn")
    report = check_local(LocalBackendSettings(), "sklearn-text-classification")
    assert not report.ok
    assert (f"Trainer 'sklearn-text-classification' could not be imported on this machine: {sys.executable} lacks "
            f"scikit-learn (`{sys.executable} -m pip install 'potato-annotation[train-sklearn]'`)") in report.lines


def test_training_check_local_on_the_command_line(make_project: Callable[..., Path], tmp_path: Path) -> None:
    """How it was found: `potato training check local` after a setup without the train-text extra said
    nothing of hf-text-classification. Exit 0 (the default trainer imports), 1 once it is the default."""
    import os

    hide = hiding_path(tmp_path, *HF_PACKAGES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), *filter(None, [os.environ.get("PYTHONPATH")])])}
    config_path = make_project(model_training={"enabled": True})
    cmd = [sys.executable, "-m", "potato", "training", "check", "local", str(config_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    line = (f"Trainer 'hf-text-classification' could not be imported on this machine: {sys.executable} lacks torch, "
            f"transformers, peft (`{sys.executable} -m pip install 'potato-annotation[train-text]'`)")
    assert line in out.stdout.splitlines(), out.stdout
    hf_default = make_project(model_training={"enabled": True, "trainer": "hf-text-classification"})
    out = subprocess.run(cmd[:-1] + [str(hf_default)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 1 and line in out.stdout.splitlines(), out.stdout + out.stderr


def test_a_run_failure_names_every_missing_package_and_the_extra(tmp_path: Path) -> None:
    """E4 on the server's own Python (a local run): not "install torch", then "install transformers" on
    the next run, but every package the trainer lacks and the extra that brings them (issue 21)."""
    hide = hiding_path(tmp_path, *HF_PACKAGES)
    job_dir = review_job(tmp_path / "job", "hf-text-classification", params={"base_model": "/nowhere"})
    assert run_worker(job_dir, extra_path=[str(hide)]).returncode == 3
    assert assert_failed(job_dir, 3, "import") == (
        "Trainer 'hf-text-classification' could not be imported: no module named 'torch' (transformers, peft are "
        "missing too); install them in the interpreter that runs the worker "
        f"({sys.executable} -m pip install 'potato-annotation[train-text]')")


# -- check on an agent backend: is an agent there (issue 21, R34, E10) --------------------------------

def test_check_agent_is_not_ok_while_no_agent_polls(make_project: Callable[..., Path]) -> None:
    """A token alone runs nothing: the check said ok while the Agents table said "not connected"."""
    config = agent_project(make_project)
    backend = config.model_training.all_backends()["lab"]
    assert isinstance(backend, AgentBackendSettings)
    tokens = BackendTokens(Database(config.database_path))
    tokens.issue("lab")
    report = check_agent(config, backend)
    assert not report.ok and report.details["polling"] is False
    assert report.lines[1] == "last_seen: never (no agent has connected with this token yet)"
    assert report.lines[-1] == (
        "no agent polls for backend 'lab' (none has connected with its token yet): start one on the training "
        "machine with the backend's token in POTATO_TRAINING_TOKEN: `potato training agent --server "
        "http://127.0.0.1:8000 --backend lab` (a lost token: `potato training register lab config.yaml` "
        "issues a new one)")

    now = time.time()
    tokens.seen("lab", {"host": "box"}, now=now)
    polled = check_agent(config, backend, now=now + 10)
    assert polled.ok and polled.lines[1].startswith("last_seen: ") and "(10 s ago)" in polled.lines[1]
    assert not any("no agent polls" in line for line in polled.lines)
    gone = check_agent(config, backend, now=now + backend.heartbeat_timeout_s + 1)
    assert not gone.ok
    assert gone.lines[-1].startswith(f"no agent polls for backend 'lab' (the last request came "
                                     f"{backend.heartbeat_timeout_s + 1} s ago): ")


def test_the_agents_table_and_the_check_agree(make_project: Callable[..., Path]) -> None:
    """The Check button said ok while the Agents table beside it said "not connected": both now follow one
    rule, at every age of the agent's last request (here the backend waits 120 s, the table's old 60 s)."""
    config = agent_project(make_project, heartbeat_timeout_s=120)
    backend = config.model_training.all_backends()["lab"]
    assert isinstance(backend, AgentBackendSettings)
    db = Database(config.database_path)
    tokens = BackendTokens(db)
    store = RunStore(db, config.training_dir / "runs")
    tokens.issue("lab")
    now = time.time()
    tokens.seen("lab", {"host": "box"}, now=now)
    for age in (0, 30, 59, 61, 90, 119, 121, 600):
        [row] = agent_entries(config, tokens, store, now=now + age)
        report = check_agent(config, backend, now=now + age)
        assert row["connected"] is report.ok, age
        assert row["connected"] is (age <= 120), age


def test_check_agent_counts_an_agent_busy_with_a_run_as_there(make_project: Callable[..., Path]) -> None:
    """An agent that runs a job reports on the run, not on jobs/next: it is there all the same."""
    config = agent_project(make_project, heartbeat_timeout_s=60)
    backend = config.model_training.all_backends()["lab"]
    assert isinstance(backend, AgentBackendSettings)
    db = Database(config.database_path)
    BackendTokens(db).issue("lab")
    BackendTokens(db).seen("lab", {"host": "box"}, now=time.time() - 3600)
    store = RunStore(db, config.training_dir / "runs")
    run = store.create("noop", ["sentiment"], "lab", {})
    assert store.claim("lab", "agent-1", "box") is not None
    report = check_agent(config, backend)
    assert report.ok and f"The agent is running run {run.id}." in report.lines


def test_queued_step_says_why_the_run_waits(make_project: Callable[..., Path]) -> None:
    """E10 at read time: no agent polls (with the command that starts one), then, with one there, the run
    it waits behind."""
    config = agent_project(make_project)
    db = Database(config.database_path)
    store = RunStore(db, config.training_dir / "runs")
    first = store.create("noop", ["sentiment"], "lab", {})
    explain_queued(config, store, [first])
    assert first.step == ("no agent polls for backend 'lab': no token issued yet; on the server run `potato training "
                          "register lab config.yaml`, then on the training machine the commands it prints")
    BackendTokens(db).issue("lab")
    BackendTokens(db).seen("lab", {"host": "box"})
    second = store.create("noop", ["sentiment"], "lab", {})
    explain_queued(config, store, [second])
    assert second.step == "waiting in the queue"
    store.claim("lab", "agent-1", "box")
    waiting = store.get(second.id)
    assert waiting is not None and waiting.state is RunState.QUEUED
    explain_queued(config, store, [waiting])
    assert waiting.step == f"waiting in the queue behind run {first.id} (lab)"


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
