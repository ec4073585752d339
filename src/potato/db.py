"""The embedded SQLite database under ``output_annotation_dir``: schema, pragmas, connections.

One file holds labels, users, training runs, agent tokens and suggestions, so a small VM needs
no other service. WAL lets any gunicorn worker read while one writes; ``synchronous=FULL`` makes
every commit reach the disk before it returns, which is what "a label acknowledged is a label
stored" rests on.
"""

from __future__ import annotations

import errno
import fcntl
import os
import queue
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from potato.errors import DatabaseTooNew

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
    """
    CREATE TABLE items (
        position INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE
    );
    """,
    # The agent protocol: backend tokens (hashed; a replaced one is remembered so its agent hears
    # why it was refused), each run's own token, and who holds a run (the lease) and when it last spoke.
    """
    CREATE TABLE agent_tokens (
        backend TEXT PRIMARY KEY,
        token_hash TEXT NOT NULL,
        created_at REAL NOT NULL,
        last_seen REAL,
        agent TEXT
    );
    CREATE TABLE agent_tokens_replaced (
        token_hash TEXT PRIMARY KEY,
        backend TEXT NOT NULL,
        replaced_at REAL NOT NULL
    );
    ALTER TABLE runs ADD COLUMN token_hash TEXT;
    ALTER TABLE runs ADD COLUMN agent_id TEXT;
    ALTER TABLE runs ADD COLUMN agent_host TEXT;
    ALTER TABLE runs ADD COLUMN agent_pid INTEGER;
    ALTER TABLE runs ADD COLUMN last_seen REAL;
    ALTER TABLE runs ADD COLUMN events_seen INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN cancel_at REAL;
    ALTER TABLE runs ADD COLUMN stop_reason TEXT;
    CREATE INDEX runs_token ON runs (token_hash);
    """,
    # Admin sessions the server can end (logout, a new admin_api_key), and the failed attempts that
    # throttle key guessing and mass logins per client address, shared by every gunicorn worker.
    """
    CREATE TABLE admin_sessions (
        id TEXT PRIMARY KEY,
        key_fingerprint TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE TABLE throttle (
        kind TEXT NOT NULL,
        addr TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX throttle_addr ON throttle (kind, addr, at);
    """,
    # Annotators' passwords (upstream Potato's require_password), as salted hashes only.
    """
    ALTER TABLE users ADD COLUMN password_hash TEXT;
    """,
    # Annotators' own queues when the project assigns items (upstream Potato's assignment keys).
    """
    CREATE TABLE assignments (
        user TEXT NOT NULL,
        seq INTEGER NOT NULL,
        item_id TEXT NOT NULL,
        assigned_at REAL NOT NULL,
        PRIMARY KEY (user, seq),
        UNIQUE (user, item_id)
    );
    CREATE INDEX assignments_item ON assignments (item_id);
    """,
    # What a run's reports have written (events.jsonl's length, so a report cut short is undone
    # before the next one), its write allowance, and the job hand-over an agent must confirm.
    """
    ALTER TABLE runs ADD COLUMN events_bytes INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN write_allowance REAL;
    ALTER TABLE runs ADD COLUMN write_at REAL;
    ALTER TABLE runs ADD COLUMN issued_at REAL;
    ALTER TABLE runs ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 1;
    """,
    # Annotators' sessions as records, so that signing out ends every copy of the cookie.
    """
    CREATE TABLE annotator_sessions (
        id TEXT PRIMARY KEY,
        user TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    """,    # Where a run's model files are (runs/modelplace.py), as fields rather than run.log's prose.
    """
    ALTER TABLE runs ADD COLUMN model TEXT;
    """,
    # Who came from a crowdsourcing platform, with the link's ids the platform pays by.
    """
    CREATE TABLE participants (
        user TEXT PRIMARY KEY,
        platform TEXT NOT NULL,
        worker_id TEXT NOT NULL,
        session_id TEXT,
        study_id TEXT,
        params TEXT NOT NULL DEFAULT '{}',
        arrived_at REAL NOT NULL,
        finished_at REAL,
        outcome TEXT
    );
    """,
    # A study's pages around the items (phases): answers, how far each participant got, training tries.
    """
    CREATE TABLE phase_answers (
        user TEXT NOT NULL,
        phase TEXT NOT NULL,
        schema TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (user, phase, schema)
    );
    CREATE TABLE phase_states (
        user TEXT NOT NULL,
        phase TEXT NOT NULL,
        state TEXT NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (user, phase)
    );
    CREATE TABLE training_attempts (
        user TEXT NOT NULL,
        phase TEXT NOT NULL,
        round INTEGER NOT NULL,
        item_id TEXT NOT NULL,
        answers TEXT NOT NULL,
        correct INTEGER NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX training_attempts_user ON training_attempts (user, phase, round);
    """,
    # Codes annotators added to a codebook (codebook_mode: extensible), and the codebook revision
    # each label was made under.
    """
    CREATE TABLE codebook_codes (
        scheme TEXT NOT NULL,
        name TEXT NOT NULL,
        definition TEXT NOT NULL DEFAULT '',
        added_by TEXT NOT NULL,
        added_at REAL NOT NULL,
        revision INTEGER NOT NULL UNIQUE,
        PRIMARY KEY (scheme, name)
    );
    ALTER TABLE labels ADD COLUMN codebook_revision INTEGER;
    """,
    # A participant's later arrivals with other ids than their first (a second browser, a forged link):
    # kept beside the first arrival for the admin, never in its place.
    """
    CREATE TABLE participant_arrivals (
        user TEXT NOT NULL,
        worker_id TEXT NOT NULL,
        params TEXT NOT NULL,
        arrived_at REAL NOT NULL
    );
    CREATE INDEX participant_arrivals_user ON participant_arrivals (user);
    """,
    # What a run's bundle held, counted when it was built: the model card names them.
    """
    ALTER TABLE runs ADD COLUMN labelled_items INTEGER;
    ALTER TABLE runs ADD COLUMN annotators INTEGER;
    """,
    # A run's predictions are saved and it waits on the copy-back of its model files: only then may
    # the copy-back start (copying also covers the writeback itself).
    """
    ALTER TABLE runs ADD COLUMN awaiting_copy INTEGER NOT NULL DEFAULT 0;
    """,
    # Each suggestion's probability per option (radio, multiselect): option highlighting ranks by them.
    """
    ALTER TABLE suggestions ADD COLUMN probabilities TEXT;
    """,
    # AI help from an LLM server: each answer kept under its item, scheme, model and prompt (pending
    # while a process asks, ready with the answer as JSON, failed with the problem), and every call made
    # (the per-minute limit and the cap count them across the server's processes). And each
    # annotator's group under ai_support.assist_holdout, drawn once (helped or control), and each
    # turn of the chat panel (chat_support), per annotator and item.
    """
    CREATE TABLE ai_answers (
        item_id TEXT NOT NULL,
        schema TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt TEXT NOT NULL,
        state TEXT NOT NULL,
        answer TEXT,
        problem TEXT,
        asked_at REAL NOT NULL,
        PRIMARY KEY (item_id, schema, model, prompt)
    );
    CREATE TABLE ai_calls (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        seconds REAL,
        problem TEXT
    );
    CREATE INDEX ai_calls_at ON ai_calls (at);
    CREATE TABLE assist_groups (
        user TEXT PRIMARY KEY,
        grp TEXT NOT NULL,
        share REAL NOT NULL,
        drawn_at REAL NOT NULL
    );
    CREATE TABLE chat_messages (
        id INTEGER PRIMARY KEY,
        user TEXT NOT NULL,
        item_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        at REAL NOT NULL,
        seconds REAL
    );
    CREATE INDEX chat_messages_user_item ON chat_messages (user, item_id, id);
    """,
    # judge_calibration: each judge's k answers per item and question (under the prompt's digest, so a
    # changed prompt asks again), and the one calibration run's state and the sample drawn for it.
    """
    CREATE TABLE judge_draws (
        model TEXT NOT NULL,
        prompt TEXT NOT NULL,
        item_id TEXT NOT NULL,
        schema TEXT NOT NULL,
        draw INTEGER NOT NULL,
        label TEXT,
        reply TEXT,
        problem TEXT,
        seconds REAL,
        at REAL NOT NULL,
        PRIMARY KEY (model, prompt, item_id, schema, draw)
    );
    CREATE TABLE judge_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        state TEXT NOT NULL,
        prompt TEXT NOT NULL,
        started_at REAL NOT NULL,
        beat_at REAL NOT NULL,
        owner TEXT NOT NULL,
        problem TEXT,
        sample TEXT,
        finished_at REAL
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
    except BaseException:  # noqa: B036 - undo a half migration on anything, even KeyboardInterrupt
        rollback(conn)
        raise


def rollback(conn: sqlite3.Connection) -> None:
    """Undo the open transaction, if one is still open: a COMMIT that failed on a full disk has
    often ended it already, and a ROLLBACK then would only raise over the error that matters."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def disk_full(exc: BaseException) -> bool:
    """SQLite's "database or disk is full", or the file system's ENOSPC/EDQUOT."""
    if isinstance(exc, sqlite3.OperationalError):
        return "full" in str(exc).lower()
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def connect(path: Path) -> sqlite3.Connection:
    """Open the database with the pragmas durability depends on, migrating it if needed."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The labels are the project's data: the file is the server user's only (SQLite gives its -wal and
    # -shm files the same mode). Never open and close a database file this process may already have
    # open: closing any descriptor of a file drops all of the process's POSIX locks on it, SQLite's too.
    if not path.exists():
        try:
            os.close(os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
    # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a commit is exactly where we say.
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
    # Before any pragma or migration: a database from a newer release is refused, not modified.
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        conn.close()
        raise DatabaseTooNew(str(path), version, len(MIGRATIONS))
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
        self._write_lock = threading.Lock()
        self._lock_fd: Optional[int] = None
        self._lock_pid: Optional[int] = None
        self._committer = GroupCommitter(self)
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

    def _writer_fd(self) -> int:
        """This process's descriptor of the writers' lock file (reopened after a fork: a shared
        open file would share the lock between parent and child)."""
        if self._lock_fd is None or self._lock_pid != os.getpid():
            self._lock_fd = os.open(str(self.path) + ".writelock", os.O_RDWR | os.O_CREAT, 0o600)
            self._lock_pid = os.getpid()
        return self._lock_fd

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed to disk when the block ends, rolled back if it raises.

        Writers queue on a thread lock and a lock file (flock) before asking SQLite for its write
        lock. SQLite's busy handler sleeps in growing steps, so under contention its lock sat idle
        while waiters slept; flock wakes the next writer the moment the lock is free. That cut
        next-item p99 several-fold at 10-50 annotators (bench/annotators.py).
        """
        conn = self.conn
        with self._write_lock:
            fd = self._writer_fd()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:  # noqa: B036 - roll back on anything, even KeyboardInterrupt, so the connection stays usable
                    rollback(conn)
                    raise
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def write(self, statements: list[tuple[str, tuple]]) -> None:
        """Run statements as one unit; returns only after a commit holding them is on disk.

        Concurrent writers share commits (see :class:`GroupCommitter`): one fsync and one trip
        through the write lock for a whole batch, each writer's statements all-or-nothing.
        """
        self._committer.submit(statements)

    def close(self) -> None:
        """Close every thread's connection. Only when no other thread uses the database any more:
        closing a connection another thread is inside of crashes SQLite."""
        self._committer.stop()
        with self._lock:
            for conn in self._all.values():
                conn.close()
            self._all.clear()
        self._local = threading.local()


class _Pending:
    """One writer's statements, waiting for the commit that holds them."""

    __slots__ = ("statements", "done", "error")

    def __init__(self, statements: list[tuple[str, tuple]]) -> None:
        self.statements = statements
        self.done = threading.Event()
        self.error: Optional[BaseException] = None


class GroupCommitter:
    """Commits the writes of many request threads together: group commit.

    Under load every label used to take the write lock and fsync on its own, and the lock was
    held through GIL hand-offs, so labels queued behind each other (bench/annotators.py: wall
    time mostly waiting for the lock). One thread per process now takes whatever writes are
    waiting, runs each inside its own SAVEPOINT (a failing writer is rolled back alone and gets
    its error), commits once, and only then wakes the writers: nobody is answered before their
    write is on disk.
    """

    MAX_BATCH = 256

    def __init__(self, db: Database) -> None:
        self.db = db
        self._queue: queue.SimpleQueue[Optional[_Pending]] = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._pid: Optional[int] = None
        self._start_lock = threading.Lock()

    def submit(self, statements: list[tuple[str, tuple]]) -> None:
        self._ensure_thread()
        pending = _Pending(statements)
        self._queue.put(pending)
        pending.done.wait()
        if pending.error is not None:
            raise pending.error

    def stop(self, timeout: float = 10.0) -> None:
        thread = self._thread
        if thread is not None and thread.is_alive() and self._pid == os.getpid():
            self._queue.put(None)
            thread.join(timeout)
        self._thread = None

    def _ensure_thread(self) -> None:
        # After a fork the parent's thread does not exist in the child: start this process's own.
        if self._thread is not None and self._pid == os.getpid() and self._thread.is_alive():
            return
        with self._start_lock:
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._queue = queue.SimpleQueue()
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="potato-group-commit", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.MAX_BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(item)
            self._commit(batch)

    def _commit(self, batch: list[_Pending]) -> None:
        try:
            with self.db.transaction() as conn:
                for pending in batch:
                    conn.execute("SAVEPOINT writer")
                    try:
                        for sql, params in pending.statements:
                            conn.execute(sql, params)
                    except Exception as exc:  # this writer's error is theirs to see; the batch goes on
                        conn.execute("ROLLBACK TO writer")
                        pending.error = exc
                    conn.execute("RELEASE writer")
        except BaseException as exc:  # noqa: B036 - whatever ended the commit, every writer must hear of it
            for pending in batch:
                if pending.error is None:
                    pending.error = exc
        finally:
            for pending in batch:
                pending.done.set()
