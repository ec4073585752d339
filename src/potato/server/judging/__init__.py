"""``judge_calibration``'s admin routes: start the judges, follow them, build the report.

The Progress page shows the card (the state, how far the judges are, the figures once the sample is
drawn) with two buttons; the same is under ``/admin/api/judge-calibration`` for scripts.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, current_app, jsonify, redirect, url_for

from potato.server.auth import admin_required
from potato.server.context import Project, current_project
from potato.server.judging.report import calibration_report, write_report
from potato.server.judging.runner import AlreadyRunning, JudgeRunner

bp = Blueprint("judging", __name__, url_prefix="/admin")
EXTENSION = "potato.judges"


def runner(app: Flask | None = None) -> JudgeRunner | None:
    """This app's judges; None unless the project configures judge_calibration."""
    found: JudgeRunner | None = (app or current_app).extensions.get(EXTENSION)
    return found


def summary() -> dict[str, Any] | None:
    """What the Progress page shows; None without judges."""
    found = runner()
    return None if found is None else calibration_report(current_project(), found)


NOT_CONFIGURED = ("This project has no judge_calibration; add judge_calibration: {enabled: true, models: [...]} to its "
                  "config and restart the server.")


def _not_configured() -> Any:
    return jsonify(error=NOT_CONFIGURED), 404


@bp.get("/api/judge-calibration")
@admin_required
def api_status() -> Any:
    found = summary()
    return _not_configured() if found is None else jsonify(found)


@bp.post("/api/judge-calibration/run")
@admin_required
def api_run() -> Any:
    found = runner()
    if found is None:
        return _not_configured()
    try:
        found.start()
    except AlreadyRunning as exc:
        return jsonify(error=f"{str(exc)[:1].upper()}{str(exc)[1:]}."), 409
    body = found.status()
    body.pop("sample", None)  # drawn only at the end; GET names it as sample_items
    return jsonify(body), 202


@bp.post("/api/judge-calibration/report")
@admin_required
def api_report() -> Any:
    found = runner()
    if found is None:
        return _not_configured()
    built, written = write_report(current_project(), found)
    return jsonify(report=built, files=[str(path) for path in written])


@bp.post("/judge-calibration/run")
@admin_required
def form_run() -> Any:
    """The Progress page's button (a form: the page needs no script)."""
    found = runner()
    outcome = "missing"
    if found is not None:
        try:
            found.start()
            outcome = "started"
        except AlreadyRunning:
            outcome = "running"
    return redirect(url_for("admin.dashboard", judges=outcome, _anchor="judge-calibration"))


@bp.post("/judge-calibration/report")
@admin_required
def form_report() -> Any:
    found = runner()
    if found is not None:
        write_report(current_project(), found)
    return redirect(url_for("admin.dashboard", judges="written", _anchor="judge-calibration"))


def init_app(app: Flask, project: Project) -> None:
    jc = project.config.judge_calibration
    if jc is not None:
        app.extensions[EXTENSION] = JudgeRunner(project, jc)
    app.register_blueprint(bp)


def stop(app: Flask) -> None:
    found = runner(app)
    if found is not None:
        found.stop()
