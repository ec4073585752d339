"""How a run's ending becomes its result: the result fields and exit code for a failure, then the
files written in the contract's order (result.json, then ``exit_code`` last; a rank: its rank file).

Remote-safe: standard library only, Python 3.8. Apart from :mod:`potato.training.worker` so that
the job loop there reads as the run's flow; every function here is written to be called when
something already went wrong, so each file is tried even when another could not be written.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from potato.training.gpus import dataparallel
from potato.training.gpus.dataparallel import Ranks
from potato.training.job.events import EventWriter, make_event
from potato.training.job.failures import OutOfMemory, TrainerImportError, WorkerError
from potato.training.job.limits import is_out_of_memory, oom_message
from potato.training.job.results import Reason, Result, RunStatus, write_exit_code, write_json_atomic, write_result
from potato.training.worker.steps import RunSoFar

log = logging.getLogger("potato.training.worker")  # one logger for the whole worker process


def fail(result: Result, status: RunStatus, reason: Reason, message: str) -> None:
    result.status, result.reason, result.message = status, reason, message


def finish_rank(job_dir: Path, ranks: Ranks, result: Result, code: int, events: EventWriter) -> None:
    """A rank's ending for its launcher: ``ranks/rank-K.json``, then it leaves the process group."""
    try:
        events.close()
    except OSError as exc:
        log.warning("could not close the rank's events: %s", exc)
    try:
        write_json_atomic(dataparallel.rank_file(job_dir, ranks.rank),
                          dict(result.to_json(), exit_code=code, ended=time.time()))
    except OSError as exc:
        log.error("could not write the rank's result: %s", exc)
    try:
        dataparallel.destroy_process_group()
    except Exception as exc:  # noqa: BLE001 - leaving a broken group must not hide the result above
        log.warning("could not leave the process group: %s", exc)


def classify(exc: BaseException, run: RunSoFar, result: Result) -> int:
    """Result fields and exit code for an exception that is not one of ours."""
    if is_out_of_memory(exc):
        max_ram_mb = run.job.max_ram_mb if run.job else None
        failure: WorkerError = OutOfMemory(oom_message(exc, max_ram_mb, run.device, batch_size(run)))
    elif isinstance(exc, ImportError):  # a trainer's lazy import inside fit or predict
        failure = TrainerImportError(result.trainer or "?", exc, run.cls.requires if run.cls else ())
    elif isinstance(exc, SystemExit):
        failure = WorkerError(f"The trainer exited the worker (sys.exit({exc.code!r})); see stderr.log")
    else:
        failure = WorkerError(f"{type(exc).__name__}: {exc} (traceback in stderr.log)")
    fail(result, RunStatus.FAILED, failure.reason, str(failure))
    return failure.exit_code


def batch_size(run: RunSoFar) -> int | None:
    """The run's ``batch_size`` parameter, for an out-of-memory message's fix (None: it has none)."""
    value = run.params.get("batch_size")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def safe_event(events: EventWriter, kind: str, **fields: Any) -> None:
    try:
        events.emit(make_event(kind, **fields))
    except (OSError, ValueError) as exc:  # a full disk must not stop result.json from being tried
        log.warning("could not write a %s event: %s", kind, exc)


def finish(job_dir: Path, result: Result, code: int, events: EventWriter) -> None:
    """result.json, then exit_code, last: a reader that sees exit_code sees a final result."""
    try:
        write_result(job_dir, result)
    except OSError as exc:
        log.error("could not write result.json: %s", exc)
    try:
        events.close()
    except OSError as exc:
        log.warning("could not close events.jsonl: %s", exc)
    try:
        write_exit_code(job_dir, code)
    except OSError as exc:
        log.error("could not write exit_code: %s", exc)
