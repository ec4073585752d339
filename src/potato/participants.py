"""Participants from crowdsourcing platforms: the ids their link carried, kept beside their labels.

A platform pays by its own ids (Prolific's session, MTurk's assignment), so they are stored when
the participant arrives, durably like a label, and exported with the labels: an admin can match
every answer to the submission it was paid for.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from potato.crowdsourcing import Arrival, Outcome
from potato.db import Database


@dataclass(frozen=True)
class Participant:
    user: str
    platform: str
    worker_id: str
    session_id: str | None = None
    study_id: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    arrived_at: float = 0.0
    finished_at: float | None = None
    outcome: str | None = None

    @property
    def arrival(self) -> Arrival:
        return Arrival(self.worker_id, self.session_id, self.study_id, self.params)

    def to_json(self) -> dict[str, Any]:
        """The participant as an export line carries it (under ``participant``)."""
        out: dict[str, Any] = {"platform": self.platform, "id": self.worker_id}
        for key in ("session_id", "study_id"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.params:
            out["params"] = dict(self.params)
        if self.finished_at is not None:
            out["finished_at"] = self.finished_at
            out["outcome"] = self.outcome
        return out


_ARRIVED = """
INSERT INTO participants (user, platform, worker_id, session_id, study_id, params, arrived_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (user) DO UPDATE SET
    platform = excluded.platform, worker_id = excluded.worker_id,
    session_id = COALESCE(excluded.session_id, participants.session_id),
    study_id = COALESCE(excluded.study_id, participants.study_id),
    params = excluded.params
"""


class Participants:
    def __init__(self, db: Database) -> None:
        self.db = db

    def arrived(self, user: str, platform: str, who: Arrival) -> None:
        """Record an arrival; coming back by the link again keeps the first arrival's time, and
        the ids a later link leaves out."""
        old = self.get(user)
        params = {**(old.params if old else {}), **who.params}
        self.db.write([(_ARRIVED, (user, platform, who.worker_id, who.session_id, who.study_id,
                                   json.dumps(params, ensure_ascii=False), time.time()))])

    def finished(self, user: str, outcome: Outcome) -> None:
        """The first time the participant reached the done page, and how their session ended."""
        self.db.write([("UPDATE participants SET finished_at = ?, outcome = ? "
                        "WHERE user = ? AND finished_at IS NULL", (time.time(), outcome.value, user))])

    def get(self, user: str) -> Participant | None:
        row = self.db.conn.execute("SELECT * FROM participants WHERE user = ?", (user,)).fetchone()
        return None if row is None else _participant(row)

    def all(self) -> dict[str, Participant]:
        rows = self.db.conn.execute("SELECT * FROM participants ORDER BY user").fetchall()
        return {row["user"]: _participant(row) for row in rows}


def _participant(row: Any) -> Participant:
    return Participant(user=row["user"], platform=row["platform"], worker_id=row["worker_id"],
                       session_id=row["session_id"], study_id=row["study_id"], params=json.loads(row["params"]),
                       arrived_at=row["arrived_at"], finished_at=row["finished_at"], outcome=row["outcome"])


def participant_ids(db: Database) -> dict[str, dict[str, Any]]:
    """Every participant's export form, by user: what exports put beside their labels."""
    return {user: p.to_json() for user, p in Participants(db).all().items()}
