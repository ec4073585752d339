"""The training page and API under ``/admin/training``, and the server's wiring.

``init_app`` registers the blueprint, fills the project's writeback and auto-retrain seams and
starts this process's dispatcher thread.
"""

from __future__ import annotations

import json
from typing import Any

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

from potato.server.auth import admin_required
from potato.server.jsonio import why_not_json
from potato.server.context import Project, current_project
from potato.server.training.agent_protocol import routes as agent_api
from potato.server.training.outputs import hubpush
from potato.server.training.runs import activelearning
from potato.server.training.backends import UnknownBackend, backend_named, backends_of
from potato.server.training.backends.agent import agent_entries, explain_queued
from potato.server.training.outputs.curve import learning_curve
from potato.server.training.dispatcher import Dispatcher
from potato.server.training.run_requests import (
    MIN_PER_CLASS,
    RunRequestError,
    auto_retrain,
    cold_start,
    form_params,
    label_summary,
    start_run,
    trainer_menu_label,
    trainer_table,
)
from potato.server.training.runs.store import Run, RunStore
from potato.server.training.runs.writeback import run_suggestions, shown_runs, suggestions_for
from potato.training.job.files import tail

bp = Blueprint("training", __name__, url_prefix="/admin/training")


def _store() -> RunStore:
    store: RunStore = current_app.extensions["potato.runs"]
    return store


@bp.get("/")
@admin_required
def page() -> Any:
    project = current_project()
    mt = project.config.model_training
    drivers = backends_of(project.config)
    backends = [{"name": name, "label": b.describe(), "type": b.type, "here": b.on_this_machine}
                for name, b in drivers.items()]
    trainable = [s.name for s in project.config.annotation_schemes if s.training_type]
    kinds = project.config.training_kinds()
    here = next((b for b in drivers.values() if b.on_this_machine), None)
    trainers = [{**t, "form_params": form_params(t),
                 "cannot_here": here.cannot_train(t["name"], t["requires"]) if here is not None else None,
                 "label_here": trainer_menu_label(t["name"], here.packages_missing(t["requires"]) if here else [])}
                for t in trainer_table().values() if kinds & set(t["annotation_types"])]
    default_here = mt.backend in drivers and drivers[mt.backend].on_this_machine
    return render_template(
        "training.html", title=project.config.annotation_task_name, backends=backends,
        default_backend=mt.backend, default_here=default_here, trainers=trainers, default_trainer=mt.trainer,
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
    """The page's Check button: the same check as ``potato training check``."""
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


@bp.get("/api/learning-curve")
@admin_required
def api_learning_curve() -> Any:
    return jsonify(series=learning_curve(_store().list()))


@bp.get("/api/active-learning")
@admin_required
def api_active_learning() -> Any:
    """Whether items go to annotators most uncertain first, and by which run's predictions."""
    return jsonify(activelearning.current(current_project()))


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


@bp.get("/api/runs/<run_id>/push")
@admin_required
def api_push_state(run_id: str) -> Any:
    """The run's last push to the Hugging Face Hub, and what a new one would take."""
    run = _run_or_404(run_id)
    return jsonify(hubpush.status(current_project(), _store(), run))


@bp.post("/api/runs/<run_id>/push")
@admin_required
def api_push(run_id: str) -> Any:
    """Push the run's model and a model card to the Hub in one commit, in a thread; 202 with its state."""
    run = _run_or_404(run_id)
    data = request.get_data(cache=True)
    body = request.get_json(silent=True) if data.strip() else None
    if data.strip() and not isinstance(body, dict):
        problem = why_not_json(data)
        return jsonify(error='Send a JSON object: {"repo_id": "my-lab/my-model", "private": true, '
                             f'"commit_message": "..."}}, each field optional{problem}.'), 400
    try:
        state = hubpush.start(current_project(), _store(), run, body)
    except hubpush.PushRefused as exc:
        return jsonify(error=str(exc)), exc.status
    return jsonify(state), 202


# -- wiring -------------------------------------------------------------------------------------

def _auto_retrain_hook(app: Flask, project: Project, store: RunStore) -> Any:
    """Queue a run once ``every_n_labels`` labels arrived since the last automatic run."""

    def on_saved(count: int) -> None:
        try:
            auto_retrain(project, store)
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
    try:
        cold_start(project, store)
    except RunRequestError as exc:
        app.logger.warning("active learning's cold start could not start a run: %s", exc)
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
