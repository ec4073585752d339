"""The project inside the Flask app: how blueprints reach it, and the cookie-signing key."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from flask import Flask, current_app

from potato.project import Project


def current_project() -> Project:
    project: Project = current_app.extensions["potato"]
    return project


def session_secret(output_dir: Path) -> bytes:
    """The cookie-signing key, kept in a 0600 file so every worker and every restart shares it."""
    path = output_dir / "secret_key"
    output_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()
    with os.fdopen(fd, "wb") as fh:
        fh.write(secrets.token_bytes(32))
        fh.flush()
        os.fsync(fh.fileno())
    return path.read_bytes()


def init_app(app: Flask, project: Project) -> None:
    app.extensions["potato"] = project
    app.secret_key = session_secret(project.config.output_annotation_dir)
