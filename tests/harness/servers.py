"""Start the real server (``potato start``, gunicorn) on a free port for integration tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """``potato start`` in its own process group, so kill -9 reaches gunicorn's master and workers."""

    def __init__(self, config_path: Path, extra_args: list[str] | None = None, port: int | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.config_path = config_path
        self.env = env
        """Variables set for the server over this process's environment (HF_ENDPOINT, HF_TOKEN...)."""
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen | None = None
        self.log_path = config_path.parent / f"server-{self.port}.log"

    def start(self, timeout: float = 30.0) -> ServerProcess:
        cmd = [sys.executable, "-m", "potato", "start", str(self.config_path), "-p", str(self.port), *self.extra_args]
        self.log = self.log_path.open("ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, **self.env} if self.env else None)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if requests.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not answer within {timeout} s:\n{self.output()}")

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self._close_log()

    def _close_log(self) -> None:
        if getattr(self, "log", None) and not self.log.closed:
            self.log.close()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill9()
        self._close_log()
