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

from potato.study.platforms import Arrival, Outcome
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
    later_arrivals: tuple[Mapping[str, Any], ...] = ()
    """Arrivals after the first with other ids (``Participants.arrived``): shown to the admin."""

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
        if self.later_arrivals:
            out["later_arrivals"] = [dict(a) for a in self.later_arrivals]
        return out


_ARRIVED = """
INSERT INTO participants (user, platform, worker_id, session_id, study_id, params, arrived_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (user) DO NOTHING
"""


def other_ids(first: Participant, who: Arrival) -> bool:
    """A later link names ids the first arrival did not have, or other values for them (pure): a
    link typed again without its ids is the same participant coming back, not a new claim."""
    return who.worker_id != first.worker_id or any(first.params.get(k) != v for k, v in who.params.items())


class Participants:
    def __init__(self, db: Database) -> None:
        self.db = db

    def arrived(self, user: str, platform: str, who: Arrival) -> None:
        """Record an arrival. The first one's ids are the ones the platform pays by and stay as they
        are; a later link with other ids (a second browser, a link edited by hand) is recorded beside
        them for the admin to see, never in their place."""
        params = json.dumps(dict(who.params), ensure_ascii=False)
        now = time.time()
        old = self.get(user)
        if old is None:
            self.db.write([(_ARRIVED, (user, platform, who.worker_id, who.session_id, who.study_id, params, now))])
            old = self.get(user)
            if old is None or not other_ids(old, who):
                return  # the first arrival (or one as the first was, racing it)
        elif not other_ids(old, who):
            return
        self.db.write([("INSERT INTO participant_arrivals (user, worker_id, params, arrived_at) VALUES (?, ?, ?, ?)",
                        (user, who.worker_id, params, now))])

    def later_arrivals(self, user: str) -> list[dict[str, Any]]:
        """The arrivals after the first that named other ids, oldest first."""
        rows = self.db.conn.execute("SELECT * FROM participant_arrivals WHERE user = ? ORDER BY arrived_at, rowid",
                                    (user,)).fetchall()
        return [_later(row) for row in rows]

    def finished(self, user: str, outcome: Outcome) -> None:
        """The first time the participant reached the done page, and how their session ended."""
        self.db.write([("UPDATE participants SET finished_at = ?, outcome = ? "
                        "WHERE user = ? AND finished_at IS NULL", (time.time(), outcome.value, user))])

    def get(self, user: str) -> Participant | None:
        row = self.db.conn.execute("SELECT * FROM participants WHERE user = ?", (user,)).fetchone()
        return None if row is None else _participant(row, self.later_arrivals(user))

    def all(self) -> dict[str, Participant]:
        later: dict[str, list[dict[str, Any]]] = {}
        for row in self.db.conn.execute("SELECT * FROM participant_arrivals ORDER BY arrived_at, rowid"):
            later.setdefault(row["user"], []).append(_later(row))
        rows = self.db.conn.execute("SELECT * FROM participants ORDER BY user").fetchall()
        return {row["user"]: _participant(row, later.get(row["user"], ())) for row in rows}


def _later(row: Any) -> dict[str, Any]:
    return {"id": row["worker_id"], "params": json.loads(row["params"]), "arrived_at": row["arrived_at"]}


def _participant(row: Any, later: Any = ()) -> Participant:
    return Participant(user=row["user"], platform=row["platform"], worker_id=row["worker_id"],
                       session_id=row["session_id"], study_id=row["study_id"], params=json.loads(row["params"]),
                       arrived_at=row["arrived_at"], finished_at=row["finished_at"], outcome=row["outcome"],
                       later_arrivals=tuple(later))


def participant_ids(db: Database) -> dict[str, dict[str, Any]]:
    """Every participant's export form, by user: what exports put beside their labels."""
    return {user: p.to_json() for user, p in Participants(db).all().items()}
