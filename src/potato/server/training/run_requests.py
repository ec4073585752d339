"""Starting a run: what a start-run request must be, the source a calibration refines, the
automatic retraining, and what the start form shows (trainers' parameters, the label summary).
Pure or database-only: the training page's routes and the auto-retrain hook call it.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from potato.config.schema import Config
from potato.errors import PotatoError
from potato.project import Project
from potato.server.jsonio import jsonl_objects
from potato.server.training.runs import bundle
from potato.server.training.backends import backend_for
from potato.server.training.runs.stepitems import StepQuestions
from potato.server.training.runs.store import Run, RunState, RunStore, Trigger
from potato.training.job.failures import BadJob
from potato.training.job.labels import aggregate, class_labels, label_names
from potato.training.trainers import CLASSIFIES, available_trainers, get_trainer

CALIBRATE = "decision-calibrate"
MIN_PER_CLASS = 5
"""Below this many labelled items in a class the form warns: the holdout score then says little."""


class RunRequestError(PotatoError):
    """A start-run request the server refuses: ``status`` is the HTTP answer, the message the fix."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.extra = extra


def check_run_request(config: Config, body: object, trainers: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[str], str, dict[str, Any]]:
    """(trainer, schemas, backend, params) from a start-run body, or RunRequestError (pure)."""
    mt = config.model_training
    if not isinstance(body, dict):
        raise RunRequestError(400, 'Send a JSON object: {"trainer": ..., "schemas": [...], "backend": ...}.')
    if not mt.enabled:
        raise RunRequestError(409, "Training is off for this project: set model_training.enabled: true "
                              "in the config and restart the server.")
    backends = mt.all_backends()
    backend = body.get("backend") or mt.backend
    if not isinstance(backend, str) or backend not in backends:
        raise RunRequestError(409, f"Backend {backend!r} is not in the config. Backends: {', '.join(backends)}.",
                              backends=list(backends))
    trainer = body.get("trainer") or mt.trainer
    if not isinstance(trainer, str) or trainer not in trainers:
        raise RunRequestError(400, f"Unknown trainer {trainer!r}. Trainers: {', '.join(sorted(trainers))}.")
    if trainers[trainer].get("local_only") and not backend_for(backends[backend]).on_this_machine:
        raise RunRequestError(400, f"Trainer '{trainer}' runs only on the local backend: it reads the server's "
                              "run folders. Pick backend 'local'.")
    trainable = [s.name for s in config.annotation_schemes if s.training_type]
    schemas = body.get("schemas") or list(mt.writeback.schemas) or trainable[:1]
    if not isinstance(schemas, list) or not schemas or any(s not in trainable for s in schemas):
        raise RunRequestError(400, f"Schemas {schemas!r} cannot be trained. Trainable schemas: {', '.join(trainable)}.")
    kinds = {s.name: s.training_type for s in config.annotation_schemes}
    learns = trainers[trainer].get("annotation_types", CLASSIFIES)
    for schema in schemas:
        if kinds[schema] not in learns:
            fit = sorted(name for name, t in trainers.items() if kinds[schema] in t.get("annotation_types", CLASSIFIES))
            raise RunRequestError(400, f"Trainer '{trainer}' learns {' and '.join(learns)} schemes, and {schema!r} "
                                  f"is a {kinds[schema]} scheme. Trainers for it: {', '.join(fit)}.")
    params = body.get("params") or {}
    if not isinstance(params, dict):
        raise RunRequestError(400, "'params' must be an object of trainer parameters.")
    merged = dict(mt.trainer_params.get(trainer, {}))
    merged.update(params)
    checked = dict(merged)
    if trainer == CALIBRATE:
        if "source_predictions" in params:
            raise RunRequestError(400, f"'{CALIBRATE}' takes the run to recalibrate as source_run: <run id> (a "
                                  "succeeded run of this server), not a file path.")
        source = checked.pop("source_run", None)
        if source is not None and not isinstance(source, str):
            raise RunRequestError(400, "'source_run' must be a run id, e.g. \"20261201-120000-ab12\".")
        checked["source_predictions"] = "the source run's predictions.jsonl"
    try:  # the worker checks them again; a bad one is a 400 now, not a failed run later
        get_trainer(trainer).validate_params(checked)
    except BadJob as exc:
        raise RunRequestError(400, str(exc)) from None
    return trainer, list(dict.fromkeys(schemas)), backend, merged


SOURCE_RUN_HELP = "the id of a succeeded run of this server to recalibrate (default: the newest)"


def as_requested(trainer: dict[str, Any]) -> dict[str, Any]:
    """A trainer's entry with the parameters a start-run request takes (pure): decision-calibrate's
    worker reads ``source_predictions``, a path on the server, which a request may not give (400);
    a request names the run instead, as ``source_run``."""
    if trainer.get("name") != CALIBRATE:
        return trainer
    params = {name: text for name, text in (trainer.get("params") or {}).items() if name != "source_predictions"}
    shown = [name for name in trainer.get("shown") or () if name != "source_predictions"]
    return {**trainer, "params": {"source_run": SOURCE_RUN_HELP, **params}, "shown": ["source_run", *shown]}


def trainer_table() -> dict[str, dict[str, Any]]:
    """Registered trainers by name, as JSON-ready dicts (page, API and request checks), each with the
    parameters a request takes (:func:`as_requested`)."""
    return {t.name: as_requested(asdict(t)) for t in available_trainers()}


def predicts(path: Path, schemas: list[str]) -> bool:
    """Whether ``path`` holds a prediction for each of ``schemas``: a run may succeed having predicted
    none for a schema (its predictions were empty, or its trainer skipped it), and a calibration of it
    would have nothing to fit. Read until every schema has been seen, so a large file costs little."""
    wanted = set(schemas)
    try:
        for row in jsonl_objects(path):
            wanted.discard(row.get("schema"))
            if not wanted:
                return True
    except OSError:
        return False
    return False


def calibration_source(store: RunStore, schemas: list[str], run_id: str | None) -> str:
    """The predictions ``decision-calibrate`` refines: those of run ``run_id``, or of the newest
    succeeded run that covers ``schemas`` and is not itself a calibration (its confidences were fitted
    on the labels a new calibration would fit on); only this server's own runs, never a path from a request."""
    if run_id is None:
        candidates = [r for r in store.list() if r.trainer != CALIBRATE]
    else:
        candidates = [r for r in [store.get(run_id)] if r is not None]
    for run in candidates:
        path = store.run_dir(run.id) / "predictions.jsonl"
        if run.state is RunState.SUCCEEDED and set(schemas) <= set(run.schemas) and predicts(path, schemas):
            return str(path)
    if run_id is not None:
        raise RunRequestError(400, f"source_run {run_id!r} is not a succeeded run of this server with predictions "
                              f"for {', '.join(schemas)}; pick one from the runs list.")
    raise RunRequestError(400, f"'{CALIBRATE}' recalibrates an earlier run's predictions, and no run on "
                          f"{', '.join(schemas)} has succeeded yet. Train a model first.")


def start_run(project: Project, store: RunStore, body: object, trigger: Trigger = Trigger.MANUAL) -> Run:
    """Queue the run a request asks for. A person's request is refused (409) when its backend knows
    the run would fail before training (the local backend, its trainer's packages missing from the
    server's Python); an automatic run is queued all the same, and its failure on the runs list is
    how the admin learns of it."""
    trainers = trainer_table()
    trainer, schemas, backend, params = check_run_request(project.config, body, trainers)
    if trigger is Trigger.MANUAL:
        settings = project.config.model_training.all_backends()[backend]
        problem = backend_for(settings).cannot_train(trainer, trainers[trainer]["requires"])
        if problem:
            raise RunRequestError(409, problem)
    if trainer == CALIBRATE:
        params["source_predictions"] = calibration_source(store, schemas, params.pop("source_run", None))
    return store.create(trainer, schemas, backend, params, trigger=trigger)


def form_params(trainer: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A trainer's parameters as the start form asks for them (an entry of :func:`trainer_table`, so
    decision-calibrate's source is a run id): help text, and whether required."""
    params = dict(trainer.get("params") or {})
    shown = set(trainer.get("shown") or ())
    required = set(trainer.get("required") or ())
    return {name: {"help": text, "required": name in required, "shown": name in shown}
            for name, text in params.items()}


def trainer_menu_label(name: str, missing: Sequence[str]) -> str:
    """The trainer menu's text for ``name`` while a backend on this machine is picked: with the pip
    packages this server's Python lacks, e.g. ``hf-text-classification (needs torch, transformers: not
    installed here)``, so the menu tells before a pick, a Check or a refused Start does (pure). The
    trainer stays selectable: the form then names the command that installs them."""
    return f"{name} (needs {', '.join(missing)}: not installed here)" if missing else name


def label_summary(project: Project) -> dict[str, dict[str, Any]]:
    """For each trainable scheme, what a run on it trains on, so that a run on five labels is not
    started blind: ``items`` (distinct labelled items), ``classes`` ([label, items] pairs in the
    scheme's order, each item counted by the label a run trains on, see
    :func:`potato.training.job.labels.aggregate`), ``disagree`` (items whose annotators gave different
    answers), ``none`` (multiselect items whose trained answer has no label, span items with nothing
    marked) and ``kind``. A span scheme's classes count the items with a span of each label; a
    question asked on each step counts steps (``kind_of_items``: ``steps``), as its run learns them."""
    labels, _ = project.training_labels()
    out: dict[str, dict[str, Any]] = {}
    for scheme in project.config.annotation_schemes:
        if scheme.training_type is None:
            continue
        specs = bundle.job_schemes(project.config, [scheme.name])
        answers = bundle.training_answers(specs, bundle.label_rows([scheme.name], project.items, labels,
                                                                   StepQuestions.of(project.config, [scheme.name])))
        if not answers:
            continue
        targets = aggregate(answers, specs)
        given: dict[str, set[object]] = {}
        for row in answers:
            given.setdefault(row.item_id, set()).add(row.label)
        per_label: dict[str, int] = {}
        none = 0
        for per_schema in targets.values():
            target = per_schema[scheme.name]
            chosen = set(label_names(target))  # a label a span scheme marks twice on one item counts once
            none += not chosen
            for label in chosen:
                per_label[label] = per_label.get(label, 0) + 1
        out[scheme.name] = {
            "kind": scheme.training_type,
            "kind_of_items": "steps" if scheme.learnt_by_step else "items",
            "items": len(targets),
            "classes": [[label, per_label[label]] for label in class_labels(specs[0], targets) if label in per_label],
            "disagree": sum(1 for votes in given.values() if len(votes) > 1),
            "none": none,
        }
    return out


def auto_retrain(project: Project, store: RunStore) -> Run | None:
    """Queue a run once ``every_n_labels`` labels arrived since the last automatic run (one
    waiting automatic run is enough); None when none is due."""
    ar = project.config.model_training.auto_retrain
    conn = project.db.conn
    row = conn.execute("SELECT value FROM meta WHERE key = 'auto_retrain:since'").fetchone()
    since = float(row[0]) if row else 0.0
    new = conn.execute("SELECT COUNT(*) FROM labels WHERE updated_at > ?", (since,)).fetchone()[0]
    if new < ar.every_n_labels:
        return None
    if any(r.trigger is Trigger.AUTO for r in store.in_states([RunState.QUEUED])):
        return None
    if ar.min_items and labelled_items(project, ar.schemas, ar.min_annotations_per_item) < ar.min_items:
        return None  # too few labelled items for a first model (active learning's min_instances_for_training)
    now = time.time()
    project.db.write([("INSERT OR REPLACE INTO meta (key, value) VALUES ('auto_retrain:since', ?)", (str(now),))])
    body = {"trainer": ar.trainer, "schemas": list(ar.schemas) or None,
            "backend": ar.backend or project.config.model_training.backend}
    return start_run(project, store, body, trigger=Trigger.AUTO)


COLD_START_KEY = "active_learning:cold_start"


def cold_start(project: Project, store: RunStore) -> Run | None:
    """Active learning's cold start (upstream's ``cold_start_strategy: llm``): one llm-zero-shot run,
    queued the first time the server starts with it, whose predictions order the items and suggest
    labels before anyone has labelled. Each gunicorn worker asks; the first to claim the key queues
    it. None when it is off or was queued before (a server restart does not queue it again)."""
    al = project.config.active_learning
    if not (al.enabled and al.cold_start):
        return None
    claim = f"{os.getpid()}:{time.time()!r}"
    project.db.write([("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (COLD_START_KEY, claim))])
    row = project.db.conn.execute("SELECT value FROM meta WHERE key = ?", (COLD_START_KEY,)).fetchone()
    if row is None or row[0] != claim:
        return None
    body = {"trainer": "llm-zero-shot", "schemas": list(al.schemas) or None, "params": dict(al.cold_start_params),
            "backend": al.backend or project.config.model_training.backend}
    return start_run(project, store, body, trigger=Trigger.AUTO)


def labelled_items(project: Project, schemas: Sequence[str], annotators: int = 1) -> int:
    """Items with labels from at least ``annotators`` people on any of ``schemas`` (all trainable
    schemes when none are named)."""
    names = list(schemas) or [s.name for s in project.config.annotation_schemes if s.training_type]
    marks = ", ".join("?" * len(names))
    row = project.db.conn.execute(
        f"SELECT COUNT(*) FROM (SELECT item_id FROM labels WHERE schema IN ({marks}) GROUP BY item_id "
        "HAVING COUNT(DISTINCT user) >= ?)", (*names, annotators)).fetchone()
    return int(row[0])
