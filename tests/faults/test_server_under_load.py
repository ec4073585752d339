"""The server under load and violence (issue 20): gunicorn's workers killed while 50 annotators label,
and 20 runs started at once from 5 clients. Under gunicorn, as users meet it."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import requests

from tests.harness import procs
from tests.harness.annotators import Annotators
from tests.conftest import ADMIN_KEY
from tests.faults.matrix import fault
from tests.harness.runs import TERMINAL, label_all, training_config, wait
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]
H = {"X-API-Key": ADMIN_KEY}


def gunicorn_workers(srv: ServerProcess) -> list[int]:
    """The server's worker processes: the children of gunicorn's master (the server's own process)."""
    assert srv.proc is not None
    return [pid for pid in procs.descendants(srv.proc.pid) if pid != srv.proc.pid
            and b"potato.training" not in b" ".join(procs.cmdline(pid))]


@fault("Annotators and the server", "kill -9 of gunicorn's worker processes, again and again, while 50 annotators label",
       "The master starts new workers; annotators whose request was cut send it again",
       "A failed save (the page says so and keeps the pick); every label that got its answer is stored")
def test_killing_workers_under_fifty_annotators_loses_no_acknowledged_label(
        make_project: Callable[..., Path]) -> None:
    srv = ServerProcess(make_project(n_items=400)).start()
    annotators = Annotators(srv.url, 50)
    try:
        annotators.start()
        time.sleep(2)
        for _ in range(5):
            for pid in gunicorn_workers(srv):
                os.kill(pid, signal.SIGKILL)
            time.sleep(1.5)
        assert annotators.total() > 0
        # The master's new workers serve again: each annotator gets a label acknowledged after the last kill.
        assert annotators.stalled() == []
        annotators.stop()
        assert annotators.lost() == {}
    finally:
        annotators.stop()
        srv.stop()


@fault("Runs and their processes", "20 runs started at the same moment from 5 clients",
       "All are queued and run one after another, never two at once", "Each run's start and end times")
def test_twenty_runs_started_at_once_from_five_clients_run_one_at_a_time(
        make_project: Callable[..., Path]) -> None:
    srv = ServerProcess(make_project(**training_config())).start()
    try:
        label_all(srv, 20)
        barrier = threading.Barrier(5)
        started: list[dict[str, Any]] = []
        lock = threading.Lock()

        def client() -> None:
            session = requests.Session()
            barrier.wait()
            for _ in range(4):
                r = session.post(srv.url + "/admin/training/api/runs", headers=H, timeout=30,
                                 json={"trainer": "noop", "schemas": ["sentiment"], "params": {"sleep_s": 0.2}})
                assert r.status_code == 201, r.text
                with lock:
                    started.append(r.json())

        clients = [threading.Thread(target=client) for _ in range(5)]
        for c in clients:
            c.start()
        for c in clients:
            c.join(timeout=60)
        assert len(started) == 20
        runs = [wait(srv, run["id"], TERMINAL, timeout=300) for run in started]
        assert [r["state"] for r in runs] == ["succeeded"] * 20, [(r["id"], r["state"], r["message"]) for r in runs]
        spans = sorted((r["started_at"], r["finished_at"]) for r in runs)
        for (_, end), (begin, _) in zip(spans, spans[1:]):
            assert begin >= end, spans  # the next one started only after the previous one ended
    finally:
        srv.stop()
