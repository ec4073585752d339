"""Training runs as the tests drive them through the admin API: a training config, gold labels,
starting a run and waiting for it to reach a state."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY, truth
from tests.harness.servers import ServerProcess

H = {"X-API-Key": ADMIN_KEY}
TERMINAL = {"succeeded", "failed", "cancelled"}


def training_config(**mt: Any) -> Dict[str, Any]:
    block: Dict[str, Any] = {
        "enabled": True,
        "grace_seconds": 2,
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
    }
    block.update(mt)
    return {"model_training": block}


def label_all(srv: ServerProcess, n: int = 40) -> None:
    labels = [{"id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}")} for i in range(n)]
    r = requests.post(srv.url + "/admin/api/labels", json={"user": "gold", "labels": labels}, headers=H)
    assert r.status_code == 200, r.text


def start(srv: ServerProcess, **body: Any) -> Dict[str, Any]:
    r = requests.post(srv.url + "/admin/training/api/runs", json=body, headers=H)
    assert r.status_code == 201, r.text
    return r.json()


def wait(srv: ServerProcess, run_id: str, states: set, timeout: float = 120) -> Dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        run = requests.get(f"{srv.url}/admin/training/api/runs/{run_id}", headers=H).json()
        if run["state"] in states:
            return run
        if time.monotonic() > deadline:
            raise AssertionError(f"run stuck in {run['state']}: {run}\n{srv.output()[-3000:]}")
        time.sleep(0.2)


def succeeded(srv: ServerProcess, timeout: float = 180, **body: Any) -> Dict[str, Any]:
    """A run started with ``body`` (trainer, schemas, backend, params), once it succeeded (the server's
    output in the message when it did not)."""
    run = start(srv, **body)
    done = wait(srv, run["id"], TERMINAL, timeout=timeout)
    assert done["state"] == "succeeded", (done, srv.output()[-3000:])
    return done


def log_of(srv: ServerProcess, run_id: str) -> str:
    return requests.get(f"{srv.url}/admin/training/api/runs/{run_id}/log", headers=H).text


def run_dir(srv: ServerProcess, run_id: str) -> Path:
    return srv.config_path.parent / "annotation_output" / "training" / "runs" / run_id


@pytest.fixture
def make_server(make_project: Callable[..., Path]) -> Iterator[Callable[..., ServerProcess]]:
    """A gunicorn server on a new project with 20 labels; stopped after the test."""
    servers: list[ServerProcess] = []

    def _make(config: Dict[str, Any]) -> ServerProcess:
        srv = ServerProcess(make_project(**config)).start()
        servers.append(srv)
        label_all(srv, 20)
        return srv

    yield _make
    for srv in servers:
        srv.stop()
