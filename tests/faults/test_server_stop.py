"""Stopping the server while gunicorn boots a worker (a restart right after a start, or right after a
worker died and the master replaced it): the worker must stop with the rest, not serve on until the
master's graceful timeout kills it. Found as a CI flake: the systemd unit's test waited the unit's
30 s stop time and the server was still there."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from potato.server.serving.gunicorn_app import GRACEFUL_TIMEOUT_S
from tests.faults.matrix import fault
from tests.harness.servers import free_port
from tests.harness.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "helm-less-manifests" / "systemd" / "potato-server.service"
COMPOSE = ROOT / "helm-less-manifests" / "compose.yaml"

BOOT_S = 3
"""How long each worker takes between its fork and its own signal handlers (a post_fork hook sleeps)."""

GRACE_S = 120
"""The master's graceful timeout in this test: a worker that missed the SIGTERM holds the stop this long."""


@fault("Annotators and the server", "The server is stopped (SIGTERM) while gunicorn is still booting a worker",
       "The booting worker takes the stop once its own handlers are in place and exits with the others",
       "The server stops well within systemd's stop time")
def test_a_sigterm_while_workers_boot_stops_them_all(tmp_path: Path) -> None:
    port = free_port()
    script = tmp_path / "serve.py"
    script.write_text(textwrap.dedent(f"""
        import time
        from flask import Flask
        from potato.server.serving.gunicorn_app import GunicornApp
        from potato.server.serving.gunicorn_worker import worker_class

        app = Flask("stop-test")
        app.add_url_rule("/", "root", lambda: "ok")
        GunicornApp(app, {{"bind": "127.0.0.1:{port}", "workers": 2, "threads": 2, "worker_class": worker_class(),
                          "graceful_timeout": {GRACE_S}, "errorlog": "-", "loglevel": "info",
                          "control_socket_disable": True,
                          "post_fork": lambda arbiter, worker: time.sleep({BOOT_S})}}).run()
    """))
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_until(lambda: len(re.findall(r"Booting worker with pid: \d+", log_path.read_text())) == 2
                   or proc.poll() is not None, timeout=60, what="both workers' boot")
        booting = re.findall(r"Booting worker with pid: (\d+)", log_path.read_text())
        os.kill(proc.pid, signal.SIGTERM)  # both workers are inside their post_fork sleep now
        try:
            code = proc.wait(GRACE_S // 2)
        except subprocess.TimeoutExpired:
            pytest.fail("a worker booting at the SIGTERM served on until the graceful timeout:\n"
                        + log_path.read_text())
        assert code == 0, log_path.read_text()
        exited = re.findall(r"Worker exiting \(pid: (\d+)\)", log_path.read_text())
        assert sorted(exited) == sorted(booting), log_path.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_server_ends_its_workers_before_systemd_or_docker_would() -> None:
    """The master's graceful timeout is under the stop time the unit and the compose file give: past
    it systemd and Docker kill every process at once, and the master cannot say which worker hung."""
    unit_stop = int(re.search(r"^TimeoutStopSec=(\d+)$", UNIT.read_text(), re.M).group(1))
    compose_stop = re.search(r"server:.*?stop_grace_period: (\d+)s", COMPOSE.read_text(), re.S)
    assert compose_stop is not None, "compose.yaml's server gives no stop_grace_period (Docker's default is 10 s)"
    assert GRACEFUL_TIMEOUT_S < min(unit_stop, int(compose_stop.group(1)))
