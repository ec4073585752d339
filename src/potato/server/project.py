"""The running project: config, items and stores that every blueprint shares."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from flask import Flask, current_app

from potato.config.schema import Config
from potato.db import Database
from potato.items import ItemSet, load_items
from potato.labels import LabelStore


@dataclass
class Project:
    config: Config
    items: ItemSet
    db: Database
    labels: LabelStore
    # Seams the training subsystem fills in (C5, C7); None when training is off.
    suggestions_for: Callable[[str], dict[str, Any]] | None = None
    on_labels_saved: Callable[[int], None] | None = None

    @classmethod
    def open(cls, config: Config) -> Project:
        items = load_items(
            config.data_files, config.item_properties.id_key, config.item_properties.text_key
        )
        db = Database(config.database_path)
        return cls(config=config, items=items, db=db, labels=LabelStore(db))


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
