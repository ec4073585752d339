"""The ssh client that carries a run's agent: the record a restarted server takes it over by, and
whether it is still there (through /proc: an adopted session is not this server's child)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from potato.training.job.files import read_json
from potato.training.job.results import write_json_atomic

SESSION_FILE = "ssh-session.json"
"""In the run folder: what a restarted server needs to take over a run's ssh session."""


@dataclass(frozen=True)
class SessionRecord:
    """What a restarted server needs to take over a run's ssh session (:data:`SESSION_FILE`): the
    run's socket folder on the host, the agent's interpreter (a shell word), the ssh client's pid
    here, and the reverse forward to cancel at the end."""

    socket_dir: str
    python: str
    pid: int
    forward: str = ""

    def write(self, run_dir: Path) -> None:
        write_json_atomic(run_dir / SESSION_FILE, {"socket_dir": self.socket_dir, "python": self.python,
                                                   "pid": self.pid, "forward": self.forward})

    @classmethod
    def read(cls, run_dir: Path) -> SessionRecord | None:
        facts = read_json(run_dir / SESSION_FILE)
        if facts is None:
            return None
        return cls(str(facts["socket_dir"]), str(facts["python"]), int(facts.get("pid") or 0),
                   str(facts.get("forward") or ""))


def session_alive(pid: int, run_id: str) -> bool:
    """Whether ``pid`` is still the ssh client carrying ``run_id``'s agent (a recycled pid is not)."""
    if pid <= 0:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(cmdline) and cmdline[0].endswith(b"ssh") and any(run_id.encode() in a for a in cmdline)


class SshClient:
    """The ssh client that carries a run's agent: this server's child, or one a restarted server
    took over, which it can follow only through /proc and stop only with a signal."""

    def __init__(self, run_id: str, proc: subprocess.Popen[bytes] | None = None, pid: int = 0) -> None:
        self.run_id = run_id
        self.proc = proc
        self.pid = proc.pid if proc is not None else pid

    def ended(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is not None
        return bool(self.pid) and not session_alive(self.pid, self.run_id)

    def how_it_ended(self) -> str:
        return f"ssh exited {self.proc.returncode}" if self.proc is not None else "its ssh process is gone"

    def stop(self) -> None:
        """End the session now: sshd then closes the agent's stdout, and the agent stops its worker."""
        if self.proc is not None:
            self.proc.terminate()
        elif session_alive(self.pid, self.run_id):
            os.kill(self.pid, signal.SIGTERM)

    def finish(self) -> None:
        """Let an agent that has reported exit on its own, then end whatever is left of the session."""
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
        elif session_alive(self.pid, self.run_id):
            time.sleep(2)  # not our child: no wait(), only a look through /proc
            self.stop()
