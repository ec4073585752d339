"""The training worker: ``python -m potato.training.worker JOB_DIR``. The only code that trains.

Remote-safe: standard library only, Python 3.8. The same worker runs on the server (local
backend), an ssh host, a SLURM compute node and a machine behind NAT; it knows nothing of
servers, ssh or SLURM. Everything it needs is in ``JOB_DIR/bundle/``; everything it says is
in files in ``JOB_DIR``. docs/worker-contract.md has the same contract with examples.

Input, ``JOB_DIR/bundle/`` (already extracted):

- ``job.json``: ``{"format": 1, "run_id", "trainer", "schemas": [names], "schemes": [{"name",
  "annotation_type": "radio"|"multiselect"|"text", "labels"}], "params": {...}, "device":
  "auto"|"cpu"|"cuda"|"cuda:N"|"mps", "grace_seconds", "num_threads": int|null, "max_ram_mb":
  int|null, "seed"}``. Only radio and multiselect schemas can be in ``schemas``.
- ``items.jsonl``: ``{"id", "text"}`` per line: every item to train on and predict.
- ``labels.jsonl``: ``{"item_id", "schema", "label", "user"}`` per line; ``label`` is a string
  (radio) or a list of strings (multiselect). Several annotators per item are combined by
  majority vote (:mod:`potato.training.labels`).
- ``split.json``: ``{"holdout": [item ids]}``, chosen by the server. Labelled items outside it
  are the training items. Each schema needs one (else ``no_labels``), except for a trainer that does
  not learn from labels (``learns_from_labels`` False: llm-zero-shot), which runs with none at all.
- ``media/`` (optional): files the items refer to.

Output, in ``JOB_DIR``:

- ``events.jsonl``: one JSON event per line, flushed as written (:mod:`potato.training.events`).
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
memory (``RLIMIT_DATA``, :mod:`potato.training.limits` says why not RLIMIT_AS), and hitting it is
reason ``oom``, exit 4. ``device`` is resolved by :func:`potato.training.devices.resolve_device`
for trainers that use torch; a fallback is a ``warning`` event. Trainers that never use torch run
on the CPU without importing it.
"""

from __future__ import annotations

import faulthandler
import json
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable, Dict, Optional, Sequence

from potato import defaults
from potato.training import dataparallel
from potato.training import labels as labelling
from potato.training.dataparallel import SINGLE, Ranks
from potato.training.devices import DeviceProbe, describe_device, probe_devices, resolve_device
from potato.training.events import EventWriter, make_event
from potato.training.failures import BadJob, Cancelled, NoLabels, OutOfMemory, TrainerImportError, WorkerError
from potato.training.jobspec import (
    LABELS_FILE,
    Item,
    JobSpec,
    LabelRow,
    SchemaSpec,
    read_holdout,
    read_items,
    read_job,
    read_labels,
)
from potato.training.limits import apply_memory_limit, apply_thread_limit, is_out_of_memory, oom_message
from potato.training.metrics import score_holdout
from potato.training.results import (
    LIFELINE_FLAG,
    ARTIFACTS_DIR,
    BUNDLE_DIR,
    EVENTS_FILE,
    PREDICTIONS_FILE,
    STDERR_FILE,
    ExitCode,
    Reason,
    Result,
    RunStatus,
    prediction_row,
    write_exit_code,
    write_predictions,
    write_json_atomic,
    write_result,
)
from potato.training.spans import ScoredSpan, by_position
from potato.training.trainers import UnknownTrainer, get_trainer
from potato.training.trainers.base import Prediction, TrainContext, Trainer

log = logging.getLogger("potato.training.worker")

USAGE = f"usage: python -m potato.training.worker [{LIFELINE_FLAG}] JOB_DIR\n"
LAUNCH_POLL_S = 0.2
"""How often a data-parallel launcher looks at torchrun and its stop flag."""
PRIVATE_UMASK = 0o077
"""Files and folders the worker writes are its user's only: the job holds annotators' labels and names."""


class StopFlag:
    """Counts stop requests; true after the first. Trainers see it through ``ctx.should_stop()``."""

    def __init__(self) -> None:
        self.count = 0
        self.cause: str | None = None
        """Why the worker stopped itself (its agent ended), for result.json; None for a SIGTERM."""

    def __call__(self) -> bool:
        return self.count > 0


class _Run:
    """What the worker has learnt so far about this run; filled in step by step, so that a failure
    at any point is reported with what was known (trainer, device, max_ram_mb)."""

    def __init__(self) -> None:
        self.job: JobSpec | None = None
        self.cls: type[Trainer] | None = None
        self.params: dict[str, Any] = {}
        self.device = "cpu"


def _prepare(run: _Run, bundle_dir: Path, events: EventWriter, result: Result, stop: StopFlag,
             probe: Callable[[], DeviceProbe], ranks: Ranks = SINGLE) -> DeviceProbe:
    """Job, limits, trainer class, params, device, the trainer's imports: all before any data is read.
    A rank of a data-parallel run does the same, quietly: its launcher said it all."""
    events.step("reading the job")
    job = run.job = read_job(bundle_dir)
    result.trainer = job.trainer
    # Limits first: the BLAS/OpenMP pools read their sizes once, when numpy or torch is imported.
    apply_thread_limit(job.num_threads)
    note = apply_memory_limit(job.max_ram_mb)
    if note:
        events.warning(note)
    events.step(f"loading trainer {job.trainer}")
    try:
        cls = run.cls = get_trainer(job.trainer)
    except UnknownTrainer as exc:
        raise BadJob(str(exc)) from None
    except ImportError as exc:
        raise TrainerImportError(job.trainer, exc) from exc
    run.params = cls.validate_params(job.params)
    if cls.uses_device:
        machine = probe()
        device, warning = resolve_device(job.device, machine)
    else:
        machine = DeviceProbe.cpu_only()
        device, warning = "cpu", None
        if job.device not in ("auto", "cpu"):
            warning = f"Trainer '{job.trainer}' runs on the CPU only; device {job.device} is not used"
    run.device = result.device = device
    if warning and not ranks.parallel:
        events.warning(warning)
    if not ranks.parallel:
        events.log(f"Training on {describe_device(device, machine, job.num_threads)}")
    try:
        cls.check_imports(run.params)
    except ImportError as exc:
        raise TrainerImportError(job.trainer, exc, cls.requires) from exc
    if stop():
        raise Cancelled("cancelled before training")
    return machine


def _check_prediction(spec: SchemaSpec, value: Any, where: str, text: str) -> Prediction | None:
    """A trainer's prediction in the worker's terms: a string (radio), a tuple in the scheme's label
    order (multiselect) or scored spans inside ``text`` by position (span), and a finite confidence
    in [0, 1]."""
    if value is None:
        return None
    label, confidence = value[0], value[1]
    probabilities = _check_probabilities(value[2] if len(value) > 2 else None, where) if not spec.spans else None
    if spec.spans:
        label = tuple(sorted((_check_span(s, where, text) for s in label), key=by_position))
    elif spec.multiselect:
        chosen = label if isinstance(label, (list, tuple)) else (str(label),)
        label = labelling.order_labels(chosen, spec.labels)
    elif not isinstance(label, str):
        raise TypeError(f"the trainer predicted {label!r} for {where}; a radio label must be a string")
    confidence = float(confidence)
    if not math.isfinite(confidence):
        raise ValueError(f"the trainer predicted confidence {confidence} for {where}")
    return Prediction(label, min(1.0, max(0.0, confidence)), probabilities)


def _check_probabilities(value: Any, where: str) -> Optional[Dict[str, float]]:
    """Each label's probability, as a trainer gives them: finite numbers in [0, 1] by label name."""
    if value is None:
        return None
    out = {}
    for label, p in dict(value).items():
        p = float(p)
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise ValueError(f"the trainer gave label {label!r} the probability {p} for {where}")
        out[str(label)] = p
    return out


def _check_span(value: Any, where: str, text: str) -> ScoredSpan:
    start, end, label, confidence = value
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
        raise ValueError(f"the trainer predicted a span at {start!r}-{end!r} for {where}, outside its "
                         f"{len(text)} characters")
    confidence = float(confidence)
    if not math.isfinite(confidence):
        raise ValueError(f"the trainer predicted confidence {confidence} for a span of {where}")
    return ScoredSpan(start, end, str(label), min(1.0, max(0.0, confidence)))


def _check_span_labels(rows: Sequence[LabelRow], items: Sequence[Item], schemas: Sequence[SchemaSpec]) -> None:
    """Every span a label row marks lies inside its item's text: a bundle whose spans do not fit
    the text the worker trains on is a bad job, not a model trained on shifted words."""
    span_schemas = {s.name for s in schemas if s.spans}
    if not span_schemas:
        return
    lengths = {item.id: len(item.text) for item in items}
    for row in rows:
        if row.schema in span_schemas and row.item_id in lengths:
            for span in labelling.label_spans(row.label):
                if span.end > lengths[row.item_id]:
                    raise BadJob(f"{LABELS_FILE}: a span of schema {row.schema!r} on item {row.item_id!r} ends at "
                                 f"{span.end}, past the item's text ({lengths[row.item_id]} characters)")


def _train(job_dir: Path, run: _Run, events: EventWriter, result: Result, stop: StopFlag,
           ranks: Ranks = SINGLE) -> None:
    """Data, fit, save, predict every item, score the holdout, write predictions. In a data-parallel
    run every rank fits (on its shard) and predicts its share of the items; rank 0 alone saves,
    scores and writes."""
    job, cls = run.job, run.cls
    if job is None or cls is None:
        raise RuntimeError("_train called before _prepare finished")
    bundle_dir = job_dir / BUNDLE_DIR
    events.step("reading the bundle")
    items = read_items(bundle_dir)
    rows = read_labels(bundle_dir, job)
    holdout = read_holdout(bundle_dir)
    item_ids = {item.id for item in items}
    orphans = sum(1 for row in rows if row.item_id not in item_ids)
    if orphans:
        events.warning(f"{orphans} label(s) name items that are not in items.jsonl; they were ignored")
    _check_span_labels(rows, items, job.schemas)
    targets = labelling.aggregate((r for r in rows if r.item_id in item_ids), job.schemas)
    train_ids = [i for i in targets if i not in holdout]
    train = labelling.examples_for(items, targets, train_ids)
    train_targets = {ex.id: dict(ex.targets) for ex in train}
    class_labels = {}
    n_hold = sum(1 for i in targets if i in holdout)
    for spec in job.schemas:
        n_schema = sum(1 for ex in train if spec.name in ex.targets)
        if n_schema == 0 and cls.learns_from_labels:
            n_labelled = sum(1 for t in targets.values() if spec.name in t)
            raise NoLabels(
                f"No training item has a label for schema '{spec.name}' ({n_labelled} labelled item(s), "
                f"{n_hold} of them in the holdout); label more items, then start the run again")
        result.metrics[f"{spec.name}/n_train"] = n_schema
        class_labels[spec.name] = labelling.class_labels(spec, train_targets)
        extra = labelling.unknown_labels(spec, train_targets)
        if extra:
            events.warning("Schema '{}' has labels the config does not list: {} (trained on too)".format(
                spec.name, ", ".join(extra)))
    result.metrics["n_train"] = len(train)
    events.log(f"{len(items)} items, {len(rows)} labels; {len(train)} training items, "
               f"{n_hold} labelled holdout items")

    artifacts_dir = job_dir / ARTIFACTS_DIR
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    ctx = TrainContext(job, run.params, run.device, artifacts_dir, bundle_dir, events, stop, class_labels,
                       ranks=ranks)
    trainer = cls(ctx)
    trainer.check_schemas()
    ctx.check_stop()
    events.step(f"training on {len(train)} items")
    started = time.monotonic()
    trainer.fit(train)
    events.log(f"fit took {time.monotonic() - started:.2f} s")
    ctx.check_stop()
    if ranks.main:
        events.step("saving the model")
        trainer.save(artifacts_dir)
        ctx.check_stop()
    events.step(f"predicting {len(items)} items")
    share = dataparallel.shard_items(len(items), ranks)
    mine = items[share.start:share.stop]
    part = trainer.predict(mine)
    if len(part) != len(mine):
        raise ValueError(f"the trainer returned {len(part)} predictions for {len(mine)} items")
    parts = dataparallel.gather_to_main(part, ranks)
    if parts is None:  # a rank above 0: its share is with rank 0 now
        return
    raw = [row for rows in parts for row in rows]
    predicted: dict[str, dict[str, Prediction | None]] = {}
    for item, per_schema in zip(items, raw):
        predicted[item.id] = {
            spec.name: _check_prediction(spec, per_schema.get(spec.name),
                                         f"item {item.id!r}, schema {spec.name!r}", item.text)
            for spec in job.schemas
        }
    ctx.check_stop()
    events.step("scoring the holdout")
    result.metrics.update(score_holdout(job.schemas, targets, predicted, sorted(holdout)))
    for name, value in ctx.metrics.items():  # the trainer's own scores never replace the holdout score
        result.metrics.setdefault(name, value)
    for name in sorted(result.metrics):
        events.metric(name, result.metrics[name])
    events.step("writing predictions")
    _write_predictions(job_dir, job, items, predicted, events, result)


def _write_predictions(job_dir: Path, job: JobSpec, items: Sequence[Item],
                       predicted: dict[str, dict[str, Prediction | None]], events: EventWriter,
                       result: Result) -> None:
    missing = 0

    def rows() -> Any:
        nonlocal missing
        for item in items:
            for spec in job.schemas:
                p = predicted[item.id][spec.name]
                if p is None:
                    missing += 1
                    continue
                yield prediction_row(item.id, spec.name, p.label, p.confidence, getattr(p, "probabilities", None))

    result.predictions = write_predictions(job_dir / PREDICTIONS_FILE, rows())
    if missing:
        events.warning(f"The trainer gave no prediction for {missing} (item, schema) pair(s); predictions.jsonl "
                       "leaves them out")


def _fail(result: Result, status: RunStatus, reason: Reason, message: str) -> None:
    result.status, result.reason, result.message = status, reason, message


def run_job(job_dir: Path, stop: StopFlag | None = None, result: Result | None = None,
            probe: Callable[[], DeviceProbe] = probe_devices, ranks: Ranks = SINGLE) -> int:
    """Run the job in ``job_dir``; write every output file; return the exit code. Never raises.

    ``result`` is filled in as the run goes (the cold-stop handler reads it); ``stop`` is the
    flag SIGTERM sets. A run that sees several GPUs (or asks for ``cpu_processes``) with a trainer
    that trains data-parallel is handed to torchrun here (:func:`_launch`); ``ranks`` is set in
    each process torchrun starts.
    """
    stop = stop if stop is not None else StopFlag()
    result = result if result is not None else Result()
    started = time.monotonic()
    events_file = job_dir / EVENTS_FILE if ranks.main else dataparallel.rank_file(job_dir, ranks.rank, "events.jsonl")
    events = EventWriter(events_file, mirror=log)
    run = _Run()
    code = int(ExitCode.ERROR)
    try:
        machine = _prepare(run, job_dir / BUNDLE_DIR, events, result, stop, probe, ranks)
        n = _world_size(run, machine) if not ranks.parallel else ranks.world_size
        if n > 1 and not ranks.parallel:
            code = _launch(job_dir, run, n, events, result, stop)
        else:
            if ranks.parallel:
                run.device = result.device = dataparallel.init_process_group(ranks, run.device)
            _train(job_dir, run, events, result, stop, ranks)
            result.status, result.reason, result.message = RunStatus.SUCCEEDED, None, None
            code = int(ExitCode.OK)
            events.step("finished")
    except Cancelled:
        _fail(result, RunStatus.CANCELLED, Reason.CANCELLED,
              getattr(stop, "cause", None) or "Cancelled (SIGTERM) before the run finished")
        code = int(ExitCode.CANCELLED)
    except KeyboardInterrupt:
        _fail(result, RunStatus.CANCELLED, Reason.CANCELLED, "Cancelled (interrupted) before the run finished")
        code = int(ExitCode.CANCELLED)
    except WorkerError as exc:
        cause = exc.__cause__
        if isinstance(exc, TrainerImportError) and cause is not None and is_out_of_memory(cause):
            # A library that cannot be mapped under max_ram_mb is a memory problem, not a missing package.
            exc = OutOfMemory(oom_message(cause, run.job.max_ram_mb if run.job else None, run.device,
                                          _batch_size(run)))
        _fail(result, RunStatus.FAILED, exc.reason, str(exc))
        code = exc.exit_code
        log.error("%s", exc, exc_info=not isinstance(exc, (BadJob, NoLabels)))
    except BaseException as exc:  # the contract: every ending writes result.json and exit_code
        if ranks.parallel and stop() and not isinstance(exc, (SystemExit, KeyboardInterrupt)):
            # a peer that stopped first left this rank's collective call without a partner
            _fail(result, RunStatus.CANCELLED, Reason.CANCELLED, "Cancelled (SIGTERM) before the run finished")
            code = int(ExitCode.CANCELLED)
        else:
            code = _classify(exc, run, result)
            log.exception("%s", result.message)
    finally:
        result.duration_s = time.monotonic() - started
        if result.status is not RunStatus.SUCCEEDED:
            _safe_event(events, "log", level="error" if code != ExitCode.CANCELLED else "warning",
                        text=result.message or "")
        if ranks.parallel:
            _finish_rank(job_dir, ranks, result, code, events)
        else:
            _finish(job_dir, result, code, events)
    return code


def _world_size(run: _Run, machine: DeviceProbe) -> int:
    job, cls = run.job, run.cls
    if job is None or cls is None:
        return 1
    cuda = machine.cuda_count if job.device in ("auto", "cuda") else 1  # cuda:N names one GPU
    return dataparallel.world_size(run.device, cuda, job.cpu_processes, bool(cls.data_parallel))


def _launch(job_dir: Path, run: _Run, n: int, events: EventWriter, result: Result, stop: StopFlag) -> int:
    """Run the job as ``n`` ranks under torchrun and make their ends the run's one result; returns
    the exit code. A stop request is passed on to torchrun, which passes it to every rank."""
    gpus = dataparallel.visible_gpus(n, os.environ.get("CUDA_VISIBLE_DEVICES"))
    events.log(dataparallel.describe(n, run.device, gpus))
    folder = job_dir / dataparallel.RANKS_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    for old in folder.iterdir():  # a requeued SLURM job runs again in the same folder
        old.unlink()
    events.step(f"starting {n} ranks")
    argv = dataparallel.torchrun_argv(sys.executable, n, job_dir)
    log.info("data-parallel: %s", " ".join(argv))
    with open(str(folder / dataparallel.TORCHRUN_LOG), "ab") as said:  # torchrun's own words, and rank 0's stderr
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=said, stderr=said, start_new_session=True)
    forwarded = False
    while True:
        try:
            torchrun_code = proc.wait(timeout=LAUNCH_POLL_S)
            break
        except subprocess.TimeoutExpired:
            if stop() and not forwarded:
                forwarded = True
                try:
                    proc.send_signal(signal.SIGTERM)
                except OSError:  # it ended between the wait and the signal
                    pass
    ends = dataparallel.read_rank_ends(job_dir, n)
    unfinished = any(end is None or end.status != RunStatus.SUCCEEDED.value for end in ends.values())
    status, reason, message, code = dataparallel.combine(ends, bool(stop()) and unfinished, run.device, gpus,
                                                         torchrun_code)
    main = ends.get(0)
    if main is not None:
        result.metrics.update(main.result.get("metrics") or {})
        result.predictions = int(main.result.get("predictions") or 0)
        result.device = str(main.result.get("device") or result.device)
    result.status = RunStatus(status)
    result.reason = Reason(reason) if reason else None
    result.message = message if status != RunStatus.CANCELLED.value else (
        getattr(stop, "cause", None) or "Cancelled (SIGTERM) before the run finished")
    return code


def _finish_rank(job_dir: Path, ranks: Ranks, result: Result, code: int, events: EventWriter) -> None:
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


def _classify(exc: BaseException, run: _Run, result: Result) -> int:
    """Result fields and exit code for an exception that is not one of ours."""
    if is_out_of_memory(exc):
        max_ram_mb = run.job.max_ram_mb if run.job else None
        failure: WorkerError = OutOfMemory(oom_message(exc, max_ram_mb, run.device, _batch_size(run)))
    elif isinstance(exc, ImportError):  # a trainer's lazy import inside fit or predict
        failure = TrainerImportError(result.trainer or "?", exc, run.cls.requires if run.cls else ())
    elif isinstance(exc, SystemExit):
        failure = WorkerError(f"The trainer exited the worker (sys.exit({exc.code!r})); see stderr.log")
    else:
        failure = WorkerError(f"{type(exc).__name__}: {exc} (traceback in stderr.log)")
    _fail(result, RunStatus.FAILED, failure.reason, str(failure))
    return failure.exit_code


def _batch_size(run: _Run) -> int | None:
    """The run's ``batch_size`` parameter, for an out-of-memory message's fix (None: it has none)."""
    value = run.params.get("batch_size")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _safe_event(events: EventWriter, kind: str, **fields: Any) -> None:
    try:
        events.emit(make_event(kind, **fields))
    except (OSError, ValueError) as exc:  # a full disk must not stop result.json from being tried
        log.warning("could not write a %s event: %s", kind, exc)


def _finish(job_dir: Path, result: Result, code: int, events: EventWriter) -> None:
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
        _append_event(job_dir, make_event("log", level="warning", text=result.message))
        write_result(job_dir, result)
        write_exit_code(job_dir, int(ExitCode.CANCELLED))
    except OSError as exc:
        os.write(2, f"potato worker: cold stop could not write its files: {exc}\n".encode())
    os._exit(int(ExitCode.CANCELLED))


def _append_event(job_dir: Path, event: dict[str, Any]) -> None:
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
        _append_event(job_dir, make_event("log", level="warning", text=message))
    except OSError as exc:
        log.warning("could not write the agent-ended event: %s", exc)
    stop.cause = "The agent that started this worker ended before the run finished; the worker stopped itself"
    if not stop():  # a SIGTERM from the agent already came: a second one would be a cold stop
        signal_own(signal.SIGTERM)
    sleep(grace)
    log.error("the worker did not stop within %g s of its agent's end; SIGKILL", grace)
    signal_own(signal.SIGKILL)


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


if __name__ == "__main__":
    sys.exit(main())
