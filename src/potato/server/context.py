"""The project inside the Flask app: how blueprints reach it, and the cookie-signing key."""

from __future__ import annotations

import fcntl
import logging
import secrets
from pathlib import Path

from flask import Flask, current_app

from potato.project import Project
from potato.training.job.private import write_atomic

log = logging.getLogger(__name__)


def current_project() -> Project:
    project: Project = current_app.extensions["potato"]
    return project


SECRET_BYTES = 32


def session_secret(output_dir: Path) -> bytes:
    """The cookie-signing key, kept in a 0600 file so every worker and every restart shares it.

    Written to a temporary file and renamed into place, so a crash never leaves an empty key; a key
    shorter than 32 bytes (an empty file from an older version's crash, a hand-made one) is replaced
    with a warning, which signs everyone out once."""
    path = output_dir / "secret_key"
    output_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(output_dir / ".secret_key.lock", "a") as lock:  # gunicorn's workers start together
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            key = b""
        if len(key) >= SECRET_BYTES:
            return key
        if path.exists():
            log.warning("%s holds %d bytes, fewer than %d: replaced with a new random key (everyone signs in "
                        "again)", path, len(key), SECRET_BYTES)
        write_atomic(path, secrets.token_bytes(SECRET_BYTES))
        return path.read_bytes()


def init_app(app: Flask, project: Project) -> None:
    app.extensions["potato"] = project
    app.secret_key = session_secret(project.config.output_annotation_dir)
