"""Where each participant is in a study's pages, and what they answered there (SQLite).

Answers and the step past a page are one commit, so a page acknowledged is a page stored: a
reload or a restart shows the next page, never the same page again or one skipped.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator, Mapping

from potato.db import Database
from potato.study.phases import Attempt

_ANSWER = """
INSERT INTO phase_answers (user, phase, schema, value, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (user, phase, schema) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
"""
_STATE = """
INSERT INTO phase_states (user, phase, state, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (user, phase) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at
"""


class PhaseStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def states(self, user: str) -> dict[str, str]:
        rows = self.db.conn.execute("SELECT phase, state FROM phase_states WHERE user = ?", (user,)).fetchall()
        return {row["phase"]: row["state"] for row in rows}

    def finish(self, user: str, phase: str, state: str, answers: Mapping[str, Any] | None = None) -> None:
        """Store a page's answers (replacing any earlier ones) and its end state, in one commit."""
        now = time.time()
        statements: list[tuple[str, tuple]] = []
        if answers is not None:
            statements.append(("DELETE FROM phase_answers WHERE user = ? AND phase = ?", (user, phase)))
            statements += [(_ANSWER, (user, phase, name, json.dumps(value, ensure_ascii=False), now))
                           for name, value in answers.items()]
        statements.append((_STATE, (user, phase, state, now)))
        self.db.write(statements)

    def answers(self, user: str, phase: str) -> dict[str, Any]:
        rows = self.db.conn.execute("SELECT schema, value FROM phase_answers WHERE user = ? AND phase = ?",
                                    (user, phase)).fetchall()
        return {row["schema"]: json.loads(row["value"]) for row in rows}

    def all_answers(self) -> Iterator[dict[str, Any]]:
        """Every page's answers, by user then page then question, as the exports write them."""
        rows = self.db.conn.execute("SELECT * FROM phase_answers ORDER BY user, phase, schema")
        for row in rows:
            yield {"user": row["user"], "phase": row["phase"], "schema": row["schema"],
                   "label": json.loads(row["value"]), "updated_at": row["updated_at"]}

    def steps(self, user: str) -> list[dict[str, Any]]:
        """Each page ``user`` got past, how (done, failed, screened_out) and when, in that order."""
        rows = self.db.conn.execute("SELECT phase, state, updated_at FROM phase_states WHERE user = ? "
                                    "ORDER BY updated_at, rowid", (user,)).fetchall()
        return [{"phase": row["phase"], "state": row["state"], "at": row["updated_at"]} for row in rows]

    def all_attempts(self, user: str) -> list[dict[str, Any]]:
        """Every training answer ``user`` gave, in every round, with whether it was right."""
        rows = self.db.conn.execute("SELECT * FROM training_attempts WHERE user = ? AND item_id != '' "
                                    "ORDER BY created_at, rowid", (user,)).fetchall()
        return [{"phase": row["phase"], "round": row["round"], "item": row["item_id"],
                 "answers": json.loads(row["answers"]), "correct": bool(row["correct"]), "at": row["created_at"]}
                for row in rows]

    def round(self, user: str, phase: str) -> int:
        row = self.db.conn.execute("SELECT MAX(round) FROM training_attempts WHERE user = ? AND phase = ?",
                                   (user, phase)).fetchone()
        return int(row[0] or 0)

    def attempts(self, user: str, phase: str) -> list[Attempt]:
        """The tries of the current round (a repeated training starts a new round; old tries stay)."""
        rows = self.db.conn.execute(
            "SELECT item_id, correct FROM training_attempts WHERE user = ? AND phase = ? AND round = ? "
            "AND item_id != '' ORDER BY created_at, rowid", (user, phase, self.round(user, phase))).fetchall()
        return [Attempt(row["item_id"], bool(row["correct"])) for row in rows]

    def attempt(self, user: str, phase: str, item_id: str, answers: Mapping[str, Any], correct: bool) -> None:
        number = self.round(user, phase)
        self.db.write([("INSERT INTO training_attempts (user, phase, round, item_id, answers, correct, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (user, phase, number, item_id, json.dumps(dict(answers), ensure_ascii=False), int(correct),
                         time.time()))])

    def start_over(self, user: str, phase: str) -> None:
        """``repeat_training``: the next try opens a new round (a marker attempt nobody answered)."""
        self.db.write([("INSERT INTO training_attempts (user, phase, round, item_id, answers, correct, created_at) "
                        "VALUES (?, ?, ?, '', '{}', 0, ?)", (user, phase, self.round(user, phase) + 1, time.time()))])
