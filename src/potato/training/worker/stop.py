"""The worker's stop flag, and its lifeline to the agent: how a running worker learns it must stop.

Remote-safe: standard library only, Python 3.8. Apart from :mod:`potato.training.worker` (which
installs the signal handlers) because every part of a run holds the flag (the trainer's context,
the data-parallel launcher), and the lifeline runs in a thread beside the main flow: what it
writes goes through :func:`append_event`, plain os calls that share no file object or lock with
the main flow.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import time
from pathlib import Path
from typing import Any, Callable

from potato import defaults
from potato.training.job.events import make_event
from potato.training.job.results import BUNDLE_DIR, EVENTS_FILE

log = logging.getLogger("potato.training.worker")  # one logger for the whole worker process


class StopFlag:
    """Counts stop requests; true after the first. Trainers see it through ``ctx.should_stop()``."""

    def __init__(self) -> None:
        self.count = 0
        self.cause: str | None = None
        """Why the worker stopped itself (its agent ended), for result.json; None for a SIGTERM."""

    def __call__(self) -> bool:
        return self.count > 0


def append_event(job_dir: Path, event: dict[str, Any]) -> None:
    """One event line with plain os calls: a single append, whole between the EventWriter's own lines,
    for code that runs beside the main flow (a signal handler, the lifeline thread)."""
    line = json.dumps(event) + "\n"
    fd = os.open(str(job_dir / EVENTS_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def grace_seconds(job_dir: Path) -> float:
    """The job's ``grace_seconds``, or the default when job.json is missing or has no valid value."""
    try:
        value = json.loads((job_dir / BUNDLE_DIR / "job.json").read_text(encoding="utf-8")).get("grace_seconds")
    except (OSError, ValueError, AttributeError):
        value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        return float(defaults.GRACE_SECONDS)
    return float(value)


def agent_ended_message(grace: float) -> str:
    return (f"The agent that started this worker ended (its lifeline, the worker's stdin, closed); the worker "
            f"stops itself: SIGTERM, then SIGKILL in {grace:g} s if it has not stopped.")


def _signal_own(sig: int) -> None:
    """``sig`` to this worker's process group when it leads one (its children too, as the agent's stop
    would), else (in a container runtime's group) to this process only: the runtime forwards what it
    gets, and a forwarded second SIGTERM would be a cold stop."""
    try:
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), sig)
        else:
            os.kill(os.getpid(), sig)
    except OSError as exc:
        log.error("could not send signal %d to the worker itself: %s", sig, exc)


def watch_lifeline(fd: int, stop: StopFlag, job_dir: Path, signal_own: Callable[[int], None] = _signal_own,
                   sleep: Callable[[float], None] = time.sleep) -> None:
    """Read ``fd`` until end of file (the agent never writes to it), then stop as a warm stop would."""
    while True:
        try:
            if not os.read(fd, 65536):
                break
        except InterruptedError:
            continue
        except OSError as exc:
            log.warning("the lifeline (stdin) cannot be read (%s); the worker cannot tell when its agent ends", exc)
            return
    grace = grace_seconds(job_dir)
    message = agent_ended_message(grace)
    log.warning("%s", message)
    try:
        append_event(job_dir, make_event("log", level="warning", text=message))
    except OSError as exc:
        log.warning("could not write the agent-ended event: %s", exc)
    stop.cause = "The agent that started this worker ended before the run finished; the worker stopped itself"
    if not stop():  # a SIGTERM from the agent already came: a second one would be a cold stop
        signal_own(signal.SIGTERM)
    sleep(grace)
    log.error("the worker did not stop within %g s of its agent's end; SIGKILL", grace)
    signal_own(signal.SIGKILL)
