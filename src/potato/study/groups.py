"""Each annotator's group under ``ai_support.assist_holdout`` (helped or control), drawn at random
the first time they are shown an item and kept: the same person never switches sides, whatever
server process or session serves them, and the export says who was in which."""

from __future__ import annotations

import random
import time

from potato.config.schema import AssistHoldout
from potato.db import Database
from potato.study.holdout import HELPED, draw

_DRAW = random.SystemRandom()


class AssistGroups:
    def __init__(self, db: Database) -> None:
        self.db = db

    def group_of(self, user: str, holdout: AssistHoldout | None) -> str:
        """The annotator's group, drawn now if they have none (everyone is helped without a holdout)."""
        if holdout is None:
            return HELPED
        row = self.db.conn.execute("SELECT grp FROM assist_groups WHERE user = ?", (user,)).fetchone()
        if row is not None:
            return str(row[0])
        with self.db.transaction() as tx:  # two first requests at once: the first draw counts
            tx.execute("INSERT OR IGNORE INTO assist_groups (user, grp, share, drawn_at) VALUES (?, ?, ?, ?)",
                       (user, draw(holdout.share, _DRAW.random()), holdout.share, time.time()))
            return str(tx.execute("SELECT grp FROM assist_groups WHERE user = ?", (user,)).fetchone()[0])

    def all(self) -> dict[str, str]:
        return {row[0]: row[1] for row in self.db.conn.execute("SELECT user, grp FROM assist_groups")}
