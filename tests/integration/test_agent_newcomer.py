"""A newcomer's first agent and local runs against a live server (issue 21): the check and a queued
run say when no agent polls for the backend (R34, R35, E10) and how to start one, an agent started
with a wrong --backend learns the right names, and a local run on a Python without a trainer's
packages names all of them with the extra that brings them (E4)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
import requests

from potato.training.agent.startup import EXIT_TOKEN
from tests.harness.agents import AgentProcess, register
from tests.conftest import ADMIN_KEY
from tests.harness.runs import TERMINAL, label_all, start, training_config, wait
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration
H = {"X-API-Key": ADMIN_KEY}


@pytest.fixture
def cleanup() -> Iterator[List[Any]]:
    """Servers and agents a test started: stopped at its end, whatever happened."""
    started: List[Any] = []
    yield started
    for thing in reversed(started):
        thing.stop()


def agent_server(make_project: Callable[..., Path], cleanup: List[Any], **backends: Dict[str, Any]) -> tuple[ServerProcess, str]:
    config_path = make_project(**training_config(backends=backends or {"lab": {"type": "agent"}}))
    _, token = register(config_path, "lab")
    srv = ServerProcess(config_path).start()
    cleanup.append(srv)
    return srv, token


def check(srv: ServerProcess, backend: str = "lab") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "potato", "training", "check", backend, str(srv.config_path)],
                          capture_output=True, text=True, timeout=60)


def check_button(srv: ServerProcess, backend: str = "lab") -> Dict[str, Any]:
    """What the page's Check button shows (the same report as the command)."""
    report: Dict[str, Any] = requests.post(f"{srv.url}/admin/training/api/backends/{backend}/check", headers=H,
                                           timeout=60).json()
    return report


def get_run(srv: ServerProcess, run_id: str) -> Dict[str, Any]:
    run: Dict[str, Any] = requests.get(f"{srv.url}/admin/training/api/runs/{run_id}", headers=H, timeout=30).json()
    return run


def listed(srv: ServerProcess, run_id: str) -> Dict[str, Any]:
    runs = requests.get(f"{srv.url}/admin/training/api/runs", headers=H, timeout=30).json()["runs"]
    return next(run for run in runs if run["id"] == run_id)


def connected(srv: ServerProcess) -> bool:
    agents = requests.get(f"{srv.url}/admin/training/api/agents", headers=H, timeout=30).json()["agents"]
    return bool(next(a for a in agents if a["backend"] == "lab")["connected"])


def until(check_: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check_():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_check_and_a_queued_run_say_no_agent_polls_until_one_does(make_project: Callable[..., Path],
                                                                   cleanup: List[Any], tmp_path: Path) -> None:
    """How it was found: the check was green (exit 0) while the Agents table said "not connected", and
    a run queued for that backend said only "waiting in the queue", like one behind another run (E10)."""
    srv, token = agent_server(make_project, cleanup)
    label_all(srv, 10)
    no_agent = ("no agent polls for backend 'lab' (none has connected with its token yet): start one on the training "
                "machine with the backend's token in POTATO_TRAINING_TOKEN: "
                f"`potato training agent --server {srv.url} --backend lab` (a lost token: "
                "`potato training register lab config.yaml` issues a new one)")
    first = start(srv, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 30})
    assert first["step"] == no_agent
    assert get_run(srv, first["id"])["step"] == no_agent and listed(srv, first["id"])["step"] == no_agent
    before = check(srv)
    assert not connected(srv)
    assert before.returncode == 1, before.stdout + before.stderr
    assert before.stdout.splitlines()[1:] == ["last_seen: never (no agent has connected with this token yet)", no_agent]
    button = check_button(srv)
    assert button["ok"] is False and button["lines"][-1] == no_agent

    agent = AgentProcess(srv.url, "lab", token, tmp_path / "agent")
    cleanup.append(agent)
    running = wait(srv, first["id"], {"running"} | TERMINAL)
    assert running["state"] == "running" and "no agent polls" not in running["step"]
    second = start(srv, trainer="noop", schemas=["sentiment"], backend="lab")
    behind = f"waiting in the queue behind run {first['id']} (lab)"
    assert get_run(srv, second["id"])["step"] == behind and listed(srv, second["id"])["step"] == behind
    until(lambda: connected(srv), "the Agents table to say connected")
    after = check(srv)
    assert after.returncode == 0, after.stdout + after.stderr
    assert after.stdout.splitlines()[1].startswith("last_seen: ") and "no agent polls" not in after.stdout
    assert f"The agent is running run {first['id']}." in after.stdout.splitlines()
    assert check_button(srv)["ok"] is True

    requests.post(f"{srv.url}/admin/training/api/runs/{first['id']}/cancel", headers=H, timeout=30)
    assert wait(srv, second["id"], TERMINAL)["state"] == "succeeded"


def test_an_agent_with_a_wrong_backend_name_learns_the_agent_backends(make_project: Callable[..., Path],
                                                                      cleanup: List[Any], tmp_path: Path) -> None:
    """--backend lab-workstation for a backend named lab: the agent printed that the name was wrong, not
    which are right. A caller whose token is none of the server's learns no names, nor whether the name
    it sent is one (its token is checked first, issue 42)."""
    srv, token = agent_server(make_project, cleanup, lab={"type": "agent"}, spare={"type": "agent"},
                              gpu={"type": "ssh", "host": "gpu.example.org"})
    wrong = AgentProcess(srv.url, "lab-workstation", token, tmp_path / "wrong")
    cleanup.append(wrong)
    assert wrong.wait_exit(60) == 1
    assert ("error: the server refused this agent: Backend 'lab-workstation' is not an agent backend in this server's "
            "config; --backend must be the name of a type: agent backend under model_training.backends. This token "
            "is for backend 'lab': start the agent with --backend lab. Agent backends: lab, spare.") in wrong.output()
    stranger = AgentProcess(srv.url, "lab-workstation", "not-a-token-of-this-server", tmp_path / "stranger")
    cleanup.append(stranger)
    assert stranger.wait_exit(60) == EXIT_TOKEN  # a token the server does not know, as for a real backend
    assert "does not know this token for backend 'lab-workstation'" in stranger.output()
    assert "not an agent backend" not in stranger.output() and "Agent backends" not in stranger.output()
    assert "spare" not in stranger.output()


def test_a_local_run_without_a_trainers_packages_names_them_all_with_the_extra(
        make_project: Callable[..., Path], cleanup: List[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """How it was found: after a setup without the train-text extra, hf-text-classification failed with
    "install torch", though transformers and peft were missing too (E4). The server's Python here lacks
    the three (a sitecustomize hides them, and PYTHONPATH reaches the local run's worker). A person's
    start is refused with them named; an automatic run, which no one answers, runs and fails so."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\nfor name in ('torch', 'transformers', 'peft'):\n    sys.modules[name] = None\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(hide), *filter(None, [os.environ.get("PYTHONPATH")])]))
    srv = ServerProcess(make_project(**training_config(auto_retrain={
        "enabled": True, "every_n_labels": 20, "trainer": "hf-text-classification", "schemas": ["sentiment"]}))).start()
    cleanup.append(srv)
    refused = requests.post(srv.url + "/admin/training/api/runs", headers=H, json={
        "trainer": "hf-text-classification", "schemas": ["sentiment"], "backend": "local"})
    assert refused.status_code == 409 and refused.json()["error"] == (
        f"Trainer 'hf-text-classification' could not be imported on this machine: {sys.executable} lacks torch, "
        f"transformers, peft (`{sys.executable} -m pip install 'potato-annotation[train-text]'`)")
    label_all(srv, 20)  # the automatic run's 20 labels
    runs = requests.get(srv.url + "/admin/training/api/runs", headers=H).json()["runs"]
    assert [(r["trigger"], r["trainer"]) for r in runs] == [("auto", "hf-text-classification")]
    done = wait(srv, runs[0]["id"], TERMINAL)
    assert (done["state"], done["reason"]) == ("failed", "import")
    assert done["message"] == (
        "Trainer 'hf-text-classification' could not be imported: no module named 'torch' (transformers, peft are "
        "missing too); install them in the interpreter that runs the worker "
        f"({sys.executable} -m pip install 'potato-annotation[train-text]')")
