"""What training may write on the server: per run, in bytes and per second, and never the disk
space kept for annotators (issue 20: one run token once wrote 120 MB in a second and filled the disk,
after which annotators' labels got 507).

Pure: the decisions are functions of sizes, the clock and the settings; the agent protocol's routes
apply them. Three limits:

- a run's **log budget** (``model_training.max_run_log_mb``): events.jsonl, run.log and agent.log
  together. Past it, events still move the step line and the progress bar, but their text is not
  kept, and run.log says so once;
- a run's **write rate** (:data:`RATE_BYTES_PER_S`, bursts up to :data:`BURST_BYTES`): a report over
  it is answered 429 with ``Retry-After`` and nothing of it is stored; the agent sends it again;
- the **annotators' reserve** (``model_training.disk_reserve_mb``): free space on the output folder's
  disk that no training write may take (event batches, predictions uploads, bundles, model files).
  Annotators' labels may use it; a run that would dig into it is stopped with a message.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from potato.errors import PotatoError

RATE_BYTES_PER_S = 1024 * 1024
"""Sustained bytes per second one run's reports may add to its events and logs."""
BURST_BYTES = 8 * 1024 * 1024
"""Bytes one run may send at once before the rate applies (a backlog after an outage)."""
MB = 1024 * 1024


@dataclass(frozen=True)
class Bucket:
    """A token bucket: ``allowance`` bytes may be written now; it refills at ``rate`` per second up to
    ``burst``."""

    allowance: float
    at: float

    @classmethod
    def full(cls, now: float) -> "Bucket":
        return cls(float(BURST_BYTES), now)

    def take(self, cost: int, now: float, rate: float = RATE_BYTES_PER_S,
             burst: float = BURST_BYTES) -> tuple[Bucket, int | None]:
        """(the bucket after taking ``cost``, None) when it may be written now, else (the bucket
        refilled but untouched, seconds to wait). A write larger than the burst is let through on
        a full bucket, so no report is refused forever."""
        allowance = min(burst, self.allowance + max(0.0, now - self.at) * rate)
        if cost <= allowance or allowance >= burst:
            return Bucket(allowance - cost, now), None
        return Bucket(allowance, now), max(1, math.ceil((min(cost, burst) - allowance) / rate))


def over_budget(used: int, incoming: int, max_mb: int) -> bool:
    """Whether ``incoming`` bytes would take a run's events and logs past ``max_mb``."""
    return used + incoming > max_mb * MB


def budget_message(max_mb: int) -> str:
    return (f"This run's events and logs reached max_run_log_mb ({max_mb} MB); later events and log lines are "
            "not kept (the step line and progress still update). Raise model_training.max_run_log_mb, or make "
            "the trainer log less.")


def rate_message() -> str:
    return (f"The agent sent more than {RATE_BYTES_PER_S // MB} MB per second of events and log lines; its "
            "reports are slowed down (answered 429) until it sends less.")


class DiskReserve(PotatoError):
    """A training write would take the disk space kept for annotators' labels."""


def reserve_message(path: Path, free: int, reserve_mb: int) -> str:
    return (f"The server's disk holding {path} has {free // MB} MB free, and model_training.disk_reserve_mb "
            f"({reserve_mb} MB) of it is kept for annotators' labels, so training may not write there; the run "
            "was stopped. Free space on that disk (old runs' folders under training/runs/ can go), or lower "
            "model_training.disk_reserve_mb.")


def free_bytes(path: Path) -> int:
    """Free bytes for this process on the disk holding ``path`` (its nearest existing folder)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check_reserve(path: Path, incoming: int, reserve_mb: int) -> None:
    """Raise :class:`DiskReserve` when writing ``incoming`` bytes under ``path`` would leave less
    than the annotators' reserve free."""
    free = free_bytes(path)
    if free - incoming < reserve_mb * MB:
        raise DiskReserve(reserve_message(path, free, reserve_mb))
