"""kill -9 of gunicorn's master alone (issue 33 item 3): its workers lived on as orphans, holding the
listening socket for gunicorn's graceful timeout (about 25 s), so `potato start` and a service
manager's restart failed with "Port ... is in use" meanwhile. A worker whose master died now closes
its listening socket at once (the port is free), finishes the requests it has in flight and exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Callable

import pytest
import requests

from potato.server.serving.ports import port_problem
from tests.harness import procs
from tests.harness.annotators import Annotators
from tests.conftest import ADMIN_KEY
from tests.faults.matrix import fault
from tests.harness.waiting import wait_until
from tests.harness.runs import TERMINAL, label_all, start, training_config, wait
from tests.harness.servers import ServerProcess, free_port

pytestmark = pytest.mark.integration
H = {"X-API-Key": ADMIN_KEY}

PORT_FREE_S = 10.0
"""A generous deadline for the port to be free after the master's death (it is free in well under a
second; before, the orphaned workers held it for gunicorn's 25 s graceful timeout)."""
ORPHANS_GONE_S = 20.0
"""...and for the orphaned workers to have finished what they had in flight and exited."""


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def server_workers(srv: ServerProcess) -> list[int]:
    """gunicorn's worker processes: the master's children that are not a training run's processes."""
    assert srv.proc is not None
    return [pid for pid in procs.descendants(srv.proc.pid) if pid != srv.proc.pid
            and b"potato.training" not in b" ".join(procs.cmdline(pid))]


@fault("Annotators and the server",
       "kill -9 of gunicorn's master alone (its workers live on) while annotators label and a local run trains",
       "Each worker sees at once that its master died: it closes its listening socket, so the port is free, "
       "answers the requests it has in flight and exits; `potato start` on the same port succeeds and its "
       "dispatcher takes the run up",
       "A save cut off fails and is sent again; the server answers again within seconds; the run succeeds")
def test_kill_9_of_the_master_frees_the_port_at_once_and_loses_no_acknowledged_label(
        make_project: Callable[..., Path]) -> None:
    config_path = make_project(n_items=400, **training_config())
    srv = ServerProcess(config_path).start()
    again: ServerProcess | None = None
    orphans = server_workers(srv)
    annotators = Annotators(srv.url, 8)
    try:
        label_all(srv, 10)
        run = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 8})
        wait(srv, run["id"], {"running"})
        annotators.start()
        time.sleep(2)
        assert srv.proc is not None
        os.kill(srv.proc.pid, signal.SIGKILL)  # the master alone: its workers are not signalled
        srv.proc.wait(10)
        killed_at = time.monotonic()
        wait_until(lambda: port_problem("127.0.0.1", srv.port) is None, timeout=PORT_FREE_S,
                   what=f"the orphaned workers to free the port:\n{port_problem('127.0.0.1', srv.port)}")
        freed_s = time.monotonic() - killed_at
        again = ServerProcess(config_path, port=srv.port).start()
        wait_until(lambda: not any(alive(pid) for pid in orphans), timeout=ORPHANS_GONE_S,
                   what="the orphaned workers to exit")
        assert annotators.stalled() == []  # each annotator labels on, now through the restarted server
        annotators.stop()
        print(f"port free {freed_s:.2f} s after the master's death")
        assert annotators.lost() == {}
        done = wait(again, run["id"], TERMINAL, timeout=60)
        assert done["state"] == "succeeded", f"{done}\n{again.output()[-3000:]}"
        log = srv.output()
        assert "master" in log and "stops taking connections" in log, log[-3000:]
    finally:
        annotators.stop()
        for pid in orphans:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if again is not None:
            again.stop()
        srv.stop()


SLOW_APP = """
import time
from flask import Flask
import potato.server.serving.gunicorn_worker as gw
from potato.server.serving.gunicorn_app import GunicornApp

if {no_prctl}:
    gw.request_parent_death_signal = lambda sig: False  # as on a system without prctl: the ppid check

app = Flask("orphan-test")
app.add_url_rule("/", "root", lambda: "ok")
app.add_url_rule("/slow", "slow", lambda: time.sleep(5) or "done")
GunicornApp(app, {{"bind": "127.0.0.1:{port}", "workers": 2, "threads": 4, "worker_class": gw.worker_class(),
                  "graceful_timeout": 25, "errorlog": "-", "loglevel": "info",
                  "control_socket_disable": True}}).run()
"""


@pytest.mark.parametrize("no_prctl", [False, True], ids=["parent-death-signal", "ppid-check"])
def test_orphaned_workers_free_the_port_at_once_and_answer_what_they_have_in_flight(
        tmp_path: Path, no_prctl: bool) -> None:
    """issue 33 item 3: the worker notices its master's death by the kernel's parent-death signal
    (Linux), else by gunicorn's once-a-second look at its parent; either way the port is free in a
    few seconds and a request in flight still gets its answer."""
    port = free_port()
    script = tmp_path / "serve.py"
    script.write_text(textwrap.dedent(SLOW_APP.format(port=port, no_prctl=no_prctl)))
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    workers: list[int] = []
    try:
        def answers() -> bool:
            try:
                return requests.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200
            except requests.RequestException:
                return proc.poll() is not None
        wait_until(answers, timeout=30, what="the test server")
        wait_until(lambda: len(procs.descendants(proc.pid)) == 3, timeout=30, what="both workers")
        workers = [pid for pid in procs.descendants(proc.pid) if pid != proc.pid]
        slow: list[requests.Response] = []
        client = threading.Thread(target=lambda: slow.append(requests.get(f"http://127.0.0.1:{port}/slow",
                                                                          timeout=30)))
        client.start()
        time.sleep(0.5)  # the request is in a worker's thread now
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        wait_until(lambda: port_problem("127.0.0.1", port) is None, timeout=PORT_FREE_S,
                   what="the orphaned workers to free the port")
        assert not slow, "the port was freed only once the request in flight was answered"
        client.join(30)
        assert [r.status_code for r in slow] == [200] and slow[0].text == "done", log_path.read_text()
        wait_until(lambda: not any(alive(pid) for pid in workers), timeout=ORPHANS_GONE_S,
                   what=f"the orphaned workers to exit:\n{log_path.read_text()}")
    finally:
        for pid in [proc.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
