"""Admin routes under ``/admin``: progress, export, and the labels API.

Every route needs the ``X-API-Key`` header or an admin session (``/admin/login`` with the key).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, redirect, render_template, request, session, url_for

from potato.label_import import Entry, check_entries, compare, span_texts_by_id
from potato.labels import LabelSource, export_lines
from potato.study.participants import Participants, participant_ids
from potato.server import assist, judging
from potato.server.assist.comparison import assist_comparison
from potato.study.groups import AssistGroups
from potato.server.study.roster import current_outcome
from potato.server.auth import admin_required, clean_user_name, key_matches
from potato.server.jsonio import why_not_json
from potato.server.context import current_project
from potato.server.security import (ADMIN_KEY_FAILURES, admin_sessions, client_addr, end_admin_session, safe_next,
                                    throttle)

bp = Blueprint("admin", __name__, url_prefix="/admin")

OUTCOMES = {"in_progress": "in progress", "completed": "completed", "screened_out": "screened out",
            "failed": "failed the training", "no_items": "no items left for them"}
"""How the Progress page names each outcome (the API and the exports give the keys)."""
JUDGE_NOTES = {"started": "The judges are at work; this page shows how far they are when reloaded.",
               "running": "The judges were already at work; nothing new was started.",
               "written": "The report and the judges' labels are written (the files are named below)."}
"""What the judge calibration card says after its buttons."""


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    project = current_project()
    error = None
    if request.method == "POST":
        key = request.form.get("key")
        attempt = throttle(current_app).attempt(ADMIN_KEY_FAILURES, client_addr(),
                                                failed=not key_matches(key, project.config.admin_api_key))
        if attempt.wait is not None:
            error = f"Too many wrong keys from your address; try again in {attempt.wait} seconds."
            page = render_template("admin_login.html", title=project.config.annotation_task_name, error=error)
            return page, 429, {"Retry-After": str(attempt.wait)}
        if not attempt.counted and key is not None:
            session["admin_session"] = admin_sessions(current_app).open_with(key)
            session.permanent = True
            # Only this server's paths: an open redirect would let a link phish the key form.
            return redirect(safe_next(request.args.get("next"), url_for("admin.dashboard")))
        error = "That is not the admin key (admin_api_key in the project config)."
    return render_template("admin_login.html", title=project.config.annotation_task_name, error=error), (
        401 if error else 200
    )


@bp.post("/logout")
def logout() -> Any:
    end_admin_session(current_app)  # the record goes: a copy of the cookie no longer works either
    return redirect(url_for("admin.login"))


def progress_summary() -> dict:
    project = current_project()
    total = len(project.items)
    annotators = project.labels.progress()
    arrived = Participants(project.db).all()
    for row in annotators:  # what each annotator is to label: every item, or their quota, and how it ended
        who = arrived.get(row["user"])
        row["of"] = project.queue.total(row["user"])
        row["outcome"] = current_outcome(project, row["user"], who.outcome if who else None)
        # Links with other ids than the first (a second browser): the first ids are the ones paid by.
        row["later_arrivals"] = [dict(a) for a in who.later_arrivals] if who else []
    llm = assist.helper()
    comparison = assist_comparison(project, llm)
    if comparison is not None:
        groups = AssistGroups(project.db).all()
        for row in annotators:
            row["assist_group"] = groups.get(row["user"])
    judges = judging.summary()
    return {
        "task": project.config.annotation_task_name,
        "items": total,
        "labels": project.labels.count(),
        "annotators": annotators,
        **({"ai_help": llm.status()} if llm is not None else {}),
        **({"assist_holdout": comparison} if comparison is not None else {}),
        **({"judge_calibration": judges} if judges is not None else {}),
    }


@bp.get("/")
@admin_required
def dashboard() -> Any:
    summary = progress_summary()
    return render_template("admin.html", title=summary["task"], summary=summary, outcomes=OUTCOMES,
                           judges_note=JUDGE_NOTES.get(request.args.get("judges", "")))


@bp.get("/api/progress")
@admin_required
def api_progress() -> Any:
    return jsonify(progress_summary())


@bp.get("/api/export")
@admin_required
def api_export() -> Any:
    project = current_project()
    groups = AssistGroups(project.db).all() if project.config.ai_support.holdout is not None else None
    return Response(
        export_lines(project.labels.iter_labels(), participant_ids(project.db), groups),
        mimetype="application/x-ndjson",
        headers={"Content-Disposition": "attachment; filename=labels.jsonl"},
    )


@bp.get("/api/labels")
@admin_required
def api_labels_get() -> Any:
    project = current_project()
    user = request.args.get("user")
    schema = request.args.get("schema")
    labels = [lab.to_json() for lab in project.labels.iter_labels(user=user, schema=schema)]
    return jsonify(labels=labels, count=len(labels))


@bp.post("/api/labels")
@admin_required
def api_labels_post() -> Any:
    """Store labels as if ``user`` had clicked them; a batch with any bad entry stores nothing."""
    project = current_project()
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return jsonify(error='Send a JSON object: {"user": NAME, "labels": [{"id", "schema", "label"}, ...]}'
                             + why_not_json(request.get_data(cache=True)) + '.'), 400
    user = clean_user_name(body.get("user", "")) if isinstance(body.get("user"), str) else None
    if user is None:
        return jsonify(error="'user' must be a name of 1 to 64 printable characters."), 400
    raw = body.get("labels")
    if not isinstance(raw, list):
        return jsonify(error="'labels' must be a list of {\"id\", \"schema\", \"label\"} objects."), 400
    entries: list[Entry] = [Entry(f"labels[{i}]", entry) for i, entry in enumerate(raw)]
    skip_invalid = body.get("skip_invalid", False)
    if not isinstance(skip_invalid, bool):  # "false" is a string, and a string is true
        return jsonify(error=f"'skip_invalid' must be true or false (JSON booleans), not {skip_invalid!r}."), 400
    batch = check_entries(project.config, span_texts_by_id(project.config, project.items), entries, user,
                          LabelSource.IMPORT, items=project.items)
    if batch.problems and not skip_invalid:
        return jsonify(error="Nothing was stored: fix these entries or send skip_invalid: true.",
                       problems=batch.problems), 400
    changes = compare(project.labels.iter_labels(user=user), batch.labels)
    project.labels.touch_user(user)
    project.save_labels(batch.labels)
    return jsonify(stored=len(batch.labels), new=changes.new, changed=changes.changed, unchanged=changes.unchanged,
                   skipped=len(batch.problems), problems=batch.problems)


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
