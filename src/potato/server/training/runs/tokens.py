"""Agent tokens: one per agent backend and one per run, random, stored only as hashes.

A backend token lets an agent ask for that backend's jobs; a run token opens that one run's
routes and nothing else. Both are 32 random bytes from :mod:`secrets`, so a plain SHA-256 is
enough to store them (there is nothing to brute-force), and every check compares digests in
constant time. A token is shown once, when issued, and never logged.

An agent that stops tells the server it leaves (``agents/leave``). What the server keeps of that sits
beside the agent's own description in ``agent_tokens.agent``: when the agent shown left
(``left_at``), and which agents left lately (``left``), so that the long poll a stopped agent had
open hands it no run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any

from potato.db import Database
from potato.training.agent.protocol import LONG_POLL_MAX_S

LAST_SEEN_EVERY_S = 5.0
"""A backend's ``last_seen`` is written at most this often (200 idle agents, few writes)."""
LEFT_MEMORY_S = 2 * LONG_POLL_MAX_S + 10
"""How long an agent that left is remembered as gone: longer than the long poll it may have had open
on the server when it stopped, which must not claim a run for it."""
LEFT_AT, LEFT = "left_at", "left"
"""The keys the server adds to an agent's stored description (:func:`agent_info` lets no agent send them)."""


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_hash(stored: str | None, token: str) -> bool:
    return stored is not None and hmac.compare_digest(stored, token_hash(token))


@dataclass
class BackendToken:
    """A backend's token entry as the check and the training page show it (no secret in it)."""

    backend: str
    created_at: float
    last_seen: float | None
    agent: dict[str, Any] | None
    left_at: float | None = None
    """When the agent shown said it stops (``agents/leave``); None while it works, or never said so."""

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "created_at": self.created_at, "last_seen": self.last_seen,
                "agent": self.agent, "left_at": self.left_at}


@dataclass(frozen=True)
class AgentRecord:
    """``agent_tokens.agent`` as read: the latest agent's description, when it left (if it did), and
    the ids of agents that left within :data:`LEFT_MEMORY_S`, with when."""

    info: dict[str, Any] | None
    left_at: float | None
    left: dict[str, float]

    @classmethod
    def parse(cls, text: str | None) -> AgentRecord:
        try:
            stored = json.loads(text) if text else None
        except ValueError:
            stored = None
        if not isinstance(stored, dict):
            return cls(None, None, {})
        info = {k: v for k, v in stored.items() if k not in (LEFT_AT, LEFT)}
        left_at = stored.get(LEFT_AT)
        left = stored.get(LEFT)
        return cls(info or None, float(left_at) if isinstance(left_at, (int, float)) else None,
                   {str(k): float(v) for k, v in left.items() if isinstance(v, (int, float))}
                   if isinstance(left, dict) else {})

    def text(self) -> str | None:
        if self.info is None and self.left_at is None and not self.left:
            return None
        out: dict[str, Any] = dict(self.info or {})
        if self.left_at is not None:
            out[LEFT_AT] = self.left_at
        if self.left:
            out[LEFT] = self.left
        return json.dumps(out, sort_keys=True)


UNNAMED = "unnamed"


def agent_id_of(agent: dict[str, Any]) -> str:
    """The id an agent goes by in ``jobs/next`` and ``agents/leave``: the ``id`` it sends, or ``unnamed``."""
    return str(agent.get("id") or "")[:64] or UNNAMED


def _recent(left: dict[str, float], now: float) -> dict[str, float]:
    return {agent_id: at for agent_id, at in left.items() if now - at <= LEFT_MEMORY_S}


def after_poll(record: AgentRecord, last_seen: float | None, agent: dict[str, Any] | None,
               now: float) -> AgentRecord | None:
    """What to store when a backend's agent polls: ``agent`` is its description when a poll starts,
    None when one ends. None: nothing to write (at most one write per :data:`LAST_SEEN_EVERY_S`).

    A poll that ends after the agent shown left says nothing new: it is the stopped agent's own
    poll, which the server held open. A poll that starts is an agent at work, shown at once, and no
    longer counted as gone (an agent of one's own may use one id across restarts)."""
    if agent is None:
        if record.left_at is not None:
            return None
        recent = last_seen is not None and now - last_seen < LAST_SEEN_EVERY_S
        return None if recent else record
    agent_id = agent_id_of(agent)
    returning = record.left_at is not None or agent_id in record.left
    if not returning and last_seen is not None and now - last_seen < LAST_SEEN_EVERY_S:
        return None
    left = _recent(record.left, now)
    left.pop(agent_id, None)
    return AgentRecord(agent, None, left)


def after_leave(record: AgentRecord, agent_id: str, now: float) -> AgentRecord:
    """What to store when agent ``agent_id`` says it stops: it is remembered as gone, and when it is
    the agent shown (or the only one the server knows of), the page and the check say it left."""
    left = _recent(record.left, now)
    left[agent_id] = now
    left_at = now if record.info is None or agent_id_of(record.info) == agent_id else record.left_at
    return AgentRecord(record.info, left_at, left)


class TokenStanding(str, Enum):
    """What an agent token is for a backend: its current token, one it replaced, or unknown."""

    OK = "ok"
    UNKNOWN = "unknown"
    REPLACED = "replaced"


class BackendTokens:
    def __init__(self, db: Database) -> None:
        self.db = db

    def issue(self, backend: str) -> str:
        """A new token for ``backend``; the one it replaces stops working now."""
        token = new_token()
        now = time.time()
        with self.db.transaction() as conn:
            old = conn.execute("SELECT token_hash FROM agent_tokens WHERE backend = ?", (backend,)).fetchone()
            if old is not None:
                conn.execute("INSERT OR REPLACE INTO agent_tokens_replaced (token_hash, backend, replaced_at) "
                             "VALUES (?, ?, ?)", (old["token_hash"], backend, now))
            conn.execute("INSERT OR REPLACE INTO agent_tokens (backend, token_hash, created_at, last_seen, agent) "
                         "VALUES (?, ?, ?, NULL, NULL)", (backend, token_hash(token), now))
        return token

    def get(self, backend: str) -> BackendToken | None:
        row = self.db.conn.execute("SELECT * FROM agent_tokens WHERE backend = ?", (backend,)).fetchone()
        if row is None:
            return None
        record = AgentRecord.parse(row["agent"])
        return BackendToken(row["backend"], row["created_at"], row["last_seen"], record.info, record.left_at)

    def backend_of(self, token: str) -> str | None:
        """The backend ``token`` is the current token of, if any (a lookup by hash: the token is random)."""
        row = self.db.conn.execute("SELECT backend FROM agent_tokens WHERE token_hash = ?",
                                   (token_hash(token),)).fetchone()
        return str(row["backend"]) if row is not None else None

    def verify(self, backend: str, token: str) -> TokenStanding:
        """:class:`TokenStanding` of ``token`` on ``backend``: ok, replaced (by registering again) or unknown."""
        row = self.db.conn.execute("SELECT token_hash FROM agent_tokens WHERE backend = ?", (backend,)).fetchone()
        if row is not None and same_hash(row["token_hash"], token):
            return TokenStanding.OK
        old = self.db.conn.execute("SELECT backend FROM agent_tokens_replaced WHERE token_hash = ?",
                                   (token_hash(token),)).fetchone()
        return TokenStanding.REPLACED if old is not None and old["backend"] == backend else TokenStanding.UNKNOWN

    def seen(self, backend: str, agent: dict[str, Any] | None, now: float | None = None) -> None:
        """Record that the backend's agent spoke (throttled: at most one write per few seconds); see
        :func:`after_poll`."""
        now = time.time() if now is None else now
        row = self.db.conn.execute("SELECT last_seen, agent FROM agent_tokens WHERE backend = ?", (backend,)).fetchone()
        if row is None:
            return
        record = after_poll(AgentRecord.parse(row["agent"]), row["last_seen"], agent, now)
        if record is None:
            return
        self.db.write([("UPDATE agent_tokens SET last_seen = ?, agent = ? WHERE backend = ?",
                        (now, record.text(), backend))])

    def leave(self, backend: str, agent_id: str, now: float | None = None) -> float:
        """Record that agent ``agent_id`` of ``backend`` stops (``agents/leave``); when it did."""
        now = time.time() if now is None else now
        with self.db.transaction() as conn:  # read and write in one step: another agent may poll meanwhile
            row = conn.execute("SELECT agent FROM agent_tokens WHERE backend = ?", (backend,)).fetchone()
            if row is not None:
                record = after_leave(AgentRecord.parse(row["agent"]), agent_id, now)
                conn.execute("UPDATE agent_tokens SET agent = ? WHERE backend = ?", (record.text(), backend))
        return now

    def has_left(self, backend: str, agent_id: str) -> bool:
        """Whether agent ``agent_id`` said lately that it stops: a long poll it left open claims nothing."""
        row = self.db.conn.execute("SELECT agent FROM agent_tokens WHERE backend = ?", (backend,)).fetchone()
        return row is not None and agent_id in AgentRecord.parse(row["agent"]).left

def agent_info(agent: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of an agent: short texts and the GPU list, nothing else stored."""
    out: dict[str, Any] = {}
    for key in ("id", "host", "python", "worker_python", "platform", "version", "workdir"):
        if isinstance(agent.get(key), (str, int, float)):
            out[key] = str(agent[key])[:255]
    gpus = agent.get("gpus")
    if isinstance(gpus, list):
        out["gpus"] = [{k: g.get(k) for k in ("index", "name", "memory_total_mb", "memory_free_mb")}
                       for g in gpus[:64] if isinstance(g, dict)]
    return out
