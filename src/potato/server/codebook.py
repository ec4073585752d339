"""The codebook tray's API: the codes of ``codebook: true`` schemes, and adding one (extensible).

``GET /api/codebook`` is the whole codebook for the tray; ``POST /api/codebook`` adds a code that
every annotator's page takes up with their next item (the item carries the codebook's revision and
the added codes, each with its key where one was free); ``/admin/api/codebook`` is the codebook for
analysis. A code refused is a 4xx whose ``error`` says why and what to do (:class:`CodeRefused`).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, jsonify, request

from potato.codebook import Codebook, CodeLimits, CodeRefused, code_keys, export, revision_of
from potato.server.auth import admin_required, login_required, session_user
from potato.server.context import Project, current_project

bp = Blueprint("codebook", __name__)

FIXED = "This study's codebook is fixed: codes are not added here. Ask the study's admin to add it to the config."
NONE = "This study has no codebook (no scheme says codebook: true)."


def codebook_payload(project: Project) -> dict[str, Any]:
    """What each item brings the page: the revision and the codes added so far, by scheme, each with
    its key ("" where none was free)."""
    added = Codebook(project.db).added()
    keys = code_keys(project.config.annotation_schemes, added)
    return {"mode": project.config.codebook_mode, "revision": revision_of(added),
            "codes": {scheme: [{"name": c.name, "definition": c.definition, "key": keys.get((scheme, c.name), "")}
                               for c in codes]
                      for scheme, codes in added.items()}}


@bp.get("/api/codebook")
@login_required
def show() -> Any:
    return _whole()


def _whole() -> Any:
    project = current_project()
    if not project.config.codebook_mode:
        return jsonify(error=NONE), 404
    return jsonify(export(project.config.annotation_schemes, Codebook(project.db), project.config.codebook_mode))


@bp.post("/api/codebook")
@login_required
def add() -> Any:
    project = current_project()
    mode = project.config.codebook_mode
    if mode is None:
        return jsonify(error=NONE), 404
    if mode != "extensible":
        return jsonify(error=FIXED), 403
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return jsonify(error='Send a JSON object: {"scheme": ..., "name": ..., "definition": ...}.'), 400
    codebook = Codebook(project.db)
    try:
        code = codebook.add(project.config.annotation_schemes, body.get("scheme"), body.get("name"),
                            body.get("definition"), session_user(), CodeLimits.of(project.config))
    except CodeRefused as refused:
        return jsonify(error=str(refused)), refused.status
    key = code_keys(project.config.annotation_schemes, codebook.added()).get((code.scheme, code.name), "")
    return jsonify(code={**code.to_json(), "key": key}, revision=code.revision), 201


@bp.get("/admin/api/codebook")
@admin_required
def admin_show() -> Any:
    return _whole()


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
