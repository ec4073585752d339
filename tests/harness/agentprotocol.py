"""The agent protocol by hand, as another person's agent (or a broken one) would talk it, for the fault
tests of what an agent sends: a run claimed by hand (``claimed``), its reports and uploads, a run driven
to its end that way (``run_to_the_end``), and the run and its events as the admin API shows them."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterator

import pytest
import requests

from tests.harness.agentsetup import Setup, _claim
from tests.harness.runs import H, label_all, start

V1 = "/training/agent/v1"
SUCCEEDED = {"exit_code": 0, "result": {"status": "succeeded", "metrics": {"holdout_accuracy": 0.8}}, "log": []}


def post(s: Setup, token: str, path: str, body: bytes | Dict[str, Any]) -> requests.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(f"{s.server.url}{V1}{path}", data=data, timeout=30,
                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})


def events_of(s: Setup, run_id: str) -> list:
    return requests.get(f"{s.server.url}/admin/training/api/runs/{run_id}/events", headers=H).json()["events"]


def run_of(s: Setup, run_id: str) -> Dict[str, Any]:
    return requests.get(f"{s.server.url}/admin/training/api/runs/{run_id}", headers=H).json()


@pytest.fixture
def claimed(make_setup: Callable[..., Setup]) -> Iterator[tuple[Setup, str, str]]:  # noqa: F811
    s = make_setup()
    label_all(s.server, 20)
    start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    run_id, token = _claim(s)
    yield s, run_id, token


def predictions(n: int, label: str = "positive") -> bytes:
    return "".join(json.dumps({"item_id": f"r{i:03d}", "schema": "sentiment", "label": label, "confidence": 0.9})
                   + "\n" for i in range(n)).encode()


def put(s: Setup, token: str, run_id: str, body: bytes) -> requests.Response:
    return requests.put(f"{s.server.url}{V1}/runs/{run_id}/predictions", data=body, timeout=30,
                        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"})


def run_to_the_end(s: Setup, upload: bytes | None) -> str:
    """One run of the agent backend, driven by hand: claimed, its predictions uploaded (``None``: no
    upload), reported succeeded; its id."""
    start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    run_id, token = _claim(s)
    if upload is not None:
        assert put(s, token, run_id, upload).status_code == 200
    assert post(s, token, f"/runs/{run_id}/result", SUCCEEDED).json()["state"] == "succeeded"
    return run_id
