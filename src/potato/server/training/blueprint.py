"""The training page and API under ``/admin/training`` (R9, R10, C5-C7), and the server's wiring.

``init_app`` registers the blueprint, fills the project's writeback and auto-retrain seams and
starts this process's dispatcher thread.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Any, Mapping

from flask import (
    Blueprint,
    Flask,
    Response,
    abort,
    current_app,
    jsonify,
    make_response,
    render_template,
    request,
)

from potato.config.schema import Config
from potato.server.auth import admin_required
from potato.server.jsonio import why_not_json
from potato.server.project import Project, current_project
from potato.server.training import agent_api, bundle
from potato.server.training.backends import UnknownBackend, backend_for, backend_named, backends_of
from potato.server.training.backends.agent import agent_entries, explain_queued
from potato.server.training.dispatcher import Dispatcher
from potato.server.training.runs import Run, RunState, RunStore
from potato.server.training.writeback import run_suggestions, shown_runs, suggestions_for
from potato.training.jobfiles import tail
from potato.training.failures import BadJob
from potato.training.labels import aggregate, class_labels
from potato.training.trainers import available_trainers, get_trainer

bp = Blueprint("training", __name__, url_prefix="/admin/training")


CALIBRATE = "decision-calibrate"
MIN_PER_CLASS = 5
"""Below this many labelled items in a class the form warns: the holdout score then says little."""


class RunRequestError(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.extra = extra


def check_run_request(config: Config, body: object, trainers: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[str], str, dict[str, Any]]:
    """(trainer, schemas, backend, params) from a start-run body, or RunRequestError (pure, R10)."""
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


def _store() -> RunStore:
    store: RunStore = current_app.extensions["potato.runs"]
    return store


def trainer_table() -> dict[str, dict[str, Any]]:
    """Registered trainers by name, as JSON-ready dicts (page, API and request checks)."""
    return {t.name: asdict(t) for t in available_trainers()}


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
        if run.state is RunState.SUCCEEDED and set(schemas) <= set(run.schemas) and path.exists():
            return str(path)
    if run_id is not None:
        raise RunRequestError(400, f"source_run {run_id!r} is not a succeeded run of this server with predictions "
                              f"for {', '.join(schemas)}; pick one from the runs list.")
    raise RunRequestError(400, f"'{CALIBRATE}' recalibrates an earlier run's predictions, and no run on "
                          f"{', '.join(schemas)} has succeeded yet. Train a model first.")


def start_run(project: Project, store: RunStore, body: object, trigger: str = "manual") -> Run:
    trainer, schemas, backend, params = check_run_request(project.config, body, trainer_table())
    if trainer == CALIBRATE:
        params["source_predictions"] = calibration_source(store, schemas, params.pop("source_run", None))
    return store.create(trainer, schemas, backend, params, trigger=trigger)


def form_params(trainer: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A trainer's parameters as the start form asks for them: help text, and whether required.
    decision-calibrate names its source by run id (a request never gives a path)."""
    params = dict(trainer.get("params") or {})
    if trainer.get("name") == CALIBRATE:
        params.pop("source_predictions", None)
        params = {"source_run": "the id of a succeeded run of this server to recalibrate (default: the newest)",
                  **params}
    shown = set(trainer.get("shown") or ())
    return {name: {"help": text, "required": text.endswith("(required)"), "shown": name in shown}
            for name, text in params.items()}


def label_summary(project: Project) -> dict[str, dict[str, Any]]:
    """For each trainable scheme, what a run on it trains on, so that a run on five labels is not
    started blind: ``items`` (distinct labelled items), ``classes`` ([label, items] pairs in the
    scheme's order, each item counted by the label a run trains on, see
    :func:`potato.training.labels.aggregate`), ``disagree`` (items whose annotators gave different
    answers), ``none`` (multiselect items whose trained answer has no label) and ``kind``."""
    labels = list(project.labels.iter_labels())
    out: dict[str, dict[str, Any]] = {}
    for scheme in project.config.annotation_schemes:
        if scheme.training_type not in ("radio", "multiselect"):
            continue
        specs = bundle.scheme_specs(project.config, [scheme.name])
        answers = bundle.training_answers(specs, bundle.label_rows([scheme.name], project.items, labels))
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
            chosen = target if isinstance(target, tuple) else (target,)
            none += not chosen
            for label in chosen:
                per_label[label] = per_label.get(label, 0) + 1
        out[scheme.name] = {
            "kind": scheme.training_type,
            "items": len(targets),
            "classes": [[label, per_label[label]] for label in class_labels(specs[0], targets) if label in per_label],
            "disagree": sum(1 for votes in given.values() if len(votes) > 1),
            "none": none,
        }
    return out


@bp.get("/")
@admin_required
def page() -> Any:
    project = current_project()
    mt = project.config.model_training
    drivers = backends_of(project.config)
    backends = [{"name": name, "label": b.describe(), "type": b.type, "here": b.on_this_machine}
                for name, b in drivers.items()]
    trainable = [s.name for s in project.config.annotation_schemes if s.training_type]
    trainers = [{**t, "form_params": form_params(t)} for t in trainer_table().values()]
    return render_template(
        "training.html", title=project.config.annotation_task_name, backends=backends,
        default_backend=mt.backend, trainers=trainers, default_trainer=mt.trainer,
        schemas=trainable, default_schemas=list(mt.writeback.schemas) or trainable[:1],
        has_agents=any(b.claimed_by_agents for b in drivers.values()),
        label_summary=label_summary(project), min_confidence=mt.writeback.min_confidence,
        min_per_class=MIN_PER_CLASS,
    )


@bp.get("/api/backends")
@admin_required
def api_backends() -> Any:
    mt = current_project().config.model_training
    return jsonify(default=mt.backend, backends=[
        {"name": n, "type": b.type, "label": b.describe()}
        for n, b in mt.all_backends().items()
    ])


@bp.post("/api/backends/<name>/check")
@admin_required
def api_check(name: str) -> Any:
    """The page's Check button: the same check as ``potato training check`` (R9, R12)."""
    config = current_project().config
    try:
        backend = backend_named(config, name)
    except UnknownBackend as exc:
        return jsonify(error=str(exc)), 409
    return jsonify(backend.check(config).to_json())


@bp.get("/api/agents")
@admin_required
def api_agents() -> Any:
    return jsonify(agents=agent_entries(current_project().config, current_app.extensions["potato.agent_tokens"],
                                        _store()))


@bp.get("/api/trainers")
@admin_required
def api_trainers() -> Any:
    return jsonify(trainers=list(trainer_table().values()))


@bp.post("/api/runs")
@admin_required
def api_start() -> Any:
    try:
        run = start_run(current_project(), _store(), request.get_json(silent=True))
    except RunRequestError as exc:
        problem = why_not_json(request.get_data(cache=True)) if exc.status == 400 else ""
        message = f"{str(exc).rstrip('.')}{problem}." if problem else str(exc)
        return jsonify(error=message, **exc.extra), exc.status
    explain_queued(current_project().config, _store(), [run])
    return jsonify(run.to_json()), 201


@bp.get("/api/runs")
@admin_required
def api_list() -> Any:
    runs = _store().list()
    explain_queued(current_project().config, _store(), runs)
    return jsonify(runs=[r.to_json() for r in runs])


def _run_or_404(run_id: str) -> Run:
    run = _store().get(run_id)
    if run is None:
        abort(make_response(jsonify(error=f"No run {run_id!r}."), 404))
    return run


@bp.get("/api/runs/<run_id>")
@admin_required
def api_get(run_id: str) -> Any:
    run = _run_or_404(run_id)
    explain_queued(current_project().config, _store(), [run])
    body = run.to_json()
    body["log_tail"] = tail(_store().run_dir(run_id) / "run.log")
    return jsonify(body)


@bp.post("/api/runs/<run_id>/cancel")
@admin_required
def api_cancel(run_id: str) -> Any:
    _run_or_404(run_id)
    run = _store().request_cancel(run_id)
    return jsonify(run.to_json() if run else {}), 202


@bp.get("/api/runs/<run_id>/log")
@admin_required
def api_log(run_id: str) -> Any:
    _run_or_404(run_id)
    path = _store().run_dir(run_id) / "run.log"
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return Response(text, mimetype="text/plain")


@bp.get("/api/runs/<run_id>/events")
@admin_required
def api_events(run_id: str) -> Any:
    """Worker events after line ``after`` (the page's loss chart polls this)."""
    _run_or_404(run_id)
    try:
        after = max(0, int(request.args.get("after", "0")))
    except ValueError:
        after = 0
    path = _store().run_dir(run_id) / "events.jsonl"
    events: list[dict[str, Any]] = []
    count = 0
    if path.exists():
        with path.open(encoding="utf-8") as fh:
            for count, line in enumerate(fh, start=1):
                if count > after:
                    try:
                        events.append(json.loads(line))
                    except ValueError:
                        continue
    return jsonify(events=events, next=max(count, after))


@bp.get("/api/runs/<run_id>/suggestions")
@admin_required
def api_suggestions(run_id: str) -> Any:
    _run_or_404(run_id)
    project = current_project()
    rows = run_suggestions(project, run_id)
    if request.args.get("format") == "jsonl":
        return Response((json.dumps(r) + "\n" for r in rows), mimetype="application/x-ndjson",
                        headers={"Content-Disposition": f"attachment; filename=suggestions-{run_id}.jsonl"})
    items = list(rows)
    return jsonify(suggestions=items, count=len(items), shown=shown_runs(project))


# -- wiring -------------------------------------------------------------------------------------

def _auto_retrain_hook(app: Flask, project: Project, store: RunStore) -> Any:
    """C7: queue a run once ``every_n_labels`` labels arrived since the last automatic run."""
    ar = project.config.model_training.auto_retrain

    def on_saved(count: int) -> None:
        conn = project.db.conn
        row = conn.execute("SELECT value FROM meta WHERE key = 'auto_retrain:since'").fetchone()
        since = float(row[0]) if row else 0.0
        new = conn.execute("SELECT COUNT(*) FROM labels WHERE updated_at > ?", (since,)).fetchone()[0]
        if new < ar.every_n_labels:
            return
        if any(r.trigger == "auto" for r in store.in_states([RunState.QUEUED])):
            return  # one waiting automatic run is enough
        now = time.time()
        project.db.write([("INSERT OR REPLACE INTO meta (key, value) VALUES ('auto_retrain:since', ?)", (str(now),))])
        body = {"trainer": ar.trainer, "schemas": list(ar.schemas) or None,
                "backend": ar.backend or project.config.model_training.backend}
        try:
            start_run(project, store, body, trigger="auto")
        except RunRequestError as exc:
            app.logger.warning("auto_retrain could not start a run: %s", exc)

    return on_saved


def init_app(app: Flask) -> None:
    project: Project = app.extensions["potato"]
    store = RunStore(project.db, project.config.training_dir / "runs")
    app.extensions["potato.runs"] = store
    app.register_blueprint(bp)
    agent_api.init_app(app, int(app.config.get("POTATO_LONG_POLL_SLOTS", 2)))
    if project.config.model_training.writeback.schemas:
        project.suggestions_for = lambda item_id: suggestions_for(project, item_id)
    if project.config.model_training.auto_retrain.enabled:
        project.on_labels_saved = _auto_retrain_hook(app, project, store)
    dispatcher = Dispatcher(project, store, app.config.get("POTATO_AGENT_URL"))
    app.extensions["potato.dispatcher"] = dispatcher
    if not app.config.get("POTATO_NO_DISPATCHER"):
        # Started lazily per process: gunicorn forks after create_app, and threads do not survive a fork.
        app.before_request(dispatcher.ensure_started)


def start_dispatcher(app: Flask) -> None:
    """Start this process's dispatcher thread (gunicorn's post_worker_init, or ``--dev``)."""
    dispatcher: Dispatcher | None = app.extensions.get("potato.dispatcher")
    if dispatcher is not None and not app.config.get("POTATO_NO_DISPATCHER"):
        dispatcher.ensure_started()


def stop_dispatcher(app: Flask) -> None:
    """gunicorn's worker_exit: stop the dispatcher thread and any worker it supervises."""
    dispatcher: Dispatcher | None = app.extensions.get("potato.dispatcher")
    if dispatcher is not None:
        dispatcher.stop()
