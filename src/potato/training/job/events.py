"""``events.jsonl``: what a running worker tells whoever watches it (agent, local backend).

Remote-safe: standard library only, Python 3.8. One JSON object per line, appended and flushed
line by line so a reader that tails the file (the agent, the SLURM follower) sees each event as
soon as it happens and never a half line. Every event has ``t`` (unix time, float) and ``type``:

- ``step``     ``{"text"}``: the run's current phase (the run page's step line).
- ``log``      ``{"level", "text"}``: a line for run.log (level: debug, info, warning, error).
- ``progress`` ``{"step", "total", "epoch"?, "loss"?}``: for the progress bar and loss chart.
- ``metric``   ``{"name", "value"}``: a score, e.g. ``holdout_accuracy``.
- ``warning``  ``{"text"}``: something the admin should read (device fallback, ignored labels).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, TypeVar

Event = Dict[str, Any]
EVENT_TYPES = ("step", "log", "progress", "metric", "warning")
_Writer = TypeVar("_Writer", bound="EventWriter")


def make_event(kind: str, now: float | None = None, **fields: Any) -> Event:
    """An event object (pure): ``t`` and ``type`` first, then the fields, ``None`` fields left out."""
    if kind not in EVENT_TYPES:
        raise ValueError("unknown event type {!r}; valid types are: {}".format(kind, ", ".join(EVENT_TYPES)))
    event: Event = {"t": time.time() if now is None else now, "type": kind}
    event.update((k, v) for k, v in fields.items() if v is not None)
    return event


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class EventWriter:
    """Appends events to ``events.jsonl``, one flushed line each (thread-safe).

    Step, log and warning events are also sent to ``mirror`` (the worker's logger, hence
    stderr.log), so the worker's own log tells the whole story next to any traceback.
    """

    def __init__(self, path: Path, clock: Callable[[], float] = time.time,
                 mirror: logging.Logger | None = None) -> None:
        self.path = path
        self.clock = clock
        self.mirror = mirror
        self._lock = threading.Lock()
        self._fh = open(str(path), "a", encoding="utf-8")  # noqa: SIM115 - open for the run, closed by close()

    def emit(self, event: Event) -> None:
        """Write one event; ``t`` is filled in when missing."""
        if "t" not in event:
            event = dict(event, t=self.clock())
        line = json.dumps(event, ensure_ascii=False, allow_nan=False, default=str) + "\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()

    def step(self, text: str) -> None:
        if self.mirror:
            self.mirror.info("step: %s", text)
        self.emit(make_event("step", self.clock(), text=text))

    def log(self, text: str, level: str = "info") -> None:
        if self.mirror:
            self.mirror.log(_LEVELS.get(level, logging.INFO), "%s", text)
        self.emit(make_event("log", self.clock(), level=level, text=text))

    def warning(self, text: str) -> None:
        if self.mirror:
            self.mirror.warning("%s", text)
        self.emit(make_event("warning", self.clock(), text=text))

    def metric(self, name: str, value: float) -> None:
        self.emit(make_event("metric", self.clock(), name=name, value=value))

    def progress(self, step: int, total: int, loss: float | None = None, epoch: float | None = None) -> None:
        # A diverged loss (nan, inf) is left out: JSON has no NaN and the chart skips the point.
        value = None if loss is None or not math.isfinite(float(loss)) else round(float(loss), 6)
        self.emit(make_event("progress", self.clock(), step=step, total=total, epoch=epoch, loss=value))

    def close(self) -> None:
        with self._lock:
            self._fh.close()

    def __enter__(self: _Writer) -> _Writer:  # noqa: PYI019 - no typing_extensions on remote hosts
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_events(path: Path) -> list[Event]:
    """Every complete event in ``path`` (a trailing half line is left for the next read)."""
    try:
        with open(str(path), encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return []
    lines = text.split("\n")[:-1]  # the part after the last newline may still be being written
    return [json.loads(line) for line in lines if line.strip()]
