"""The embedded SQLite database under ``output_annotation_dir``: schema, pragmas, connections.

One file holds labels, users, training runs, agent tokens and suggestions, so a small VM needs
no other service. WAL lets any gunicorn worker read while one writes; ``synchronous=FULL`` makes
every commit reach the disk before it returns, which is what "a label acknowledged is a label
stored" rests on (C2).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

# Each entry moves the schema one version up; never edit an entry that has shipped.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE users (
        name TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        last_seen REAL NOT NULL
    );
    CREATE TABLE labels (
        user TEXT NOT NULL,
        item_id TEXT NOT NULL,
        schema TEXT NOT NULL,
        value TEXT NOT NULL,
        source TEXT NOT NULL DEFAULT 'human',
        run_id TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (user, item_id, schema)
    );
    CREATE INDEX labels_item ON labels (item_id, schema);
    CREATE INDEX labels_updated ON labels (updated_at);
    """,
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        trainer TEXT NOT NULL,
        schemas TEXT NOT NULL,
        backend TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at REAL NOT NULL,
        params TEXT NOT NULL DEFAULT '{}',
        reason TEXT,
        message TEXT,
        step TEXT,
        progress REAL,
        metrics TEXT,
        started_at REAL,
        finished_at REAL,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        bundle_sha256 TEXT,
        artifact_uri TEXT,
        device TEXT,
        trigger TEXT NOT NULL DEFAULT 'manual'
    );
    CREATE INDEX runs_state ON runs (state, created_at);
    CREATE TABLE suggestions (
        run_id TEXT NOT NULL,
        item_id TEXT NOT NULL,
        schema TEXT NOT NULL,
        label TEXT NOT NULL,
        confidence REAL NOT NULL,
        PRIMARY KEY (run_id, item_id, schema)
    );
    CREATE INDEX suggestions_item ON suggestions (item_id, schema);
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
]


def _migrate(conn: sqlite3.Connection) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version >= len(MIGRATIONS):
        return
    # BEGIN IMMEDIATE serialises concurrent first starts of several gunicorn workers.
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for number in range(version, len(MIGRATIONS)):
            for statement in MIGRATIONS[number].split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def connect(path: Path) -> sqlite3.Connection:
    """Open the database with the pragmas durability depends on, migrating it if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a commit is exactly where we say.
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA foreign_keys=ON")
    _migrate(conn)
    return conn


class Database:
    """Hands each thread its own connection to one database file (sqlite3 objects are per thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: dict[int, sqlite3.Connection] = {}
        connect(path).close()  # create and migrate eagerly: errors surface at start, not first request

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        # A connection must never cross a fork (gunicorn preloads the app in its master).
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = connect(self.path)
            self._local.conn = conn
            self._local.pid = os.getpid()
            with self._lock:
                self._all[threading.get_ident()] = conn
        return conn

    def write(self, statements: list[tuple[str, tuple]]) -> None:
        """Run statements in one transaction; returns only after the commit is on disk."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                conn.execute(sql, params)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close every thread's connection. Only when no other thread uses the database any more:
        closing a connection another thread is inside of crashes SQLite."""
        with self._lock:
            for conn in self._all.values():
                conn.close()
            self._all.clear()
        self._local = threading.local()
