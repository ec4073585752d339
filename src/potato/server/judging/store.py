"""The judges' answers and the calibration run's state, in the project's database.

One run at a time for the whole server: starting it is one write transaction that finds no live run
(a run whose process died stops beating and may be started again), so two gunicorn workers never
judge the same items twice. Answers are kept per draw under the run's digest of the prompt and the
judges' settings, so a run that stopped goes on where it was, and a changed prompt starts afresh.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Iterable

from potato.db import Database

GENERATING = "generating"
SAMPLED = "sampled"      # the judges are done and the sample is drawn: the annotators label it
STOPPED = "stopped"      # the judges' server failed; starting again goes on where it stopped


@dataclass(frozen=True)
class Draw:
    model: str
    item_id: str
    schema: str
    draw: int
    label: str | None
    """The option the reply picked; None: the reply named none (a failed draw, it agrees with nothing)."""
    reply: str
    problem: str | None
    seconds: float


@dataclass(frozen=True)
class RunState:
    state: str
    prompt: str
    started_at: float
    beat_at: float
    owner: str
    problem: str | None
    sample: list[str] | None
    finished_at: float | None

    def live(self, now: float, stale_after: float) -> bool:
        return self.state == GENERATING and self.beat_at > now - stale_after


class JudgeStore:
    """The ``judge_draws`` and ``judge_state`` tables."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def state(self) -> RunState | None:
        row = self.db.conn.execute("SELECT * FROM judge_state WHERE id = 1").fetchone()
        if row is None:
            return None
        return RunState(row["state"], row["prompt"], row["started_at"], row["beat_at"], row["owner"], row["problem"],
                        json.loads(row["sample"]) if row["sample"] else None, row["finished_at"])

    def start(self, prompt: str, owner: str, stale_after: float, now: float | None = None) -> RunState | None:
        """Claim the run for ``owner``; the live run instead when one is going."""
        now = time.time() if now is None else now
        with self.db.transaction() as tx:
            row = tx.execute("SELECT state, beat_at FROM judge_state WHERE id = 1").fetchone()
            if row is not None and row["state"] == GENERATING and row["beat_at"] > now - stale_after:
                return self.state()
            tx.execute("INSERT INTO judge_state (id, state, prompt, started_at, beat_at, owner) VALUES (1, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (id) DO UPDATE SET state = excluded.state, prompt = excluded.prompt, "
                       "started_at = excluded.started_at, beat_at = excluded.beat_at, owner = excluded.owner, "
                       "problem = NULL, sample = NULL, finished_at = NULL", (GENERATING, prompt, now, now, owner))
        return None

    def beat(self, owner: str) -> bool:
        """Still this owner's run (False: another process took it over after a long silence)."""
        with self.db.transaction() as tx:
            done = tx.execute("UPDATE judge_state SET beat_at = ? WHERE id = 1 AND owner = ? AND state = ?",
                              (time.time(), owner, GENERATING))
            return done.rowcount == 1

    def finish(self, owner: str, sample: list[str]) -> None:
        with self.db.transaction() as tx:
            tx.execute("UPDATE judge_state SET state = ?, sample = ?, finished_at = ?, problem = NULL WHERE id = 1 "
                       "AND owner = ?", (SAMPLED, json.dumps(sample), time.time(), owner))

    def stop(self, owner: str, problem: str) -> None:
        with self.db.transaction() as tx:
            tx.execute("UPDATE judge_state SET state = ?, problem = ?, finished_at = ? WHERE id = 1 AND owner = ?",
                       (STOPPED, problem, time.time(), owner))

    def done(self, prompt: str) -> set[tuple[str, str, str, int]]:
        """(model, item, schema, draw) already answered under ``prompt``."""
        rows = self.db.conn.execute("SELECT model, item_id, schema, draw FROM judge_draws WHERE prompt = ?", (prompt,))
        return {(r[0], r[1], r[2], int(r[3])) for r in rows}

    def add(self, prompt: str, draws: Iterable[Draw]) -> None:
        now = time.time()
        with self.db.transaction() as tx:
            tx.executemany("INSERT OR REPLACE INTO judge_draws (model, prompt, item_id, schema, draw, label, reply, "
                           "problem, seconds, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           [(d.model, prompt, d.item_id, d.schema, d.draw, d.label, d.reply[:4000], d.problem,
                             d.seconds, now) for d in draws])

    def draws(self, prompt: str) -> dict[tuple[str, str, str], list[Draw]]:
        """(model, item, schema) -> its draws in order."""
        out: dict[tuple[str, str, str], list[Draw]] = {}
        for row in self.db.conn.execute("SELECT * FROM judge_draws WHERE prompt = ? ORDER BY model, item_id, schema, "
                                        "draw", (prompt,)):
            out.setdefault((row["model"], row["item_id"], row["schema"]), []).append(
                Draw(row["model"], row["item_id"], row["schema"], int(row["draw"]), row["label"], row["reply"] or "",
                     row["problem"], row["seconds"] or 0.0))
        return out

    def count(self, prompt: str) -> tuple[int, int]:
        """Draws answered under ``prompt``, and how many of them named no option."""
        row = self.db.conn.execute("SELECT COUNT(*), SUM(label IS NULL) FROM judge_draws WHERE prompt = ?",
                                   (prompt,)).fetchone()
        return int(row[0]), int(row[1] or 0)
