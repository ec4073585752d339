"""The steps of one run inside the worker: prepare (job, limits, trainer, device), then train
(read the bundle, fit, predict every item, score the holdout, write predictions).

Remote-safe: standard library only, Python 3.8 (the trainer imports its own packages). Apart from
:mod:`potato.training.worker`, which turns whatever these steps raise into result.json and an
exit code: here is only the run as it goes when nothing fails. :class:`RunSoFar` carries what
the steps learnt, so that a failure at any point is reported with what was known.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

from potato.training.gpus import dataparallel
from potato.training.job import labels as labelling
from potato.training.worker import spanfields
from potato.training.gpus.dataparallel import SINGLE, Ranks
from potato.training.gpus.devices import DeviceProbe, describe_device, resolve_device
from potato.training.job.events import EventWriter
from potato.training.job.failures import BadJob, Cancelled, NoLabels, TrainerImportError
from potato.training.job.spec import LABELS_FILE, JobItem, JobSpec, LabelRow, read_holdout, read_items, read_job, read_labels
from potato.training.job.schemes import Scheme
from potato.training.job.tracesteps import TRACE_FIELD
from potato.training.job.limits import apply_memory_limit, apply_thread_limit
from potato.training.worker.metrics import score_holdout, trace_scores
from potato.training.worker.predictions import check_prediction
from potato.training.job.results import (
    ARTIFACTS_DIR,
    BUNDLE_DIR,
    PREDICTIONS_FILE,
    Result,
    prediction_row,
    write_predictions,
)
from potato.training.trainers import UnknownTrainer, get_trainer
from potato.training.trainers.base import Prediction, TrainContext, Trainer
from potato.training.worker.stop import StopFlag


class RunSoFar:
    """What the worker has learnt so far about this run; filled in step by step, so that a failure
    at any point is reported with what was known (trainer, device, max_ram_mb)."""

    def __init__(self) -> None:
        self.job: JobSpec | None = None
        self.cls: type[Trainer] | None = None
        self.params: dict[str, Any] = {}
        self.device = "cpu"


def prepare(run: RunSoFar, bundle_dir: Path, events: EventWriter, result: Result, stop: StopFlag,
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


def _marked_fields_only(rows: Sequence[LabelRow], schemas: Sequence[Scheme], events: EventWriter) -> list[LabelRow]:
    """The rows with only the spans in fields their scheme marks: a span marked before the config
    stopped marking its field (a ``span_target`` taken away) is left out with a warning, not trained."""
    marks = {s.name: s.span_fields for s in schemas if s.spans}
    out: list[LabelRow] = []
    dropped: dict[str, int] = {}
    for row in rows:
        fields = marks.get(row.schema)
        spans = labelling.label_spans(row.label) if fields is not None else []
        kept = tuple(s for s in spans if s.field in (fields or ()))
        if len(kept) != len(spans):
            dropped[row.schema] = dropped.get(row.schema, 0) + len(spans) - len(kept)
            row = LabelRow(row.item_id, row.schema, kept, row.user)
        out.append(row)
    for schema, count in dropped.items():
        events.warning(f"Schema '{schema}': {count} span(s) lie in fields it does not mark now "
                       f"({', '.join(repr(f) for f in marks[schema])}); they were left out of training")
    return out


def _check_span_labels(rows: Sequence[LabelRow], items: Sequence[JobItem], schemas: Sequence[Scheme]) -> None:
    """Every span a label row marks lies inside its item's text (or the text of the field it names,
    one its scheme marks): a bundle whose spans do not fit the text the worker trains on is a bad
    job, not a model trained on shifted words."""
    span_schemas = {s.name: s for s in schemas if s.spans}
    if not span_schemas:
        return
    texts = {item.id: item.span_texts for item in items}
    for row in rows:
        spec = span_schemas.get(row.schema)
        if spec is None or row.item_id not in texts:
            continue
        for span in labelling.label_spans(row.label):
            length = len(texts[row.item_id].get(span.field, ""))
            if span.end > length:
                raise BadJob(f"{LABELS_FILE}: a span of schema {row.schema!r} on item {row.item_id!r} ends at "
                             f"{span.end}, past the {'field' if span.field else 'item'}'s text ({length} characters)")


def train(job_dir: Path, run: RunSoFar, events: EventWriter, result: Result, stop: StopFlag,
          ranks: Ranks = SINGLE) -> None:
    """Data, fit, save, predict every item, score the holdout, write predictions. In a data-parallel
    run every rank fits (on its shard) and predicts its share of the items; rank 0 alone saves,
    scores and writes."""
    job, cls = run.job, run.cls
    if job is None or cls is None:
        raise RuntimeError("train called before prepare finished")
    bundle_dir = job_dir / BUNDLE_DIR
    events.step("reading the bundle")
    items = read_items(bundle_dir)
    rows = read_labels(bundle_dir, job)
    holdout = read_holdout(bundle_dir)
    item_ids = {item.id for item in items}
    orphans = sum(1 for row in rows if row.item_id not in item_ids)
    if orphans:
        events.warning(f"{orphans} label(s) name items that are not in items.jsonl; they were ignored")
    rows = _marked_fields_only(rows, job.schemas, events)
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
    trainer.fit(spanfields.split_examples(train, job.schemas) if spanfields.marks_fields(job.schemas) else train)
    events.log(f"fit took {time.monotonic() - started:.2f} s")
    ctx.check_stop()
    if ranks.main:
        events.step("saving the model")
        trainer.save(artifacts_dir)
        ctx.check_stop()
    events.step(f"predicting {len(items)} items")
    share = dataparallel.shard_items(len(items), ranks)
    mine = items[share.start:share.stop]
    part = _predict(trainer, mine, job.schemas)
    parts = dataparallel.gather_to_main(part, ranks)
    if parts is None:  # a rank above 0: its share is with rank 0 now
        return
    raw = [row for rows in parts for row in rows]
    predicted: dict[str, dict[str, Prediction | None]] = {}
    for item, per_schema in zip(items, raw):
        predicted[item.id] = {
            spec.name: check_prediction(spec, per_schema.get(spec.name),
                                        f"item {item.id!r}, schema {spec.name!r}", item.span_texts)
            for spec in job.schemas
        }
    ctx.check_stop()
    events.step("scoring the holdout")
    result.metrics.update(score_holdout(job.schemas, targets, predicted, sorted(holdout)))
    result.metrics.update(trace_scores(job.schemas, items, targets, predicted, holdout))
    for name, value in ctx.metrics.items():  # the trainer's own scores never replace the holdout score
        result.metrics.setdefault(name, value)
    for name in sorted(result.metrics):
        events.metric(name, result.metrics[name])
    events.step("writing predictions")
    _write_predictions(job_dir, job, items, predicted, events, result)


def _predict(trainer: Trainer, items: Sequence[JobItem], schemas: Sequence[Scheme]) -> list[dict[str, Prediction | None]]:
    """The trainer's predictions for ``items``, one per item; where spans mark several fields, the
    trainer predicts each field's text and the spans come back to their item by field."""
    if spanfields.marks_fields(schemas):
        fields = spanfields.fields_of(schemas)
        return spanfields.join_predictions(items, fields, schemas,
                                           trainer.predict(spanfields.split_items(items, fields)))
    part = trainer.predict(items)
    if len(part) != len(items):
        raise ValueError(f"the trainer returned {len(part)} predictions for {len(items)} items")
    return part


def _write_predictions(job_dir: Path, job: JobSpec, items: Sequence[JobItem],
                       predicted: dict[str, dict[str, Prediction | None]], events: EventWriter,
                       result: Result) -> None:
    missing = 0

    def rows() -> Any:
        nonlocal missing
        for item in items:
            for spec in job.schemas:
                if spec.per_step != (TRACE_FIELD in item.fields):
                    continue  # a step question is answered on steps, an item's question on items
                p = predicted[item.id][spec.name]
                if p is None:
                    missing += 1
                    continue
                yield prediction_row(item.id, spec.name, p.label, p.confidence, getattr(p, "probabilities", None))

    result.predictions = write_predictions(job_dir / PREDICTIONS_FILE, rows())
    if missing:
        events.warning(f"The trainer gave no prediction for {missing} (item, schema) pair(s); predictions.jsonl "
                       "leaves them out")
