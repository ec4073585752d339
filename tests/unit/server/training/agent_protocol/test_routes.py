"""The agent protocol's token check comes before anything about the config (issue 42 item 11): a
``jobs/next`` naming a backend that does not exist was a ``400 unknown_backend`` before its token
was looked at, while one naming a real backend was a ``401``, so a caller with no token at all could
tell which backend names the server has."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.config import load_config
from potato.server.training.runs.tokens import BackendTokens

BACKENDS = {"lab": {"type": "agent"}, "spare": {"type": "agent"}, "gpu": {"type": "ssh", "host": "gpu.example.org"}}


@pytest.fixture
def agent_app(make_project: Callable[..., Path]) -> Iterator[Any]:
    from potato.server import close_app, create_app

    config = load_config(make_project(model_training={"enabled": True, "backends": BACKENDS}))
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    yield application
    close_app(application)


def _ask(app: Any, route: str, token: str, backend: object) -> tuple[int, dict[str, Any]]:
    r = app.test_client().post(f"/training/agent/v1/{route}", headers={"Authorization": f"Bearer {token}"},
                               json={"backend": backend, "wait_s": 0})
    return r.status_code, r.get_json()


@pytest.mark.parametrize("route", ["jobs/next", "agents/leave"])
def test_a_caller_without_a_token_of_this_server_learns_no_backend_names(agent_app: Any, route: str) -> None:
    BackendTokens(agent_app.extensions["potato"].db).issue("lab")
    answers = {name: _ask(agent_app, route, "not-a-token-of-this-server", name)
               for name in ("lab", "spare", "gpu", "lab-workstation", None)}
    assert {status for status, _ in answers.values()} == {401}
    assert {body["code"] for _, body in answers.values()} == {"token_unknown"}
    # The message says what the caller sent back to it, the same way whether that backend exists or not.
    for name, (_, body) in answers.items():
        text = body["error"]
        assert "spare" not in text or name == "spare"
        assert "Agent backends" not in text and "not an agent backend" not in text
    assert answers["lab-workstation"][1]["error"].replace("lab-workstation", "X") == \
        answers["spare"][1]["error"].replace("spare", "X")


def test_a_replaced_token_is_told_so_and_a_current_one_learns_the_names(agent_app: Any) -> None:
    tokens = BackendTokens(agent_app.extensions["potato"].db)
    old = tokens.issue("lab")
    token = tokens.issue("lab")
    status, body = _ask(agent_app, "jobs/next", old, "lab")
    assert status == 401 and body["code"] == "token_replaced"
    status, body = _ask(agent_app, "jobs/next", old, "nope")  # an old token names nothing either
    assert status == 401 and body["code"] == "token_unknown"
    status, body = _ask(agent_app, "jobs/next", token, "lab-workstation")
    assert status == 400 and body["code"] == "unknown_backend"
    assert body["error"].endswith("This token is for backend 'lab': start the agent with --backend lab. "
                                  "Agent backends: lab, spare.")
    status, body = _ask(agent_app, "jobs/next", token, "spare")  # another backend's name: not this token's
    assert status == 401 and body["code"] == "token_unknown"
    status, _ = _ask(agent_app, "jobs/next", token, "lab")
    assert status == 204
