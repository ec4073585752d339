"""The training worker: ``python -m potato.training.worker JOB_DIR``. The only code that trains.

Remote-safe: standard library only, Python 3.8. The same worker runs on the server (local
backend), an ssh host, a SLURM compute node and a machine behind NAT; it knows nothing of
servers, ssh or SLURM. Everything it needs is in ``JOB_DIR/bundle/``; everything it says is
in files in ``JOB_DIR``. docs/worker-contract.md has the same contract with examples.

Input, ``JOB_DIR/bundle/`` (already extracted):

- ``job.json``: ``{"format": 1, "run_id", "trainer", "schemes": [{"name", "annotation_type":
  "radio"|"multiselect"|"span", "labels", "description"?}], "params": {...}, "device":
  "auto"|"cpu"|"cuda"|"cuda:N"|"mps", "grace_seconds", "num_threads": int|null, "max_ram_mb":
  int|null, "seed"}`` (docs/worker-contract.md).
- ``items.jsonl``: ``{"id", "text"}`` per line: every item to train on and predict.
- ``labels.jsonl``: ``{"item_id", "schema", "label", "user"}`` per line; ``label`` is a string
  (radio) or a list of strings (multiselect). Several annotators per item are combined by
  majority vote (:mod:`potato.training.job.labels`).
- ``split.json``: ``{"holdout": [item ids]}``, chosen by the server. Labelled items outside it
  are the training items. Each schema needs one (else ``no_labels``), except for a trainer that does
  not learn from labels (``learns_from_labels`` False: llm-zero-shot), which runs with none at all.
- ``media/`` (optional): files the items refer to.

Output, in ``JOB_DIR``:

- ``events.jsonl``: one JSON event per line, flushed as written (:mod:`potato.training.job.events`).
- ``stderr.log``: the worker's log and, on failure, the traceback (also on the caller's stderr).
- ``artifacts/``: model files; always ``labels.json`` (per schema its type and label order).
- ``predictions.jsonl``: ``{"item_id", "schema", "label", "confidence"}`` for every item in
  items.jsonl and every schema in ``schemas``, written atomically (multiselect: the list of
  labels with probability >= 0.5; confidence is their mean probability, or for the empty list the
  mean of 1 - p over all labels). A trainer may leave out items it cannot predict
  (decision-calibrate: items its source run lacks); a warning event says how many.
- ``result.json`` (atomic): ``{"status": "succeeded"|"failed"|"cancelled", "reason": null|
  "error"|"import"|"oom"|"cancelled"|"bad_job"|"no_labels", "message", "metrics", "device",
  "trainer", "predictions" (lines written), "duration_s"}``. ``metrics``: ``n_train``,
  ``n_holdout``, ``holdout_accuracy``, ``holdout_macro_f1`` (both absent when nothing in the
  holdout is labelled) and the same per schema as ``<schema>/<name>``, plus
  ``<schema>/holdout_brier``, plus any score the trainer reports (``ctx.metric``; decision-calibrate:
  ``<schema>/calibration_*``).
- ``exit_code``: the exit status as text, written LAST and atomically: when it exists, every
  other file is final.

Exit codes: 0 succeeded, 1 trainer error (or no labels), 2 bad job, 3 trainer could not be
imported, 4 out of memory, 143 cancelled (SIGTERM).

The holdout score is computed here, not by the trainer: the trainer fits on the training
items only, predicts every item, and the worker scores the holdout items' predictions against
their majority labels. The model is not refitted on all labelled items afterwards: the
predictions and the model files then come from the very model the score describes, and a run
costs one fit, not two.

Signals: the first SIGTERM (or SIGINT) is a warm stop: a flag the trainer checks between steps
(``ctx.check_stop()``), after which it raises :class:`Cancelled` and the worker writes a
cancelled result. The second is a cold stop: result.json and exit_code are written at once and
the process exits 143 (see :func:`_on_signal_factory` for why).

Lifeline: with ``--lifeline-stdin`` (how an agent starts it) stdin is a pipe whose write end only
the agent holds. End of file there means the agent has ended, however it ended (``kill -9``
included): the worker says so and stops itself as the agent would have stopped it (SIGTERM to its
process group, SIGKILL after ``grace_seconds``), so no orphan goes on training beside the next run.
Started by hand (a terminal or /dev/null on stdin, no option), the worker ignores its stdin.

Files: the worker sets umask 077 first, so everything it writes is its user's only (the items,
labels and annotators' names are in the bundle, the predictions and the result).

Limits and device, applied before the trainer (and numpy or torch) is imported: ``num_threads``
sets OMP/MKL/OPENBLAS (and similar) thread counts and torch's; ``max_ram_mb`` bounds the data
memory (``RLIMIT_DATA``, :mod:`potato.training.job.limits` says why not RLIMIT_AS), and hitting it is
reason ``oom``, exit 4. ``device`` is resolved by :func:`potato.training.gpus.devices.resolve_device`
for trainers that use torch; a fallback is a ``warning`` event. Trainers that never use torch run
on the CPU without importing it.

This module is the process (arguments, logging, signals) and the job loop, :func:`run_job`, which
turns whatever a run raises into result.json and an exit code. The run's own steps are in
:mod:`potato.training.worker.steps` (the trainer's predictions checked by
:mod:`potato.training.worker.predictions`), the data-parallel launcher in
:mod:`potato.training.worker.ranks`, the stop flag and the lifeline in
:mod:`potato.training.worker.stop`, and the ending's files in :mod:`potato.training.worker.ending`.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable

from potato.training.gpus import dataparallel
from potato.training.gpus.dataparallel import SINGLE, Ranks
from potato.training.gpus.devices import DeviceProbe, probe_devices
from potato.training.job.events import EventWriter, make_event
from potato.training.job.failures import BadJob, Cancelled, NoLabels, OutOfMemory, TrainerImportError, WorkerError
from potato.training.job.limits import is_out_of_memory, oom_message
from potato.training.worker.ranks import launch, world_size
from potato.training.job.results import (
    LIFELINE_FLAG,
    BUNDLE_DIR,
    EVENTS_FILE,
    STDERR_FILE,
    ExitCode,
    Reason,
    Result,
    RunStatus,
    write_exit_code,
    write_json_atomic,
    write_result,
)
from potato.training.worker.ending import batch_size, classify, fail, finish, finish_rank, safe_event
from potato.training.worker.steps import RunSoFar, prepare, train
from potato.training.worker.stop import StopFlag, append_event, watch_lifeline

log = logging.getLogger("potato.training.worker")

USAGE = f"usage: python -m potato.training.worker [{LIFELINE_FLAG}] JOB_DIR\n"
PRIVATE_UMASK = 0o077
"""Files and folders the worker writes are its user's only: the job holds annotators' labels and names."""


def run_job(job_dir: Path, stop: StopFlag | None = None, result: Result | None = None,
            probe: Callable[[], DeviceProbe] = probe_devices, ranks: Ranks = SINGLE) -> int:
    """Run the job in ``job_dir``; write every output file; return the exit code. Never raises.

    ``result`` is filled in as the run goes (the cold-stop handler reads it); ``stop`` is the
    flag SIGTERM sets. A run that sees several GPUs (or asks for ``cpu_processes``) with a trainer
    that trains data-parallel is handed to torchrun here (:func:`launch`); ``ranks`` is set in
    each process torchrun starts.
    """
    stop = stop if stop is not None else StopFlag()
    result = result if result is not None else Result()
    started = time.monotonic()
    events_file = job_dir / EVENTS_FILE if ranks.main else dataparallel.rank_file(job_dir, ranks.rank, "events.jsonl")
    events = EventWriter(events_file, mirror=log)
    run = RunSoFar()
    code = int(ExitCode.ERROR)
    try:
        machine = prepare(run, job_dir / BUNDLE_DIR, events, result, stop, probe, ranks)
        n = world_size(run, machine) if not ranks.parallel else ranks.world_size
        if n > 1 and not ranks.parallel:
            code = launch(job_dir, run, n, events, result, stop)
        else:
            if ranks.parallel:
                run.device = result.device = dataparallel.init_process_group(ranks, run.device)
            train(job_dir, run, events, result, stop, ranks)
            result.status, result.reason, result.message = RunStatus.SUCCEEDED, None, None
            code = int(ExitCode.OK)
            events.step("finished")
    except Cancelled:
        fail(result, RunStatus.CANCELLED, Reason.CANCELLED,
             getattr(stop, "cause", None) or "Cancelled (SIGTERM) before the run finished")
        code = int(ExitCode.CANCELLED)
    except KeyboardInterrupt:
        fail(result, RunStatus.CANCELLED, Reason.CANCELLED, "Cancelled (interrupted) before the run finished")
        code = int(ExitCode.CANCELLED)
    except WorkerError as exc:
        cause = exc.__cause__
        if isinstance(exc, TrainerImportError) and cause is not None and is_out_of_memory(cause):
            # A library that cannot be mapped under max_ram_mb is a memory problem, not a missing package.
            exc = OutOfMemory(oom_message(cause, run.job.max_ram_mb if run.job else None, run.device,
                                          batch_size(run)))
        fail(result, RunStatus.FAILED, exc.reason, str(exc))
        code = exc.exit_code
        log.error("%s", exc, exc_info=not isinstance(exc, (BadJob, NoLabels)))
    except BaseException as exc:  # the contract: every ending writes result.json and exit_code
        if ranks.parallel and stop() and not isinstance(exc, (SystemExit, KeyboardInterrupt)):
            # a peer that stopped first left this rank's collective call without a partner
            fail(result, RunStatus.CANCELLED, Reason.CANCELLED, "Cancelled (SIGTERM) before the run finished")
            code = int(ExitCode.CANCELLED)
        else:
            code = classify(exc, run, result)
            log.exception("%s", result.message)
    finally:
        result.duration_s = time.monotonic() - started
        if result.status is not RunStatus.SUCCEEDED:
            safe_event(events, "log", level="error" if code != ExitCode.CANCELLED else "warning",
                       text=result.message or "")
        if ranks.parallel:
            finish_rank(job_dir, ranks, result, code, events)
        else:
            finish(job_dir, result, code, events)
    return code


# ---------------------------------------------------------------------------------------------
# The process: logging, signals, main()


def _on_signal_factory(stop: StopFlag, job_dir: Path, result: Result,
                       started: float, ranks: Ranks = SINGLE) -> Callable[[int, Any], None]:
    def _on_signal(signum: int, frame: Any) -> None:
        """First SIGTERM: warm stop (set the flag; the trainer stops at its next step boundary and
        the worker reports ``cancelled`` with everything written in order). Second: cold stop.

        Why a cold stop: the sender (an admin pressing Cancel twice, the agent's grace period,
        ``scancel`` repeating TERM) has decided not to wait, and a trainer stuck in one long C call
        never reaches a step boundary. Exiting here still leaves a consistent job dir: result.json
        and exit_code are written with plain os calls (no shared file objects or logging locks the
        interrupted main flow might hold), then ``os._exit`` skips cleanup that could hang.
        """
        stop.count += 1
        if stop.count == 1:
            return
        _cold_stop(job_dir, result, started, ranks)

    return _on_signal


def _cold_stop(job_dir: Path, result: Result, started: float, ranks: Ranks = SINGLE) -> None:
    """result.json and exit_code now (a rank: its rank file), then exit. A launcher's torchrun gets
    SIGTERM from the kernel as this process ends, and stops the ranks."""
    result.status, result.reason = RunStatus.CANCELLED, Reason.CANCELLED
    result.message = "Stopped at once by a second SIGTERM; the run's files may be incomplete"
    result.duration_s = time.monotonic() - started
    try:
        if ranks.parallel:
            write_json_atomic(dataparallel.rank_file(job_dir, ranks.rank),
                              dict(result.to_json(), exit_code=int(ExitCode.CANCELLED), ended=time.time()))
            os._exit(int(ExitCode.CANCELLED))
        append_event(job_dir, make_event("log", level="warning", text=result.message))
        write_result(job_dir, result)
        write_exit_code(job_dir, int(ExitCode.CANCELLED))
    except OSError as exc:
        os.write(2, f"potato worker: cold stop could not write its files: {exc}\n".encode())
    os._exit(int(ExitCode.CANCELLED))


def _setup_logging(job_dir: Path, path: Path | None = None) -> tuple[logging.Handler, IO[str]]:
    """stderr.log (or ``path``: a rank's own log) gets the worker's log, warnings and (via
    faulthandler) native crash tracebacks."""
    path = path or job_dir / STDERR_FILE
    root = logging.getLogger()
    if not root.handlers:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(stream)
    handler = logging.FileHandler(str(path), encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    crash_log = open(str(path), "a", encoding="utf-8")  # noqa: SIM115 - closed by main()
    faulthandler.enable(file=crash_log)
    return handler, crash_log


def main(argv: list[str] | None = None) -> int:
    os.umask(PRIVATE_UMASK)  # before any file: stderr.log, events, predictions, result, artifacts
    args = list(sys.argv[1:] if argv is None else argv)
    lifeline = LIFELINE_FLAG in args
    rank_mode = dataparallel.RANK_FLAG in args
    args = [a for a in args if a not in (LIFELINE_FLAG, dataparallel.RANK_FLAG)]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        sys.stderr.write(USAGE)
        return int(ExitCode.BAD_JOB)
    job_dir = Path(args[0]).resolve()
    if not job_dir.is_dir():
        sys.stderr.write(f"potato worker: {job_dir} is not a folder\n{USAGE}")
        return int(ExitCode.BAD_JOB)
    ranks = SINGLE
    log_path = None
    if rank_mode:  # started by torchrun for a data-parallel run (dataparallel.py)
        ranks = Ranks.from_env(os.environ)
        dataparallel.tie_to_parent(signal.SIGKILL)  # torchrun gone: so is this rank
        if not ranks.main:  # rank 0 speaks for the run; the others keep their words to themselves
            log_path = dataparallel.rank_file(job_dir, ranks.rank, "log")
            fd = os.open(str(log_path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.dup2(fd, 2)
            os.close(fd)
    handler, crash_log = _setup_logging(job_dir, log_path)
    log.info("worker pid %d, Python %s, job dir %s%s", os.getpid(), sys.version.split()[0], job_dir,
             f", rank {ranks.rank} of {ranks.world_size}" if ranks.parallel else "")
    stop = StopFlag()
    result = Result()
    on_signal = _on_signal_factory(stop, job_dir, result, time.monotonic(), ranks)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if lifeline and not ranks.parallel:
        threading.Thread(target=watch_lifeline, args=(0, stop, job_dir), name="potato-lifeline", daemon=True).start()
    try:
        return run_job(job_dir, stop, result, ranks=ranks)
    finally:
        faulthandler.disable()
        crash_log.close()
        logging.getLogger().removeHandler(handler)
        handler.close()
