"""Labels: what annotators answered, stored one row per (user, item, schema).

Every write returns only after SQLite has committed it to disk, so the caller may acknowledge
it. A label's ``source`` says where it came from: ``human`` (clicked), ``import``
(``potato import-labels`` or the labels API) or ``suggestion`` (an annotator accepted a model's
suggestion; ``run_id`` names the run).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable, Iterator, Mapping, Sequence

from potato.db import Database


class LabelSource(str, Enum):
    HUMAN = "human"
    IMPORT = "import"
    SUGGESTION = "suggestion"


@dataclass(frozen=True)
class Label:
    user: str
    item_id: str
    schema: str
    value: Any
    source: LabelSource = LabelSource.HUMAN
    run_id: str | None = None
    updated_at: float = 0.0
    codebook_revision: int | None = None
    """The project's codebook revision when the answer was given (a project with a codebook)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "user": self.user,
            "id": self.item_id,
            "schema": self.schema,
            "label": self.value,
            "source": self.source.value,
            "updated_at": self.updated_at,
        }
        if self.run_id:
            out["run_id"] = self.run_id
        if self.codebook_revision is not None:
            out["codebook_revision"] = self.codebook_revision
        return out


def export_lines(labels: Iterable[Label], participants: Mapping[str, Mapping[str, Any]],
                 groups: Mapping[str, str] | None = None) -> Iterator[str]:
    """Labels as JSON lines, each with its annotator's platform ids where they came from one
    (``participant``: the ids the platform pays by) and, under ``ai_support.assist_holdout``, their
    group (``assist_group``: helped or control), for ``potato export`` and the admin API alike."""
    for lab in labels:
        line = lab.to_json()
        if lab.user in participants:
            line["participant"] = participants[lab.user]
        if groups is not None and lab.user in groups:
            line["assist_group"] = groups[lab.user]
        yield json.dumps(line, ensure_ascii=False) + "\n"


_UPSERT = """
INSERT INTO labels (user, item_id, schema, value, source, run_id, created_at, updated_at, codebook_revision)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (user, item_id, schema) DO UPDATE SET
    value = excluded.value, source = excluded.source, run_id = excluded.run_id,
    updated_at = excluded.updated_at, codebook_revision = excluded.codebook_revision
WHERE labels.value IS NOT excluded.value OR labels.source IS NOT excluded.source
"""


def _row_to_label(row: Any) -> Label:
    return Label(
        user=row["user"],
        item_id=row["item_id"],
        schema=row["schema"],
        value=json.loads(row["value"]),
        source=LabelSource(row["source"]),
        run_id=row["run_id"],
        updated_at=row["updated_at"],
        codebook_revision=row["codebook_revision"],
    )


class LabelStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def touch_user(self, user: str) -> None:
        now = time.time()
        self.db.write([(
            ("INSERT INTO users (name, created_at, last_seen) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen"),
            (user, now, now),
        )])

    def save(self, labels: Sequence[Label], delete: Iterable[tuple[str, str, str]] = ()) -> None:
        """Store ``labels`` (and remove the (user, item, schema) keys in ``delete``) in one commit.

        Saving an identical value again changes nothing, so imports are idempotent.
        """
        now = time.time()
        statements: list[tuple[str, tuple]] = [
            (
                _UPSERT,
                (
                    lab.user, lab.item_id, lab.schema, json.dumps(lab.value, ensure_ascii=False),
                    lab.source.value, lab.run_id, now, now, lab.codebook_revision,
                ),
            )
            for lab in labels
        ]
        statements += [
            ("DELETE FROM labels WHERE user = ? AND item_id = ? AND schema = ?", key) for key in delete
        ]
        if statements:
            self.db.write(statements)

    def for_item(self, user: str, item_id: str) -> dict[str, Label]:
        rows = self.db.conn.execute(
            "SELECT * FROM labels WHERE user = ? AND item_id = ?", (user, item_id)
        ).fetchall()
        return {row["schema"]: _row_to_label(row) for row in rows}

    def labelled_count(self, user: str) -> int:
        """How many of the project's items ``user`` has labelled (the page's "n of N")."""
        # Walks the user's labels (primary-key prefix), not every item: cost grows with their work only.
        row = self.db.conn.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT item_id FROM labels WHERE user = ?) l "
            "JOIN items i ON i.id = l.item_id",
            (user,),
        ).fetchone()
        return int(row[0])

    def next_unlabelled(self, user: str, start: int, backwards: bool = False) -> int | None:
        """The first position from ``start`` on (or back, wrapping around) that ``user`` has not
        labelled; None when every item is labelled.

        SQLite walks the items in order and probes the labels' primary key for each, stopping at
        the first gap: no per-request list of the user's labels (bench/annotators.py).
        """
        sql = (
            "SELECT position FROM items i WHERE position {cmp} :start AND NOT EXISTS "
            "(SELECT 1 FROM labels l WHERE l.user = :user AND l.item_id = i.id) ORDER BY position {order} LIMIT 1"
        )
        return first_wrapping(self.db.conn, sql, {"start": start, "user": user}, backwards)

    def iter_labels(self, user: str | None = None, schema: str | None = None) -> Iterator[Label]:
        sql = "SELECT * FROM labels"
        where: list[str] = []
        params: list[str] = []
        if user is not None:
            where.append("user = ?")
            params.append(user)
        if schema is not None:
            where.append("schema = ?")
            params.append(schema)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY user, item_id, schema"
        for row in self.db.conn.execute(sql, params):
            yield _row_to_label(row)

    def count(self) -> int:
        return int(self.db.conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0])

    def progress(self) -> list[dict[str, Any]]:
        """Per annotator: items labelled and when last seen (the admin's progress view)."""
        rows = self.db.conn.execute(
            """
            SELECT u.name AS user, u.last_seen AS last_seen,
                   COUNT(DISTINCT l.item_id) AS items, MAX(l.updated_at) AS last_label
            FROM users u LEFT JOIN labels l ON l.user = u.name
            GROUP BY u.name ORDER BY u.name
            """
        ).fetchall()
        return [dict(row) for row in rows]


def first_wrapping(conn: Any, sql: str, params: Mapping[str, Any], backwards: bool) -> int | None:
    """The first position ``sql`` finds from ``:start`` on (or back), wrapping around once.

    ``sql`` holds ``{cmp}`` and ``{order}`` for the direction; it is run for the part from the start
    to the end, then, if nothing was found, for the part before the start.
    """
    order = "DESC" if backwards else "ASC"
    for cmp in (("<=", ">") if backwards else (">=", "<")):
        row = conn.execute(sql.format(cmp=cmp, order=order), params).fetchone()
        if row is not None:
            return int(row[0])
    return None


def values_by_schema(labels: Mapping[str, Label]) -> dict[str, Any]:
    return {schema: label.value for schema, label in labels.items()}
