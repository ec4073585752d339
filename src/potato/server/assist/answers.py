"""The LLM server's answers, kept in the project's database (a file only the server's account
reads), and the calls made for them.

Every process of the server asks through here, so the per-minute limit, the cap and "someone is
already asking about this item" hold across gunicorn's workers: a claim is one write transaction
that counts the calls and marks the answer pending.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable

from potato.db import Database

STALE_AFTER_S = 30.0
"""Beyond the call's timeout, a pending answer whose process died is asked again after this long."""
RETRY_AFTER_S = 300.0
"""A failed answer (the server was down, the reply named no option) is asked again after this long."""
_END_CALL = "UPDATE ai_calls SET seconds = ?, problem = ? WHERE id = ?"
"""A call's end: how long it took and what went wrong (NULL: nothing)."""


@dataclass(frozen=True)
class AnswerKey:
    item_id: str
    schema: str
    model: str
    prompt: str
    """:func:`potato.study.llm_help.prompt_digest` of what is asked."""


class Claim(Enum):
    ASK = "ask"            # this caller makes the call
    READY = "ready"        # answered already
    PENDING = "pending"    # another caller is asking
    FAILED = "failed"      # failed recently: no hint for now
    CAPPED = "capped"      # max_calls reached: no more calls
    WAITING = "waiting"    # the per-minute limit is reached: ask again later


@dataclass(frozen=True)
class Answer:
    state: str
    value: Any
    """The answer as the page shows it (the picked options, a hint, ...); None unless ready."""
    problem: str | None
    asked_at: float

    def settled(self, now: float, timeout: float) -> bool:
        """Nothing to ask now: answered, failed lately, or being asked by a live caller."""
        if self.state == "ready":
            return True
        if self.state == "failed":
            return self.asked_at > now - RETRY_AFTER_S
        return self.asked_at > now - timeout - STALE_AFTER_S


class Answers:
    """The ``ai_answers`` and ``ai_calls`` tables."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, keys: Iterable[AnswerKey]) -> dict[AnswerKey, Answer]:
        out: dict[AnswerKey, Answer] = {}
        for key in keys:
            row = self.db.conn.execute(
                "SELECT state, answer, problem, asked_at FROM ai_answers WHERE item_id = ? AND schema = ? AND model = ? "
                "AND prompt = ?", (key.item_id, key.schema, key.model, key.prompt)).fetchone()
            if row is not None:
                out[key] = Answer(row["state"], json.loads(row["answer"]) if row["answer"] else None, row["problem"],
                                  row["asked_at"])
        return out

    def claim(self, key: AnswerKey, per_minute: int, max_calls: int | None, timeout: float,
              now: float | None = None) -> tuple[Claim, int | None]:
        """Whether the caller asks (then with the call's id, already counted)."""
        now = time.time() if now is None else now
        with self.db.transaction() as tx:
            row = tx.execute("SELECT state, asked_at FROM ai_answers WHERE item_id = ? AND schema = ? AND model = ? "
                             "AND prompt = ?", (key.item_id, key.schema, key.model, key.prompt)).fetchone()
            if row is not None and Answer(row["state"], None, None, row["asked_at"]).settled(now, timeout):
                return {"ready": Claim.READY, "pending": Claim.PENDING}.get(row["state"], Claim.FAILED), None
            claim, call = self._take_call(tx, per_minute, max_calls, now)
            if claim is not Claim.ASK:
                return claim, None
            tx.execute("INSERT INTO ai_answers (item_id, schema, model, prompt, state, asked_at) "
                       "VALUES (?, ?, ?, ?, 'pending', ?) ON CONFLICT (item_id, schema, model, prompt) DO UPDATE "
                       "SET state = 'pending', answer = NULL, problem = NULL, asked_at = excluded.asked_at",
                       (key.item_id, key.schema, key.model, key.prompt, now))
            return Claim.ASK, call

    def take_call(self, per_minute: int, max_calls: int | None, now: float | None = None) -> tuple[Claim, int | None]:
        """A call of one's own (the chat's), counted under the same limits as the help's."""
        with self.db.transaction() as tx:
            return self._take_call(tx, per_minute, max_calls, time.time() if now is None else now)

    def _take_call(self, tx: Any, per_minute: int, max_calls: int | None, now: float) -> tuple[Claim, int | None]:
        if max_calls is not None and tx.execute("SELECT COUNT(*) FROM ai_calls").fetchone()[0] >= max_calls:
            return Claim.CAPPED, None
        if tx.execute("SELECT COUNT(*) FROM ai_calls WHERE at > ?", (now - 60.0,)).fetchone()[0] >= per_minute:
            return Claim.WAITING, None
        return Claim.ASK, int(tx.execute("INSERT INTO ai_calls (at) VALUES (?)", (now,)).lastrowid)

    def end_call(self, call: int, seconds: float, problem: str | None) -> None:
        with self.db.transaction() as tx:
            tx.execute(_END_CALL, (seconds, problem, call))

    def capped(self, max_calls: int | None) -> bool:
        """The cap on calls is reached: nothing more is asked until the admin raises it."""
        return max_calls is not None and self.db.conn.execute("SELECT COUNT(*) FROM ai_calls").fetchone()[0] >= max_calls

    def finish(self, key: AnswerKey, call: int, seconds: float, value: Any, problem: str | None) -> None:
        """The call's outcome: the answer (JSON), or why there is none."""
        with self.db.transaction() as tx:
            tx.execute(_END_CALL, (seconds, problem, call))
            tx.execute("UPDATE ai_answers SET state = ?, answer = ?, problem = ? WHERE item_id = ? AND schema = ? "
                       "AND model = ? AND prompt = ?",
                       ("ready" if value else "failed", json.dumps(value) if value else None, problem,
                        key.item_id, key.schema, key.model, key.prompt))

    def status(self, model: str, now: float | None = None) -> dict[str, Any]:
        """What the admin page says: calls made (in all, in the last minute), answers kept, items
        without a hint, and the latest problem."""
        now = time.time() if now is None else now
        conn = self.db.conn
        calls = conn.execute("SELECT COUNT(*), SUM(at > ?), AVG(seconds) FROM ai_calls", (now - 60.0,)).fetchone()
        answers = dict(conn.execute("SELECT state, COUNT(*) FROM ai_answers WHERE model = ? GROUP BY state",
                                    (model,)).fetchall())
        last = conn.execute("SELECT at, problem FROM ai_calls WHERE problem IS NOT NULL ORDER BY id DESC LIMIT 1"
                            ).fetchone()
        return {"calls": calls[0], "calls_last_minute": calls[1] or 0,
                "mean_seconds": round(calls[2], 2) if calls[2] is not None else None,
                "answered": answers.get("ready", 0), "failed": answers.get("failed", 0),
                "pending": answers.get("pending", 0),
                "last_problem": {"at": last["at"], "problem": last["problem"]} if last else None}
