"""Run the app under gunicorn from ``potato start`` without a separate gunicorn config file."""

from __future__ import annotations

import gc
import signal
import sys
from typing import Any, Callable

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from potato.server.serving.gunicorn_worker import STOP_SIGNALS, worker_class

GRACEFUL_TIMEOUT_S = 25
"""Under the 30 s the systemd unit and the compose file give a stop, so the master ends its workers itself."""
FORWARDED_OFF: dict[str, Any] = {
    "forwarded_allow_ips": "",
    "secure_scheme_headers": {},
    "forwarder_headers": "",
}
"""gunicorn believes no proxy header from anyone: out of the box it takes ``X-Forwarded-Proto: https``
(and SCRIPT_NAME, PATH_INFO) from 127.0.0.1 and ::1, and from every Unix-socket client, so any local
client could make the server call a plain-http request https. Whether to believe a proxy is the
config's ``trust_proxy`` alone, applied in the app (``security.init_app``'s ProxyFix), issue 42."""


class StopSafeArbiter(Arbiter):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's master, except that a stop signal sent while it forks a worker reaches that worker
    (see :class:`potato.server.serving.gunicorn_worker.StopSafeWorker`, which releases what is held here)."""

    def spawn_worker(self) -> int:
        if not getattr(self.worker_class, "releases_held_signals", False):
            return super().spawn_worker()  # type: ignore[no-any-return]
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            return super().spawn_worker()  # type: ignore[no-any-return]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


class GunicornApp(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    def __init__(self, app: Flask, options: dict[str, Any]) -> None:
        self.application = app
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if key in self.cfg.settings and value is not None:
                self.cfg.set(key, value)

    def load(self) -> Flask:
        return self.application

    def run(self) -> None:
        try:
            StopSafeArbiter(self).run()
        except RuntimeError as e:  # gunicorn's own way to say it cannot start (e.g. the port is taken)
            print(f"\nError: {e}\n", file=sys.stderr)
            sys.exit(1)


def serve(app: Flask, host: str, port: int, workers: int, threads: int,
          on_worker_start: Callable[[], None] | None = None, on_worker_exit: Callable[[], None] | None = None) -> None:
    options: dict[str, Any] = {
        "bind": f"{host}:{port}",
        "workers": workers,
        "threads": threads,
        "worker_class": worker_class(),  # gthread that gives threads complete requests only (slowloris)
        "timeout": 120,
        # Annotators pause seconds between labels; gunicorn's default 2 s keep-alive made nearly
        # every label open a new connection (and a client racing the close got a broken pipe).
        "keepalive": 75,
        "graceful_timeout": GRACEFUL_TIMEOUT_S,
        "accesslog": None,
        "errorlog": "-",
        "loglevel": "info",
        "proc_name": "potato",
        "preload_app": True,
        # gunicorn >= 25 opens a control socket at one path per account (~/.gunicorn/gunicorn.ctl), so a
        # second project's server took the first one's; Potato does not use it (older gunicorn: ignored).
        "control_socket_disable": True,
        **FORWARDED_OFF,
    }
    options["post_worker_init"] = lambda worker: _worker_ready(on_worker_start)
    if on_worker_exit is not None:
        options["worker_exit"] = lambda server, worker: on_worker_exit()
    # The project's items, config and imports are tens of thousands of objects that live as long as the
    # server. Python's full collection walks all of them (about 27 ms for 20,000 items), holding the GIL
    # while every thread of the worker waits: that was the next-item latency tail at 200 annotators.
    # Frozen objects are never walked again (and their pages stay shared with the master after fork).
    gc.freeze()
    GunicornApp(app, options).run()


def _worker_ready(on_worker_start: Callable[[], None] | None) -> None:
    if on_worker_start is not None:
        on_worker_start()
    gc.freeze()  # what the worker built at start (its dispatcher, connections) joins the frozen set
