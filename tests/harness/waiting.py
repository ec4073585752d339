"""Waiting in tests: for a condition to hold, and finding the training workers a test started."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable


def worker_pids(part: str) -> list[int]:
    """Worker processes whose command line (the job dir) contains ``part``: this test's only."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
            if b"potato.training.worker" in args and any(part.encode() in a for a in args):
                pids.append(int(cmdline.parent.name))
        except (OSError, ValueError):
            continue
    return pids


def wait_until(check: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
