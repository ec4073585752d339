"""The processes a test started itself, and nothing else on the machine.

Other work runs on the same machine (another suite, another person's Potato): a check that reads
every process's command line or environment would judge processes that are not the test's. So tests
name their roots (the server, an agent they started) and look at those and their descendants only.
"""

from __future__ import annotations

from pathlib import Path


def _parents() -> dict[int, int]:
    """Every process's parent pid, read once from /proc/<pid>/stat."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # it ended meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
        fields = text[text.rindex(")") + 2:].split()
        parents[int(stat.parent.name)] = int(fields[1])
    return parents


def descendants(*roots: int) -> list[int]:
    """``roots`` (those still running) and every process below them."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [r for r in roots if r in parents]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return sorted(found)


def cmdline(pid: int) -> list[bytes]:
    """The process's arguments; [] once it has ended."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def environ(pid: int) -> bytes:
    """The process's environment as /proc holds it; b"" once it has ended."""
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def process_start(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat), None when it is gone or a zombie: with its
    pid this names one process, never a later one that got the same pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return None if fields[0] in ("Z", "X") else fields[19]
