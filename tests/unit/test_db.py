"""The database layer: group commit keeps each writer all-or-nothing and durable; no fork sharing."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from potato.db import Database

INSERT = "INSERT INTO meta (key, value) VALUES (?, ?)"


def test_concurrent_writers_all_land(tmp_path: Path) -> None:
    db = Database(tmp_path / "db.sqlite3")
    threads = [threading.Thread(target=db.write, args=([(INSERT, (f"k{i}", "v"))],)) for i in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    db.close()
    # A fresh connection (another process would see the same): every acknowledged write is there.
    assert sqlite3.connect(tmp_path / "db.sqlite3").execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 64


def test_a_failing_writer_is_rolled_back_alone(tmp_path: Path) -> None:
    db = Database(tmp_path / "db.sqlite3")
    db.write([(INSERT, ("taken", "x"))])
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def good(key: str) -> None:
        barrier.wait()
        db.write([(INSERT, (key, "1")), (INSERT, (key + "-2", "2"))])

    def bad() -> None:
        barrier.wait()
        try:
            db.write([(INSERT, ("half", "1")), (INSERT, ("taken", "duplicate"))])
        except sqlite3.IntegrityError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=good, args=("a",)), threading.Thread(target=bad), threading.Thread(target=good, args=("b",))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    keys = {row[0] for row in db.conn.execute("SELECT key FROM meta")}
    assert len(errors) == 1
    assert keys == {"taken", "a", "a-2", "b", "b-2"}  # 'half' went with its failing writer
    db.close()


def test_write_error_reaches_the_caller(tmp_path: Path) -> None:
    db = Database(tmp_path / "db.sqlite3")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        db.write([("INSERT INTO nope VALUES (1)", ())])
    db.write([(INSERT, ("after", "ok"))])  # the committer survives a failed writer
    assert db.conn.execute("SELECT value FROM meta WHERE key = 'after'").fetchone()[0] == "ok"
    db.close()
