"""Reading what a worker leaves in its job dir, while it runs and after it ends.

stdlib-only and Python 3.8-safe: the local backend uses it on the server and the agent uses it
on remote hosts (and on SLURM's shared storage), so both read a worker the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class EventFollower:
    """Returns the events appended to ``events.jsonl`` since the last call.

    A line is taken only once it ends in a newline, so a half-written line (the worker is
    mid-write, or a shared filesystem shows a partial block) is read on a later call instead
    of being lost or misparsed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.bad_lines = 0

    def read_new(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        events: list[dict[str, Any]] = []
        for line in data[: end + 1].splitlines():
            if not line.strip():
                continue
            try:
                event = json.loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                self.bad_lines += 1
                continue
            if isinstance(event, dict):
                events.append(event)
        return events


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``, or None when it is missing or not (yet) a complete object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_exit_code(job_dir: Path) -> int | None:
    """The worker's own exit code file: the truth about how it ended, whatever ran it."""
    try:
        return int((job_dir / "exit_code").read_text().strip())
    except (OSError, ValueError):
        return None


def tail(path: Path, max_bytes: int = 8192) -> str:
    """The last ``max_bytes`` of a text file (the run page's log tail)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > max_bytes and "\n" in text:
        text = text.split("\n", 1)[1]
    return text

