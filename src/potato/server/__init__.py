"""The Flask app factory. Each area (annotation, admin, training) is a blueprint with ``init_app``."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any, Mapping

from flask import Flask, jsonify, request
from werkzeug.exceptions import HTTPException

from potato.config.schema import Config
from potato.db import disk_full
from potato.project import Project
from potato.server import admin, annotate, assist, autoexport, codebook, context, health, judging, media, security
from potato.server.study import crowd
from potato.server.study import pages as study
from potato.server.jsonio import StrictJSONProvider
from potato.server.training import blueprint as training_server
from potato.server.training.agent_protocol.routes import error_code as agent_error_code


def create_app(config: Config, overrides: Mapping[str, Any] | None = None) -> Flask:
    """Build the app for one project. Loads items and opens the database; a bad data file raises."""
    app = Flask(__name__)
    app.json = StrictJSONProvider(app)
    app.config.update(
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=timedelta(days=config.access.session_lifetime_days),
        # Re-signing the cookie on every label cost ~11% of a request (bench/annotators.py).
        SESSION_REFRESH_EACH_REQUEST=False,
        JSON_SORT_KEYS=False,
        MAX_CONTENT_LENGTH=64 * 1024 * 1024,
    )
    if overrides:
        app.config.update(overrides)
    proj = Project.open(config)
    context.init_app(app, proj)
    autoexport.init_app(app, proj)
    security.init_app(app, proj)
    health.init_app(app)
    annotate.init_app(app)
    media.init_app(app)
    crowd.init_app(app, proj)
    study.init_app(app)
    codebook.init_app(app)
    admin.init_app(app)
    training_server.init_app(app)
    assist.init_app(app, proj)
    judging.init_app(app, proj)

    @app.errorhandler(sqlite3.OperationalError)
    @app.errorhandler(OSError)
    def _disk_full(exc: Exception) -> Any:
        if not disk_full(exc):
            raise exc
        app.logger.error("the disk is full: %s", exc)
        return jsonify(error="The server's disk is full; nothing was stored. Tell the study's admin."), 507

    @app.errorhandler(500)
    def _server_error(exc: Exception) -> Any:
        """A script or the page reads JSON from the API routes, an unexpected failure included."""
        if request.path.startswith(API_PREFIXES):
            return jsonify(error="The server failed on this request; its log says why. Try again, or tell the "
                                 "study's admin."), 500
        return exc

    @app.errorhandler(404)
    @app.errorhandler(405)
    def _no_route(exc: HTTPException) -> Any:
        """A path or method that no route serves: scripts and agents read JSON there too, never the
        framework's HTML page (the agent protocol's errors carry a ``code`` as well)."""
        allowed = exc.get_headers()
        said = (f"No route answers {request.method} {request.path[:200]}"
                + (f" (this path takes {dict(allowed).get('Allow')})" if exc.code == 405 else "")
                + ": check the path and method against the API's documentation.")
        if request.path.startswith(AGENT_PREFIX):
            response = jsonify(error=said, code=agent_error_code(exc.code or 404))
        elif request.path.startswith(API_PREFIXES):
            response = jsonify(error=said)
        else:
            return exc
        response.status_code = exc.code or 404
        if exc.code == 405:
            response.headers["Allow"] = dict(allowed).get("Allow", "")
        return response

    @app.errorhandler(413)
    def _too_large(exc: Exception) -> Any:
        limit = request.max_content_length or 0
        return jsonify(error=f"The request is larger than this route takes ({limit // 1024} KB); nothing was stored."), 413

    icon = (Path(__file__).parent / "static" / "favicon.svg").read_bytes()

    @app.get("/favicon.ico")
    def _favicon() -> Any:  # browsers ask for it on every first visit
        return icon, 200, {"Content-Type": "image/svg+xml", "Cache-Control": "public, max-age=86400"}

    @app.context_processor
    def _nav() -> dict:
        return {"has_training": "training" in app.blueprints}

    return app


API_PREFIXES = ("/api/", "/admin/api/", "/admin/training/api/")
AGENT_PREFIX = "/training/agent/"
"""Routes whose answers are JSON, errors included (the agent protocol has its own handler)."""


def close_app(app: Flask) -> None:
    """Stop this app's dispatcher thread, then close its database connections (tests, embedding)."""
    dispatcher = app.extensions.get("potato.dispatcher")
    if dispatcher is not None:
        dispatcher.stop()
    autoexport.stop(app)
    assist.stop(app)
    judging.stop(app)
    app.extensions["potato"].db.close()
