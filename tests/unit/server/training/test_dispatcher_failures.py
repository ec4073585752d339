"""A dispatcher that cannot write (a full disk) backs off and says so once, not every 0.1 s with
two tracebacks each (30 KB/s of log were seen)."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from typing import Any

import pytest

from potato.defaults import HEARTBEAT_TIMEOUT_S
from potato.server.training.dispatcher import Dispatcher, failure_pause
from potato.server.training.runs.store import RunState
from tests.faults.matrix import fault


def test_the_pause_grows_to_half_a_minute() -> None:
    assert [failure_pause(n) for n in (1, 2, 3)] == [0.2, 0.4, 0.8] and failure_pause(50) == 30.0


def test_a_full_disk_is_logged_once_per_streak_and_recovery_once(app: Any, caplog: pytest.LogCaptureFixture) -> None:
    dispatcher: Dispatcher = app.extensions["potato.dispatcher"]
    failing = [True]

    def run_next() -> bool:
        if failing[0]:
            raise sqlite3.OperationalError("database or disk is full")
        return False

    dispatcher.run_next = run_next  # type: ignore[method-assign]
    dispatcher.watch = lambda: None  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger="potato.server.training.dispatcher"):
        dispatcher.ensure_started()
        time.sleep(1.6)
        failing[0] = False
        time.sleep(1.5)
        dispatcher.stop()
    messages = [r.getMessage() for r in caplog.records if r.name == "potato.server.training.dispatcher"]
    full = [m for m in messages if "disk is full" in m]
    assert len(full) == 1 and "runs wait until there is space" in full[0]
    assert not any(r.exc_info for r in caplog.records)  # no traceback for a full disk
    assert len([m for m in messages if m.startswith("dispatcher: working again after")]) == 1


@fault("Runs and their processes", "The local backend's agent hangs (SIGSTOP) while its worker trains",
       "After heartbeat_timeout_s (120 s) the run fails and the server ends the hung agent, so its worker stops with it (the lifeline) instead of training beside the next run",
       "'No word from the agent on local for 120 seconds' and 'Ended the silent local agent' in run.log")
def test_a_hung_local_agent_is_ended_when_its_run_fails_for_silence(app: Any) -> None:
    dispatcher: Dispatcher = app.extensions["potato.dispatcher"]
    store = dispatcher.store
    run = store.create("noop", ["sentiment"], "local", {})
    # A stand-in for the local agent: a real process whose command line names the agent and the run, as
    # the server checks before it signals anything.
    agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "potato.training.agent", run.id],
                             start_new_session=True)
    try:
        os.kill(agent.pid, signal.SIGSTOP)
        store.move(run.id, RunState.PREPARING)
        store.move(run.id, RunState.RUNNING)
        store.update(run.id, agent_pid=agent.pid, last_seen=time.time())
        dispatcher.watch(now=time.time() + HEARTBEAT_TIMEOUT_S + 5)
        assert agent.wait(timeout=10) == -signal.SIGKILL
        done = store.get(run.id)
        assert done is not None and done.state is RunState.FAILED and done.reason == "agent_lost"
        log = (store.run_dir(run.id) / "run.log").read_text()
        assert "No word from the agent on local for 120 seconds" in log
        assert f"Ended the silent local agent (pid {agent.pid}); its worker stops with it." in log
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
