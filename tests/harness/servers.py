"""Start the real server (``potato start``, gunicorn) on a free port for integration tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import requests

from potato.server.serving.ports import listening_inodes

PORT_TRIES = 5
"""How many ports a start tries when another process takes the free one it found before it listens."""


def free_port() -> int:
    """A port free now. Free only until someone binds it: the server binds it a second or more later,
    and a test beside this one (``pytest -n``) may have been handed the same number meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def own_pids(root: int) -> list[int]:
    """``root`` and the processes below it (Linux's /proc children lists): the only processes a
    ServerProcess looks at."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                todo.extend(int(child) for child in (task / "children").read_text().split())
            except (OSError, ValueError):  # the process ended meanwhile
                continue
    return found


def open_sockets(pid: int) -> set[str]:
    """The sockets ``pid`` holds open, as /proc names them (``socket:[123]``)."""
    links = set()
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # the process ended meanwhile
        return set()
    for fd in fds:
        try:
            links.add(os.readlink(fd))
        except OSError:  # closed meanwhile
            continue
    return {link for link in links if link.startswith("socket:")}


class ServerProcess:
    """``potato start`` in its own process group, so kill -9 reaches gunicorn's master and workers."""

    def __init__(self, config_path: Path, extra_args: list[str] | None = None, port: int | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.config_path = config_path
        self.env = env
        """Variables set for the server over this process's environment (HF_ENDPOINT, HF_TOKEN...)."""
        self.port_named = port is not None
        """The caller named the port (a restart at the same address): it is this one or none."""
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen | None = None
        self.log_path = config_path.parent / f"server-{self.port}.log"

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start the server and wait until it answers: it, not whatever else listens on its port.

        /healthz answers alike from every Potato, and a port from :func:`free_port` can be taken by a
        test beside this one before this server binds it. The start then took the other test's server
        for its own (at its first look, while its own process was still starting, to exit with "Port
        ... is in use"), and the test read that server's labels and met its throttle: issue 42 C, a
        ``KeyError: 'labels'`` under ``pytest -n 4`` from a 429. So an answer counts only once this
        server's own processes hold the listening socket; a port another process took first is given
        up for a fresh one, unless the caller named it (then the start fails, with the server's own
        words on who holds it)."""
        for _ in range(PORT_TRIES):
            if self._start_on_port(timeout):
                return self
            self._close_log()
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self.log_path = self.config_path.parent / f"server-{self.port}.log"
        raise RuntimeError(f"{PORT_TRIES} free ports in a row were taken before the server could listen")

    def _start_on_port(self, timeout: float) -> bool:
        """True once the server answers on its port; False when it could not listen there because
        another process took the port first and another port may be tried; raises otherwise."""
        cmd = [sys.executable, "-m", "potato", "start", str(self.config_path), "-p", str(self.port), *self.extra_args]
        self.log = self.log_path.open("ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, **self.env} if self.env else None)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                taken = bool(listening_inodes(self.port))  # who holds it, the server's own output says
                if taken and self._may_move():
                    return False
                held = f" (another process listens on port {self.port})" if taken else ""
                raise RuntimeError(f"server exited with {self.proc.returncode}{held}:\n{self.output()}")
            try:
                if requests.get(self.url + "/healthz", timeout=1).status_code == 200 and self.listening():
                    return True
            except requests.RequestException:
                pass
            time.sleep(0.1)
        held = (f"; another process listens on port {self.port}"
                if listening_inodes(self.port) and not self.listening() else "")
        self.stop()
        raise RuntimeError(f"server did not answer within {timeout} s{held}:\n{self.output()}")

    def _may_move(self) -> bool:
        """Whether the start may go on on another port: the port was chosen here, and the caller has
        not built its own address on it (a link's address in place of 127.0.0.1)."""
        return not self.port_named and self.url == f"http://127.0.0.1:{self.port}"

    def listening(self) -> bool:
        """Whether this server's own processes hold the socket that listens on its port."""
        wanted = {f"socket:[{inode}]" for inode in listening_inodes(self.port)}
        return self.proc is not None and bool(wanted) and any(
            wanted & open_sockets(pid) for pid in own_pids(self.proc.pid))

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


@contextmanager
def serving_items(make_project: Callable[..., Path], items: list[dict[str, Any]], **config: Any) -> Iterator[ServerProcess]:
    """A project (``make_project``, the conftest fixture, with ``config``'s top-level keys) whose items
    are ``items``, under gunicorn, stopped afterwards: what a browser test of one answer type serves."""
    path = make_project(n_items=len(items), **config)
    (path.parent / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    srv = ServerProcess(path).start()
    try:
        yield srv
    finally:
        srv.stop()
