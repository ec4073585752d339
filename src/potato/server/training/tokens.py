"""Agent tokens: one per agent backend and one per run, random, stored only as hashes.

A backend token lets an agent ask for that backend's jobs; a run token opens that one run's
routes and nothing else. Both are 32 random bytes from :mod:`secrets`, so a plain SHA-256 is
enough to store them (there is nothing to brute-force), and every check compares digests in
constant time. A token is shown once, when issued, and never logged.
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

LAST_SEEN_EVERY_S = 5.0
"""A backend's ``last_seen`` is written at most this often (200 idle agents, few writes)."""


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

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "created_at": self.created_at, "last_seen": self.last_seen,
                "agent": self.agent}


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
        agent = json.loads(row["agent"]) if row["agent"] else None
        return BackendToken(row["backend"], row["created_at"], row["last_seen"], agent)

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
        """Record that the backend's agent spoke (throttled: at most one write per few seconds)."""
        now = time.time() if now is None else now
        row = self.db.conn.execute("SELECT last_seen, agent FROM agent_tokens WHERE backend = ?", (backend,)).fetchone()
        if row is None:
            return
        if row["last_seen"] is not None and now - row["last_seen"] < LAST_SEEN_EVERY_S:
            return
        text = json.dumps(agent, sort_keys=True) if agent is not None else row["agent"]
        self.db.write([("UPDATE agent_tokens SET last_seen = ?, agent = ? WHERE backend = ?", (now, text, backend))])


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
