"""Test helpers for the agent: a real agent process, and a TCP proxy that can break the network.

The agent runs as ``python -m potato.training.agent`` in its own process, exactly as a user
starts it; the proxy sits between it and the server to cut a download mid-file or to make the
server unreachable without stopping it.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tests.harness.servers import ServerProcess, free_port


def token_in(register_output: str) -> str:
    """The token in ``potato training register``'s output: the first non-empty line after the first."""
    return next(line.strip() for line in register_output.splitlines()[1:] if line.strip())


def register(config_path: Path, backend: str, *extra: str) -> tuple[str, str]:
    """``potato training register``: (its whole output, the token)."""
    out = subprocess.run([sys.executable, "-m", "potato", "training", "register", backend, str(config_path), *extra],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout, token_in(out.stdout)


class AgentProcess:
    """``potato training agent`` for one backend, its output in a file next to its workdir."""

    def __init__(self, server_url: str, backend: str, token: str, workdir: Path, *extra: str) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir.parent / f"{workdir.name}.out"
        self.out = self.log_path.open("ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("POTATO_")}
        env["POTATO_TRAINING_TOKEN"] = token
        cmd = [sys.executable, "-m", "potato.training.agent", "--server", server_url, "--backend", backend,
               "--workdir", str(workdir), *extra]
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.output()
            if text in out:
                return out
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"agent never said {text!r}:\n{self.output()}")

    def wait_exit(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout)

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.out.close()


class Proxy:
    """A TCP proxy to the server on loopback: ``cut_first_response_after`` closes the first
    connection whose answer passes that many bytes; ``blocked`` drops every connection."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.blocked = False
        self.cut_after: int | None = None
        self.bytes_to_client = 0
        self.connections: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def cut_first_response_after(self, nbytes: int) -> None:
        self.cut_after = nbytes

    def block(self) -> None:
        """From now on the server is unreachable: open connections are cut, new ones refused."""
        self.blocked = True
        for sock in list(self.connections):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self.block()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            if self.blocked:
                client.close()
                continue
            threading.Thread(target=self._pipe, args=(client,), daemon=True).start()

    def _pipe(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
        except OSError:
            client.close()
            return
        self.connections += [client, upstream]
        cut_here = self.cut_after
        sent = 0
        try:
            while not self.blocked:
                ready, _, _ = select.select([client, upstream], [], [], 0.2)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is upstream:
                        if cut_here is not None and sent + len(data) > cut_here:
                            data = data[: max(0, cut_here - sent)]
                            client.sendall(data)
                            self.bytes_to_client += len(data)
                            self.cut_after = None  # the next connections go through whole
                            return
                        sent += len(data)
                        self.bytes_to_client += len(data)
                        client.sendall(data)
                    else:
                        upstream.sendall(data)
        except OSError:
            return
        finally:
            for sock in (client, upstream):
                try:
                    sock.close()
                except OSError:
                    pass


@contextmanager
def polling_agent(srv: ServerProcess, backend: str, workdir: Path) -> Iterator["AgentProcess"]:
    """An agent for the config's ``type: agent`` backend, registered and started by hand as its admin
    would, and stopped after."""
    _, token = register(srv.config_path, backend)
    agent = AgentProcess(srv.url, backend, token, workdir)
    try:
        yield agent
    finally:
        agent.stop()
