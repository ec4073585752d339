"""Training runs: their states, the legal moves between them, and their rows in SQLite.

``RunState`` and ``can_move`` are pure; :class:`RunStore` is the only code that writes a run.
A move that is not legal (a cancelled run "succeeding" late, say) is refused in the same
transaction that would make it, so two processes cannot both finish one run.
"""

from __future__ import annotations

import builtins
import json
import secrets
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Mapping, Sequence

from potato.db import Database
from potato.server.training.runs.modelplace import ModelPlace
from potato.training.job.private import DIR_MODE, private_dir
from potato.server.training.runs.wakeup import Wakeup
from potato.training.job.results import Reason

__all__ = ["Reason", "Run", "RunState", "RunStore", "can_move"]


class RunState(str, Enum):
    QUEUED = "queued"
    PREPARING = "preparing"
    RUNNING = "running"
    COPYING = "copying"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


class Trigger(str, Enum):
    """What queued a run: a person (the page, the API, the CLI) or automatic retraining."""

    MANUAL = "manual"
    AUTO = "auto"


TERMINAL: frozenset[RunState] = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED})
ACTIVE: frozenset[RunState] = frozenset({RunState.PREPARING, RunState.RUNNING, RunState.COPYING})

_MOVES: dict[RunState, frozenset[RunState]] = {
    RunState.QUEUED: frozenset({RunState.PREPARING, RunState.FAILED, RunState.CANCELLED}),
    RunState.PREPARING: frozenset({RunState.RUNNING, RunState.FAILED, RunState.CANCELLED}),
    RunState.RUNNING: frozenset({RunState.COPYING, RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED}),
    RunState.COPYING: frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED}),
}


def can_move(src: RunState, dst: RunState) -> bool:
    """Whether a run may go from ``src`` to ``dst`` (terminal states are final)."""
    return dst in _MOVES.get(src, frozenset())


def new_run_id(now: float | None = None) -> str:
    """Sortable by creation time: ``20261129-215023-a1b2``. Two runs in one second may draw the same
    suffix; :meth:`RunStore.create` draws again until its folder is new."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now if now is not None else time.time()))
    return f"{stamp}-{secrets.token_hex(2)}"


@dataclass
class Run:
    id: str
    trainer: str
    schemas: list[str]
    backend: str
    state: RunState
    created_at: float
    params: dict[str, Any] = field(default_factory=dict)
    reason: Reason | None = None
    message: str | None = None
    step: str = ""
    progress: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    finished_at: float | None = None
    cancel_requested: bool = False
    bundle_sha256: str | None = None
    labelled_items: int | None = None
    """Items with a label in the run's bundle (None: a run from before they were counted)."""
    annotators: int | None = None
    """Annotators whose labels are in the run's bundle."""
    artifact_uri: str | None = None
    """Where the model files are, as the page shows it (``model`` holds the same as fields)."""
    model: ModelPlace | None = None
    awaiting_copy: bool = False
    """The run's predictions are saved and it waits on its model files' copy-back (ssh, slurm): the
    copy-back starts now, not at the move to ``copying`` (the writeback still runs then)."""
    device: str | None = None
    trigger: Trigger = Trigger.MANUAL
    agent_id: str | None = None
    """The agent that holds this run (the lease): only it gets the run's token."""
    agent_host: str | None = None
    agent_pid: int | None = None
    last_seen: float | None = None
    """When the run's agent last spoke (any request is a heartbeat)."""
    events_seen: int = 0
    cancel_at: float | None = None
    token_hash: str | None = None
    """The run token's hash; never in ``to_json``."""
    stop_reason: Reason | None = None
    """Why a stop was asked for (``cancelled`` or ``timeout``), sent to the agent with the cancel."""
    events_bytes: int = 0
    """The length of events.jsonl after the last report recorded (a longer file holds a cut-short one)."""
    write_allowance: float | None = None
    write_at: float | None = None
    """The run's write-rate bucket (quota.Bucket), shared by every gunicorn worker."""
    issued_at: float | None = None
    confirmed: bool = True
    """False from the moment a job is handed to an agent until that agent first uses the run's token:
    a job whose reply went to an agent that had just stopped goes back to the queue (watchdog)."""

    def __post_init__(self) -> None:
        """The stored strings as their enums, whoever built the record."""
        self.reason = None if self.reason is None else Reason.of(self.reason)
        self.stop_reason = None if self.stop_reason is None else Reason.of(self.stop_reason)
        self.trigger = Trigger(self.trigger or Trigger.MANUAL)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "trainer": self.trainer,
            "schemas": self.schemas,
            "backend": self.backend,
            "state": self.state.value,
            "reason": self.reason.value if self.reason else None,
            "message": self.message,
            "step": self.step,
            "progress": self.progress,
            "metrics": self.metrics,
            "params": self.params,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "cancel_requested": self.cancel_requested,
            "bundle_sha256": self.bundle_sha256,
            "artifact_uri": self.artifact_uri,
            "model": self.model.to_json() if self.model else None,
            "device": self.device,
            "trigger": self.trigger.value,
            "agent": {"id": self.agent_id, "host": self.agent_host, "last_seen": self.last_seen}
            if self.agent_id else None,
        }


def _row_to_run(row: Any) -> Run:
    return Run(
        id=row["id"],
        trainer=row["trainer"],
        schemas=json.loads(row["schemas"]),
        backend=row["backend"],
        state=RunState(row["state"]),
        created_at=row["created_at"],
        params=json.loads(row["params"]),
        reason=row["reason"],
        message=row["message"],
        step=row["step"] or "",
        progress=row["progress"],
        metrics=json.loads(row["metrics"] or "{}"),
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        cancel_requested=bool(row["cancel_requested"]),
        bundle_sha256=row["bundle_sha256"],
        labelled_items=row["labelled_items"],
        annotators=row["annotators"],
        artifact_uri=row["artifact_uri"],
        model=ModelPlace.from_json(json.loads(row["model"] or "null")),
        awaiting_copy=bool(row["awaiting_copy"]),
        device=row["device"],
        trigger=row["trigger"],
        agent_id=row["agent_id"],
        agent_host=row["agent_host"],
        agent_pid=row["agent_pid"],
        last_seen=row["last_seen"],
        events_seen=row["events_seen"],
        cancel_at=row["cancel_at"],
        stop_reason=row["stop_reason"],
        token_hash=row["token_hash"],
        events_bytes=row["events_bytes"],
        write_allowance=row["write_allowance"],
        write_at=row["write_at"],
        issued_at=row["issued_at"],
        confirmed=bool(row["confirmed"]),
    )


class RunStore:
    def __init__(self, db: Database, runs_dir: Path) -> None:
        self.db = db
        self.runs_dir = runs_dir

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def create(self, trainer: str, schemas: Sequence[str], backend: str, params: Mapping[str, Any],
               trigger: Trigger = Trigger.MANUAL) -> Run:
        run = Run(
            id=new_run_id(), trainer=trainer, schemas=list(schemas), backend=backend, state=RunState.QUEUED,
            created_at=time.time(), params=dict(params), step="waiting in the queue", trigger=trigger,
        )
        private_dir(self.runs_dir.parent)  # training/, then runs/: 0700 whatever the output folder's mode
        private_dir(self.runs_dir)
        while True:  # the folder is the id's claim: two runs started in one second may draw the same suffix
            try:
                self.run_dir(run.id).mkdir(DIR_MODE)
                self.run_dir(run.id).chmod(DIR_MODE)  # exactly 0700, whatever the umask
                break
            except FileExistsError:
                run.id = new_run_id(run.created_at)
        self.db.write([(
            ("INSERT INTO runs (id, trainer, schemas, backend, state, created_at, params, step, trigger) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
            (run.id, run.trainer, json.dumps(run.schemas), run.backend, run.state.value, run.created_at,
             json.dumps(run.params), run.step, run.trigger.value),
        )])
        Wakeup.of(self.runs_dir.parent).ring()
        return run

    def get(self, run_id: str) -> Run | None:
        row = self.db.conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _row_to_run(row) if row else None

    def list(self, limit: int = 200) -> builtins.list[Run]:
        rows = self.db.conn.execute("SELECT * FROM runs ORDER BY created_at DESC, id DESC LIMIT ?", (limit,))
        return [_row_to_run(row) for row in rows]

    def in_states(self, states: Sequence[RunState]) -> builtins.list[Run]:
        marks = ",".join("?" for _ in states)
        rows = self.db.conn.execute(
            f"SELECT * FROM runs WHERE state IN ({marks}) ORDER BY created_at, id", [s.value for s in states]
        )
        return [_row_to_run(row) for row in rows]

    def move(self, run_id: str, dst: RunState, *, reason: Reason | None = None, message: str | None = None,
             **fields: Any) -> bool:
        """Move a run to ``dst`` if that is legal from its current state; False if it was not.

        A run someone asked to stop never moves towards success (``copying``, ``succeeded``): an
        admin's cancel is final, whatever the agent reports after it.
        """
        with self.db.transaction() as conn:
            row = conn.execute("SELECT state, cancel_requested FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None or not can_move(RunState(row["state"]), dst):
                return False
            if row["cancel_requested"] and dst in (RunState.COPYING, RunState.SUCCEEDED):
                return False
            now = time.time()
            values: dict[str, Any] = {"state": dst.value}
            if dst is RunState.PREPARING:
                values["started_at"] = now
            if dst.terminal:
                values["finished_at"] = now
                values["reason"] = None if reason is None else Reason.of(reason).value
                values["message"] = message
            values.update(_encode(fields))
            sets = ", ".join(f"{key} = ?" for key in values)
            conn.execute(f"UPDATE runs SET {sets} WHERE id = ?", [*values.values(), run_id])
        Wakeup.of(self.runs_dir.parent, run_id).ring()  # whoever follows this run hears it moved
        return True

    def await_copy(self, run_id: str, **fields: Any) -> None:
        """Mark a ``copying`` run's predictions saved (with ``fields``): its follower hears it, and
        the model files' copy-back starts. A run that has ended meanwhile keeps its fields."""
        values = _encode({"awaiting_copy": True, **fields})
        sets = ", ".join(f"{key} = ?" for key in values)
        self.db.write([(f"UPDATE runs SET {sets} WHERE id = ? AND state = ?",
                        (*values.values(), run_id, RunState.COPYING.value))])
        Wakeup.of(self.runs_dir.parent, run_id).ring()

    def update(self, run_id: str, **fields: Any) -> None:
        """Set non-state fields (step line, progress, metrics)."""
        values = _encode(fields)
        if not values:
            return
        sets = ", ".join(f"{key} = ?" for key in values)
        self.db.write([(f"UPDATE runs SET {sets} WHERE id = ?", (*values.values(), run_id))])

    def request_cancel(self, run_id: str, reason: Reason = Reason.CANCELLED) -> Run | None:
        """Mark a run for stopping; a queued run is cancelled at once, an active one by its agent,
        which hears of it in the reply to its next report."""
        run = self.get(run_id)
        if run is None or run.state.terminal:
            return run
        if run.state is RunState.QUEUED:
            self.move(run_id, RunState.CANCELLED, reason=Reason.CANCELLED, message="Cancelled while queued.",
                      step="cancelled")
        elif not run.cancel_requested:
            step = "cancelling" if reason is Reason.CANCELLED else "stopping: past max_wall_seconds"
            self.update(run_id, cancel_requested=True, cancel_at=time.time(), stop_reason=reason.value, step=step)
        return self.get(run_id)

    def claim(self, backend: str, agent_id: str, host: str, pid: int | None = None) -> Run | None:
        """Give the oldest queued run of ``backend`` to one agent, if no run executes now.

        One transaction checks and takes, so two agents polling the same backend (or an agent and
        the dispatcher) can never both get a run, nor two runs execute at once. A plain read first
        keeps the write lock free while nothing is queued (the dispatcher asks ten times a second).
        """
        waiting = self.db.conn.execute("SELECT 1 FROM runs WHERE state = ? AND backend = ? LIMIT 1",
                                       (RunState.QUEUED.value, backend)).fetchone()
        if waiting is None:
            return None
        with self.db.transaction() as conn:
            marks = ",".join("?" for _ in ACTIVE)
            busy = conn.execute(f"SELECT 1 FROM runs WHERE state IN ({marks}) LIMIT 1",
                                [s.value for s in ACTIVE]).fetchone()
            if busy:
                return None
            row = conn.execute("SELECT id FROM runs WHERE state = ? AND backend = ? ORDER BY created_at, id LIMIT 1",
                               (RunState.QUEUED.value, backend)).fetchone()
            if row is None:
                return None
            now = time.time()
            conn.execute(
                "UPDATE runs SET state = ?, started_at = ?, agent_id = ?, agent_host = ?, agent_pid = ?, "
                "last_seen = ?, step = ? WHERE id = ?",
                (RunState.PREPARING.value, now, agent_id, host, pid, now, "building the bundle", row["id"]),
            )
            run_id = row["id"]
        return self.get(run_id)

    def issued(self, run_id: str, now: float) -> None:
        """The job was handed to an agent that has yet to confirm it (see :meth:`confirm`)."""
        self.update(run_id, issued_at=now, confirmed=False)

    def confirm(self, run_id: str, token_hash: str, now: float) -> bool:
        """The run's agent used its token: it has the job (and this is a heartbeat). False when the
        token is not (or no longer) this run's, in the same statement, so a run given back to the
        queue cannot be confirmed by the agent it was taken from."""
        with self.db.transaction() as conn:
            cursor = conn.execute("UPDATE runs SET confirmed = 1, last_seen = ? WHERE id = ? AND token_hash = ?",
                                  (now, run_id, token_hash))
            return cursor.rowcount == 1

    def requeue_unconfirmed(self, run_id: str) -> bool:
        """Give a handed-out job that its agent never confirmed back to the queue, with a new token to
        come (the old one opens nothing); False if it was confirmed or ended meanwhile."""
        with self.db.transaction() as conn:
            cursor = conn.execute(
                "UPDATE runs SET state = ?, token_hash = NULL, agent_id = NULL, agent_host = NULL, agent_pid = NULL, "
                "last_seen = NULL, issued_at = NULL, confirmed = 1, events_seen = 0, events_bytes = 0, "
                "step = ? WHERE id = ? AND state = ? AND confirmed = 0 AND cancel_requested = 0",
                (RunState.QUEUED.value, "waiting in the queue", run_id, RunState.RUNNING.value))
            moved = cursor.rowcount == 1
        if moved:
            Wakeup.of(self.runs_dir.parent).ring()
        return moved

    def by_token_hash(self, token_hash: str) -> Run | None:
        row = self.db.conn.execute("SELECT * FROM runs WHERE token_hash = ?", (token_hash,)).fetchone()
        return _row_to_run(row) if row else None


_JSON_FIELDS = {"metrics", "params", "schemas"}


def _encode(fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key not in _COLUMNS:
            raise KeyError(f"runs has no column {key!r}")
        if isinstance(value, ModelPlace):
            value = json.dumps(value.to_json())
        elif key in _JSON_FIELDS:
            value = json.dumps(value)
        elif isinstance(value, bool):
            value = int(value)
        out[key] = value
    return out


_COLUMNS = {
    "trainer", "schemas", "backend", "state", "params", "reason", "message", "step", "progress", "metrics",
    "started_at", "finished_at", "cancel_requested", "bundle_sha256", "labelled_items", "annotators",
    "artifact_uri", "model", "awaiting_copy", "device", "trigger",
    "token_hash", "agent_id", "agent_host", "agent_pid", "last_seen", "events_seen", "cancel_at", "stop_reason",
    "events_bytes", "write_allowance", "write_at", "issued_at", "confirmed",
}
