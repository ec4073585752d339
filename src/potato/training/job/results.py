"""What a finished worker leaves behind: ``result.json``, ``predictions.jsonl``, ``exit_code``.

Remote-safe: standard library only, Python 3.8. Every file here is written atomically (a
temporary file beside it, then ``os.replace``), so a reader never sees half a file; the
``exit_code`` file is written last, so its presence means the others are complete.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Tuple, Union

from potato.training.job.private import atomic_file, write_atomic
from potato.training.job.spans import ScoredSpan, Span

RESULT_FILE = "result.json"
PREDICTIONS_FILE = "predictions.jsonl"
EXIT_CODE_FILE = "exit_code"
EVENTS_FILE = "events.jsonl"
STDERR_FILE = "stderr.log"
ARTIFACTS_DIR = "artifacts"
BUNDLE_DIR = "bundle"
LIFELINE_FLAG = "--lifeline-stdin"
"""The worker's option saying that its stdin is a lifeline: end of file there means the agent that
started it has ended (the agent and a container's command line pass it; the worker reads it)."""

Label = Union[str, Tuple[str, ...], Tuple[Span, ...], Tuple[ScoredSpan, ...]]
"""A radio answer (one label), a multiselect answer (labels in the scheme's order), or a span
scheme's spans (by position; a prediction's with their confidence)."""


class RunStatus(str, Enum):
    """``result.json`` ``status``."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Reason(str, Enum):
    """Why a run did not succeed: ``result.json``'s ``reason`` and the server's run ``reason``.

    One list for the worker and the server, kept here because this module is remote-safe.
    The worker reports the first six; the rest are decided by whoever runs the worker.
    """

    ERROR = "error"
    IMPORT = "import"
    OOM = "oom"
    CANCELLED = "cancelled"
    BAD_JOB = "bad_job"
    NO_LABELS = "no_labels"
    TIMEOUT = "timeout"
    AGENT_LOST = "agent_lost"
    NODE_LOST = "node_lost"
    PREEMPTED = "preempted"
    SERVER_RESTART = "server_restart"
    QUEUE_TIMEOUT = "queue_timeout"
    TIME_LIMIT = "time_limit"
    """SLURM ended the job at its ``time`` (not Potato's max_wall_seconds: that is ``timeout``)."""
    SCANCELLED = "scancelled"
    """Someone ran ``scancel`` on the job outside Potato."""
    JOB_LOST = "job_lost"
    """The SLURM job left the queue with no exit_code and no explanation."""

    @classmethod
    def of(cls, value: object) -> "Reason":
        """The reason another program sent: one this version does not know reads as ``error``."""
        try:
            return cls(value)
        except ValueError:
            return cls.ERROR


class ExitCode(IntEnum):
    """The worker's process exit status, also written to the ``exit_code`` file."""

    OK = 0
    ERROR = 1
    BAD_JOB = 2
    IMPORT = 3
    OOM = 4
    CANCELLED = 143  # 128 + SIGTERM, what a shell reports for a process that SIGTERM ended


@dataclass
class Result:
    """``result.json``; filled in as the run goes, so a failure still reports what was known."""

    status: RunStatus = RunStatus.FAILED
    reason: Reason | None = Reason.ERROR
    message: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    device: str = "cpu"
    trainer: str = ""
    predictions: int = 0
    duration_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "reason": self.reason.value if self.reason is not None else None,
            "message": self.message,
            "metrics": dict(self.metrics),
            "device": self.device,
            "trainer": self.trainer,
            "predictions": self.predictions,
            "duration_s": round(self.duration_s, 3),
        }


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def write_result(job_dir: Path, result: Result) -> None:
    write_json_atomic(job_dir / RESULT_FILE, result.to_json())


def write_exit_code(job_dir: Path, code: int) -> None:
    """The last file a worker writes: its presence says result.json and predictions are final."""
    write_atomic(job_dir / EXIT_CODE_FILE, f"{int(code)}\n")


def prediction_row(item_id: str, schema: str, label: Label, confidence: float,
                   probabilities: Optional[Mapping[str, float]] = None) -> dict[str, Any]:
    """One ``predictions.jsonl`` line: a multiselect label is a JSON list, a span scheme's a list of
    ``{"start", "end", "label", "confidence"}`` objects; ``probabilities`` (each label's, where the
    trainer gives them) only when there are some."""
    value: Any = label
    if isinstance(label, tuple):
        value = [x.to_json() if isinstance(x, ScoredSpan) else x for x in label]
    row = {"item_id": item_id, "schema": schema, "label": value, "confidence": round(float(confidence), 6)}
    if probabilities:
        row["probabilities"] = {str(k): round(float(v), 6) for k, v in probabilities.items()}
    return row


def write_predictions(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write ``predictions.jsonl`` atomically; returns the number of lines."""
    count = 0
    with atomic_file(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count
