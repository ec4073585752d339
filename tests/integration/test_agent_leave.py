"""A cleanly stopped agent tells the server it leaves (issue 33 item 11, R33, R34).

Before: after Ctrl-C, SIGTERM or ``systemctl stop`` the training page and the check still said
"connected" with a fresh ``last_seen``, and the next run on the backend waited 20 s: the stopped
agent's long poll was still open on the server, claimed the run for an agent that was gone, and the
run went back to the queue only when nobody fetched the job. Real agent processes against a real
server; the assertions are what an admin reads (the check, the Agents table, the run and its log).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any, Callable, Dict

import pytest
import requests

from tests.harness.agentsetup import Setup
from tests.harness.waiting import wait_until, worker_pids
from tests.harness.agentsetup import make_setup  # noqa: F401 (fixture)
from tests.harness.runs import H, TERMINAL, label_all, start, wait

pytestmark = pytest.mark.integration

UNCONFIRMED = "did not fetch it within"
"""What run.log says when a job went to an agent that never took it (the 20 s wait)."""


def lab_agent(s: Setup) -> Dict[str, Any]:
    agents = requests.get(f"{s.server.url}/admin/training/api/agents", headers=H, timeout=30).json()["agents"]
    entry: Dict[str, Any] = next(a for a in agents if a["backend"] == "lab")
    return entry


def check(s: Setup) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "potato", "training", "check", "lab", str(s.config_path)],
                          capture_output=True, text=True, timeout=60)


def run_log(s: Setup, run_id: str) -> str:
    return requests.get(f"{s.server.url}/admin/training/api/runs/{run_id}/log", headers=H, timeout=30).text


def test_a_stopped_agent_shows_as_left_and_the_next_run_does_not_wait_for_it(
        make_setup: Callable[..., Setup]) -> None:  # noqa: F811
    s = make_setup()
    label_all(s.server, 10)
    agent = s.agent()
    agent.wait_for("waiting for jobs on lab")
    wait_until(lambda: lab_agent(s)["connected"], what="the Agents table to say connected")

    agent.signal(signal.SIGTERM)  # as systemctl stop does, while its long poll is open on the server
    assert agent.wait_exit(30) == 130
    assert "told the server this agent stops" in agent.output()

    entry = lab_agent(s)
    assert entry["connected"] is False and entry["left_at"] is not None
    report = check(s)
    assert report.returncode == 1, report.stdout
    assert f"no agent polls for backend 'lab' (its agent on {entry['agent']['host']} left at " in report.stdout

    # The stopped agent's poll takes no run: the run waits queued, saying why, for the next agent.
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    assert run["state"] == "queued" and " left at " in run["step"], run
    successor = s.agent("--once", name="successor")
    done = wait(s.server, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "succeeded", done
    assert UNCONFIRMED not in run_log(s, run["id"])
    assert f"run {run['id']}: starting the worker" in successor.output()

    # --once: the successor leaves after its job, and says so.
    assert successor.wait_exit(30) == 0
    assert "told the server this agent stops" in successor.output()
    assert lab_agent(s)["connected"] is False


def test_sigterm_mid_run_reports_the_run_cancelled_then_leaves(make_setup: Callable[..., Setup]) -> None:  # noqa: F811
    s = make_setup()
    label_all(s.server, 10)
    agent = s.agent()
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 60})
    wait_until(lambda: bool(worker_pids(str(s.root))), what="the worker")
    agent.signal(signal.SIGTERM)
    assert agent.wait_exit(30) == 0
    done = wait(s.server, run["id"], TERMINAL, timeout=10)
    assert done["state"] == "cancelled" and "Stopped on the training machine" in done["message"]
    out = agent.output()
    assert out.index("reporting the result (cancelled)") < out.index("told the server this agent stops")
    entry = lab_agent(s)
    assert entry["connected"] is False and entry["left_at"] is not None and entry["run"] is None
