"""``GET /healthz``: is this server able to serve? For container healthchecks and load balancers.

Open to anyone (a probe has no key) and says nothing a visitor could use: no paths, no counts,
no config. It answers 200 only when the database answers a query, so a server whose disk went
read-only or whose database file is locked away fails its healthcheck instead of looking alive.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from flask import Blueprint, Flask, jsonify

import potato
from potato.server.context import current_project

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Any:
    try:
        current_project().db.conn.execute("SELECT 1").fetchone()
    except sqlite3.Error:
        response = jsonify(ok=False, error="the database does not answer")
        response.status_code = 503
    else:
        response = jsonify(ok=True, version=potato.__version__)
    response.headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
