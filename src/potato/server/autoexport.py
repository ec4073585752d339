"""Keeps upstream Potato's export files written while the server runs (``output_annotation_format``).

One gunicorn worker writes them: the one that holds the folder's lock file, so three workers do
not rewrite the same files. Every ``auto_export_interval`` seconds it looks whether the labels
changed (their count and last change) and, if so, rewrites each format's file whole. A write that
fails (a full disk) is logged once and tried again at the next tick; the labels stay in the database.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading

from flask import Flask

from potato import upstream_export
from potato.study.participants import participant_ids
from potato.study.store import PhaseStore
from potato.project import Project

log = logging.getLogger(__name__)


class AutoExporter:
    def __init__(self, project: Project) -> None:
        self.project = project
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock_fd: int | None = None
        self._seen: tuple[int, float] | None = None
        self._failing = False

    def ensure_started(self) -> None:
        if self.project.config.export_formats and (self._thread is None or not self._thread.is_alive()):
            self._thread = threading.Thread(target=self._run, name="potato-auto-export", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _holds_lock(self) -> bool:
        if self._lock_fd is None:
            folder = self.project.config.output_annotation_dir / "exports"
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._lock_fd = os.open(str(folder / ".writer.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _run(self) -> None:
        interval = self.project.config.auto_export_interval
        while not self._stop.is_set():
            if self._holds_lock():
                self.write_if_changed()
            self._stop.wait(interval)

    def write_if_changed(self) -> bool:
        """Rewrite every format's file when the labels changed since the last write; True if written."""
        row = self.project.db.conn.execute("SELECT COUNT(*), COALESCE(MAX(updated_at), 0) FROM labels").fetchone()
        state = (int(row[0]), float(row[1]))
        if state == self._seen:
            return False
        config = self.project.config
        try:
            for fmt in config.export_formats:
                upstream_export.write(config, self.project.labels.iter_labels(), fmt,
                                      upstream_export.default_folder(config, fmt), participant_ids(self.project.db),
                                      PhaseStore(self.project.db).all_answers() if config.export_phase_data else None)
        except OSError as exc:
            if not self._failing:
                log.error("could not write the annotation exports under %s: %s (the labels are safe in the "
                          "database; trying again every %d s)", config.output_annotation_dir / "exports", exc,
                          config.auto_export_interval)
            self._failing = True
            return False
        self._failing, self._seen = False, state
        return True


def init_app(app: Flask, project: Project) -> None:
    app.extensions["potato.autoexport"] = AutoExporter(project)


def start(app: Flask) -> None:
    exporter: AutoExporter | None = app.extensions.get("potato.autoexport")
    if exporter is not None and not app.config.get("POTATO_NO_DISPATCHER"):
        exporter.ensure_started()


def stop(app: Flask) -> None:
    exporter: AutoExporter | None = app.extensions.get("potato.autoexport")
    if exporter is not None:
        exporter.stop()
