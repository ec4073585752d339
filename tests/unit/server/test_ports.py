"""A taken port is said before anything starts, with who holds it (it printed "Serving on ..." and then
gunicorn retried for five seconds)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from potato.server.serving.ports import port_holder, port_problem


def test_a_free_port_is_fine_and_a_taken_one_names_its_process() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    assert port_problem("127.0.0.1", free) is None
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        problem = port_problem("127.0.0.1", port)
        assert problem is not None and problem.startswith(f"Port {port} is in use by pid {os.getpid()} (")
        assert "start on a free port with -p, e.g. -p " in problem and problem.endswith(" (free now).")
        assert port_holder(port) is not None


def test_start_on_a_taken_port_says_so_and_starts_nothing(config_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "potato", "start", str(config_path), "-p", str(port)],
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and f"Error: Port {port} is in use by pid {os.getpid()}" in proc.stderr
    assert "Serving" not in proc.stdout


def test_an_address_this_machine_lacks_is_named() -> None:
    assert "is not an address of this machine" in (port_problem("192.0.2.1", 8000) or "")


def test_potato_start_uses_the_worker_that_collects_headers_without_a_thread(monkeypatch: Any) -> None:
    from potato.server.serving.gunicorn_worker import worker_class

    assert worker_class() == "potato.server.serving.gunicorn_worker.HeadFirstWorker"  # the installed gunicorn has its hooks
    monkeypatch.setenv("POTATO_STOCK_GTHREAD", "1")
    assert worker_class() == "gthread"
