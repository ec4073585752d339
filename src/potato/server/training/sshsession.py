"""The ssh client that carries a run's agent: the record a restarted server takes it over by, and
whether it is still there (through /proc: an adopted session is not this server's child)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from potato.training.jobfiles import read_json
from potato.training.results import write_json_atomic

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
