"""The running project: config, items and stores, shared by the server, the CLI and training."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from potato.assignment import Queue, queue_for
from potato.config.schema import Config
from potato.db import Database
from potato.items import ItemSet, load_items
from potato.labels import Label, LabelSource, LabelStore
from potato.study.groups import AssistGroups
from potato.study.holdout import CONTROL, HELPED


@dataclass
class Project:
    config: Config
    items: ItemSet
    db: Database
    labels: LabelStore
    queue: Queue
    """Each annotator's items in order: all of them, or their own when the project assigns items."""
    # Seams the training subsystem fills in; None when training is off.
    suggestions_for: Callable[[str], dict[str, Any]] | None = None
    on_labels_saved: Callable[[int], None] | None = None

    @classmethod
    def open(cls, config: Config) -> Project:
        items = load_items(
            config.data_files, config.item_properties.id_key, config.item_properties.text_key
        )
        db = Database(config.database_path)
        sync_items(db, items)
        labels = LabelStore(db)
        return cls(config=config, items=items, db=db, labels=labels,
                   queue=queue_for(items, db, labels, config.assignment, config.active_learning.enabled))

    def helped(self, user: str) -> bool:
        """Whether the annotator sees AI help and model suggestions: everyone, unless
        ``ai_support.assist_holdout`` drew them into the control group (drawn here, the first time)."""
        return AssistGroups(self.db).group_of(user, self.config.ai_support.holdout) == HELPED

    def training_labels(self) -> tuple[list[Label], int]:
        """The labels a run trains on, and how many were left out: all of them, or under
        ``assist_holdout.train_on: unhelped`` only the control group's and imported ones (a model
        must not learn its own suggestions back from the annotators it helped)."""
        labels = list(self.labels.iter_labels())
        holdout = self.config.ai_support.holdout
        if holdout is None or holdout.train_on != "unhelped":
            return labels, 0
        groups = AssistGroups(self.db).all()
        kept = [lab for lab in labels if lab.source is LabelSource.IMPORT or groups.get(lab.user) == CONTROL]
        return kept, len(labels) - len(kept)

    def save_labels(self, labels: Sequence[Label], delete: Iterable[tuple[str, str, str]] = ()) -> None:
        """Store labels (on disk before this returns) and tell training they arrived."""
        self.labels.save(labels, delete)
        if labels and self.on_labels_saved is not None:
            self.on_labels_saved(len(labels))


def sync_items(db: Database, items: ItemSet) -> None:
    """Mirror the item order into the database (annotation navigation queries it).

    Rewritten only when the data files changed, so a restart of an unchanged project writes nothing.
    """
    digest = hashlib.sha256("\n".join(items.ids).encode("utf-8")).hexdigest()
    row = db.conn.execute("SELECT value FROM meta WHERE key = 'items_digest'").fetchone()
    if row is not None and row[0] == digest:
        return
    with db.transaction() as tx:
        tx.execute("DELETE FROM items")
        tx.executemany("INSERT INTO items (position, id) VALUES (?, ?)", enumerate(items.ids))
        tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('items_digest', ?)", (digest,))
        # Annotators' queues keep the items that are still there, in their order, numbered afresh.
        kept: dict[str, list[tuple[str, float]]] = {}
        for user, item_id, at in tx.execute("SELECT user, item_id, assigned_at FROM assignments ORDER BY user, seq"):
            if item_id in items:
                kept.setdefault(user, []).append((item_id, at))
        tx.execute("DELETE FROM assignments")
        tx.executemany("INSERT INTO assignments (user, seq, item_id, assigned_at) VALUES (?, ?, ?, ?)",
                       [(user, seq, item_id, at) for user, queue in kept.items()
                        for seq, (item_id, at) in enumerate(queue)])
