"""A server with an agent backend as the agent tests set it up: its config, the server, its token
and the agents and proxies a test starts (``Setup``), and claiming a run as a hand-written agent would."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest
import requests

from tests.harness.agents import AgentProcess, Proxy, register
from tests.harness.servers import ServerProcess


def agent_config(**lab: Any) -> Dict[str, Any]:
    backend: Dict[str, Any] = {"type": "agent", "description": "lab workstation"}
    backend.update(lab)
    return {"model_training": {
        "enabled": True,
        "grace_seconds": 2,
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
        "backends": {"lab": backend},
    }}


class Setup:
    def __init__(self, config_path: Path, server: ServerProcess, token: str, register_output: str) -> None:
        self.config_path = config_path
        self.server = server
        self.token = token
        self.register_output = register_output
        self.agents: list[AgentProcess] = []
        self.proxies: list[Proxy] = []

    @property
    def root(self) -> Path:
        return self.config_path.parent

    def agent(self, *extra: str, url: str | None = None, name: str = "agent", token: str | None = None) -> AgentProcess:
        proc = AgentProcess(url or self.server.url, "lab", token or self.token, self.root / name, *extra)
        self.agents.append(proc)
        return proc

    def proxy(self) -> Proxy:
        proxy = Proxy(self.server.port)
        self.proxies.append(proxy)
        return proxy

    def run_dir(self, run_id: str) -> Path:
        return self.root / "annotation_output" / "training" / "runs" / run_id

    def close(self) -> None:
        for agent in self.agents:
            agent.stop()
        for proxy in self.proxies:
            proxy.close()
        self.server.stop()


def _claim(s: Setup) -> tuple[str, str]:
    """Claim the next queued run as a hand-written agent would: (run id, run token)."""
    r = requests.post(f"{s.server.url}/training/agent/v1/jobs/next",
                      json={"backend": "lab", "agent": {"id": "test", "host": "testhost"}, "wait_s": 5},
                      headers={"Authorization": f"Bearer {s.token}"})
    assert r.status_code == 200, r.text
    return r.json()["run_id"], r.json()["run_token"]


@pytest.fixture
def make_setup(make_project: Callable[..., Path]) -> Iterator[Callable[..., Setup]]:
    made: list[Setup] = []

    def _make(n_items: int = 40, **lab: Any) -> Setup:
        config_path = make_project(n_items, **agent_config(**lab))
        output, token = register(config_path, "lab")
        setup = Setup(config_path, ServerProcess(config_path).start(), token, output)
        made.append(setup)
        return setup

    yield _make
    for setup in made:
        setup.close()
