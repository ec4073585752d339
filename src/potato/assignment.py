"""Which items each annotator gets, and in what order (upstream Potato's assignment keys).

Without assignment keys every annotator gets every item in file order (:class:`AllItems`).
With them (:class:`Assigned`) each annotator has a queue of their own, kept in the database:
an item joins it when they move past the end of it, chosen by the strategy among the items that
still need annotators (``max_annotations_per_item``), until the queue holds
``max_annotations_per_user`` items. Assigning one item at a time keeps the per-item cap fair:
an annotator who signs in and leaves holds one item, not their whole quota. Each assignment is
one write transaction, so two gunicorn workers never hand the last free place on an item to two
people.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from typing import Callable, Protocol

from potato.config.schema import Assignment
from potato.db import Database
from potato.items import Item, ItemSet
from potato.labels import LabelStore, first_wrapping


class Queue(Protocol):
    """One annotator's items by position (0-based), as navigation walks them."""

    def total(self, user: str) -> int:
        """How many items this annotator is to label (what "n of N" shows)."""

    def size(self, user: str) -> int:
        """Items in the queue now (positions 0 .. size-1 exist)."""

    def at(self, user: str, position: int) -> Item: ...

    def position(self, user: str, item_id: str) -> int | None:
        """Where ``item_id`` is in the queue; None when it is not this annotator's item."""

    def labelled(self, user: str) -> int: ...

    def next_unlabelled(self, user: str, start: int, backwards: bool = False) -> int | None: ...

    def extend(self, user: str) -> bool:
        """Add one more item to the queue; False when there is none to add."""

    def can_extend(self, user: str) -> bool:
        """Whether :meth:`extend` would add an item now (reads only)."""


def items_done(done: int, total: int, size: int, can_extend: bool) -> bool:
    """Every item labelled, or (items assigned) every assigned one and none left to assign (pure)."""
    return done == total or (done == size and not can_extend)


class AllItems:
    """Every item, in file order, for everyone."""

    def __init__(self, items: ItemSet, labels: LabelStore) -> None:
        self.items, self.labels = items, labels

    def total(self, user: str) -> int:
        return len(self.items)

    def size(self, user: str) -> int:
        return len(self.items)

    def at(self, user: str, position: int) -> Item:
        return self.items.at(position)

    def position(self, user: str, item_id: str) -> int | None:
        return self.items.position(item_id) if item_id in self.items else None

    def labelled(self, user: str) -> int:
        return self.labels.labelled_count(user)

    def next_unlabelled(self, user: str, start: int, backwards: bool = False) -> int | None:
        return self.labels.next_unlabelled(user, start, backwards)

    def extend(self, user: str) -> bool:
        return False

    def can_extend(self, user: str) -> bool:
        return False


def order_key(strategy: str, seed: int, user: str, n_items: int) -> Callable[[int, int], tuple[int, ...]]:
    """How candidates are ranked for ``user`` (pure): file order, a shuffle of their own (the same
    on every call, from ``random_seed`` and the name), or the items with the fewest annotators first
    (file order among equals)."""
    if strategy == "random":
        order = list(range(n_items))
        random.Random(f"{seed}:{user}").shuffle(order)
        rank = [0] * n_items
        for place, position in enumerate(order):
            rank[position] = place
        return lambda position, annotators: (rank[position],)
    if strategy == "least_annotated":
        return lambda position, annotators: (annotators, position)
    return lambda position, annotators: (position,)


ORDER_KEY = "active_learning:order"
"""The ``meta`` row holding active learning's order: ``{"run_id", "uncertainty", "ids": [...]}``."""


def uncertain_first(conn: sqlite3.Connection) -> dict[str, int]:
    """Active learning's order, item id -> place (0 first); empty before its first run."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (ORDER_KEY,)).fetchone()
    return {item_id: place for place, item_id in enumerate(json.loads(row[0])["ids"])} if row else {}


class Assigned:
    """Queues of their own per annotator, in the ``assignments`` table.

    With active learning (``model_first``) the next item assigned is the first in the latest run's
    order that the rules allow, before the assignment strategy's own order; items the annotator
    labelled before their queue existed (a project that turned active learning on midway) come first,
    so they keep counting as done."""

    def __init__(self, items: ItemSet, db: Database, rules: Assignment, model_first: bool = False) -> None:
        self.items, self.db, self.rules, self.model_first = items, db, rules, model_first

    def total(self, user: str) -> int:
        cap = self.rules.max_annotations_per_user
        return min(cap, len(self.items)) if cap else len(self.items)

    def size(self, user: str) -> int:
        row = self.db.conn.execute("SELECT COUNT(*) FROM assignments WHERE user = ?", (user,)).fetchone()
        return int(row[0])

    def at(self, user: str, position: int) -> Item:
        row = self.db.conn.execute("SELECT item_id FROM assignments WHERE user = ? AND seq = ?",
                                   (user, position)).fetchone()
        if row is None:
            raise IndexError(position)
        return self.items.get(row[0])

    def position(self, user: str, item_id: str) -> int | None:
        row = self.db.conn.execute("SELECT seq FROM assignments WHERE user = ? AND item_id = ?",
                                   (user, item_id)).fetchone()
        return None if row is None else int(row[0])

    def labelled(self, user: str) -> int:
        row = self.db.conn.execute(
            "SELECT COUNT(*) FROM assignments a WHERE a.user = ? AND EXISTS "
            "(SELECT 1 FROM labels l WHERE l.user = a.user AND l.item_id = a.item_id)", (user,)).fetchone()
        return int(row[0])

    def next_unlabelled(self, user: str, start: int, backwards: bool = False) -> int | None:
        sql = ("SELECT seq FROM assignments a WHERE a.user = :user AND seq {cmp} :start AND NOT EXISTS "
               "(SELECT 1 FROM labels l WHERE l.user = a.user AND l.item_id = a.item_id) ORDER BY seq {order} LIMIT 1")
        return first_wrapping(self.db.conn, sql, {"start": start, "user": user}, backwards)

    def extend(self, user: str) -> bool:
        with self.db.transaction() as conn:
            found = self._next_item(conn, user)
            if found is None:
                return False
            seq, item_id = found
            conn.execute("INSERT INTO assignments (user, seq, item_id, assigned_at) VALUES (?, ?, ?, ?)",
                         (user, seq, item_id, time.time()))
            return True

    def can_extend(self, user: str) -> bool:
        return self._next_item(self.db.conn, user) is not None

    def _next_item(self, conn: sqlite3.Connection, user: str) -> tuple[int, str] | None:
        """(seq, item id) of the item to assign next, or None when the quota is full or no item needs
        another annotator."""
        rules = self.rules
        have = conn.execute("SELECT COUNT(*) FROM assignments WHERE user = ?", (user,)).fetchone()[0]
        if have >= self.total(user):
            return None
        counts = dict(conn.execute("SELECT item_id, COUNT(*) FROM assignments GROUP BY item_id").fetchall())
        mine = {r[0] for r in conn.execute("SELECT item_id FROM assignments WHERE user = ?", (user,))}
        cap = rules.max_annotations_per_item
        rank = order_key(rules.strategy, rules.random_seed, user, len(self.items))
        ahead = uncertain_first(conn) if self.model_first else {}
        done = {r[0] for r in conn.execute("SELECT DISTINCT item_id FROM labels WHERE user = ?", (user,))} \
            if self.model_first else set()
        best: tuple[tuple[int, ...], str] | None = None
        for position, item in enumerate(self.items):
            taken = counts.get(item.id, 0)
            if item.id in mine or (cap is not None and taken >= cap):
                continue
            if item.id in done:
                key: tuple[int, ...] = (-1, position)
            elif item.id in ahead:
                key = (0, ahead[item.id])
            else:
                key = (1, *rank(position, taken))
            if best is None or key < best[0]:
                best = (key, item.id)
        return None if best is None else (int(have), best[1])


def queue_for(items: ItemSet, db: Database, labels: LabelStore, rules: Assignment, model_first: bool = False) -> Queue:
    """Every item in file order for everyone, unless assignment rules or active learning give each
    annotator a queue of their own (active learning's order can only apply to items not yet handed out)."""
    if rules.active or model_first:
        return Assigned(items, db, rules, model_first)
    return AllItems(items, labels)
