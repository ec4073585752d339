"""A codebook: the labels of ``codebook: true`` schemes, each with its definition, and the codes
annotators add under ``codebook_mode: extensible``.

Added codes live in the database beside the labels; the codebook's revision counts them, and every
label records the revision it was made under, so an analysis can tell which codes an annotator could
have chosen. Codes are only ever added: a code somebody used never disappears from under their label.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from potato.config.schema import Config
from potato.db import Database
from potato.training.schemes import LabelOption, Scheme

CODE_MAX = 64
DEFINITION_MAX = 500


class CodeRefused(ValueError):
    """A code that cannot be added; the message says why and what to do."""


@dataclass(frozen=True)
class Code:
    scheme: str
    name: str
    definition: str = ""
    added_by: str = ""
    added_at: float = 0.0
    revision: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "name": self.name, "definition": self.definition, "added_by": self.added_by,
                "added_at": self.added_at, "revision": self.revision}


def check_code(schemes: Sequence[Scheme], added: Mapping[str, Sequence[Code]], scheme_name: object, name: object,
               definition: object) -> tuple[Scheme, str, str]:
    """The scheme, name and definition of a code to add, or :class:`CodeRefused` (pure)."""
    scheme = next((s for s in schemes if s.name == scheme_name and s.codebook), None)
    if scheme is None:
        names = ", ".join(s.name for s in schemes if s.codebook)
        raise CodeRefused(f"{scheme_name!r} is not a codebook scheme; codes are added to: {names}.")
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > CODE_MAX or not name.strip().isprintable():
        raise CodeRefused(f"A code is a name of 1 to {CODE_MAX} printable characters.")
    if definition is not None and (not isinstance(definition, str) or len(definition) > DEFINITION_MAX):
        raise CodeRefused(f"A definition is text of at most {DEFINITION_MAX} characters.")
    clean = name.strip()
    taken = {label.casefold() for label in scheme.labels} | {c.name.casefold() for c in added.get(scheme.name, ())}
    if clean.casefold() in taken:
        raise CodeRefused(f"{clean!r} is already a code of {scheme.name}: pick it from the list.")
    return scheme, clean, (definition or "").strip()


def with_codes(schemes: Sequence[Scheme], added: Mapping[str, Sequence[Code]]) -> tuple[Scheme, ...]:
    """The schemes with the codes annotators added, after their own labels (pure)."""
    out = []
    for scheme in schemes:
        codes = added.get(scheme.name, ()) if scheme.codebook else ()
        if codes:
            scheme = replace(scheme, labels=scheme.labels + tuple(c.name for c in codes),
                             options=scheme.options + tuple(LabelOption(c.name, tooltip=c.definition) for c in codes))
        out.append(scheme)
    return tuple(out)


def revision_of(added: Mapping[str, Sequence[Code]]) -> int:
    """The codebook's revision: each added code is the next one (pure)."""
    return max((c.revision for codes in added.values() for c in codes), default=0)


class Codebook:
    def __init__(self, db: Database) -> None:
        self.db = db

    def revision(self) -> int:
        row = self.db.conn.execute("SELECT MAX(revision) FROM codebook_codes").fetchone()
        return int(row[0] or 0)

    def added(self) -> dict[str, list[Code]]:
        rows = self.db.conn.execute("SELECT * FROM codebook_codes ORDER BY revision").fetchall()
        out: dict[str, list[Code]] = {}
        for row in rows:
            out.setdefault(row["scheme"], []).append(Code(row["scheme"], row["name"], row["definition"],
                                                          row["added_by"], row["added_at"], row["revision"]))
        return out

    def add(self, schemes: Sequence[Scheme], scheme_name: object, name: object, definition: object,
            user: str) -> Code:
        """Add a code for everyone, as the next revision; two annotators adding at once both get theirs
        (the revision is taken inside the write's transaction)."""
        scheme, clean, text = check_code(schemes, self.added(), scheme_name, name, definition)
        try:
            with self.db.transaction() as tx:
                row = tx.execute("SELECT COALESCE(MAX(revision), 0) + 1 FROM codebook_codes").fetchone()
                now = time.time()
                tx.execute("INSERT INTO codebook_codes (scheme, name, definition, added_by, added_at, revision) "
                           "VALUES (?, ?, ?, ?, ?, ?)", (scheme.name, clean, text, user, now, row[0]))
        except sqlite3.IntegrityError:
            raise CodeRefused(f"{clean!r} is already a code of {scheme.name}: pick it from the list.") from None
        return Code(scheme.name, clean, text, user, now, int(row[0]))


def export(schemes: Sequence[Scheme], codebook: Codebook, mode: str) -> dict[str, Any]:
    """The codebook as exports carry it: every code of every codebook scheme, the config's first."""
    added = codebook.added()
    return {"mode": mode, "revision": revision_of(added), "schemes": {
        s.name: [{"name": o.name, "definition": o.tooltip, "revision": 0} for o in s.options]
        + [c.to_json() for c in added.get(s.name, ())] for s in schemes if s.codebook}}


def current_config(config: Config, db: Database) -> Config:
    """``config`` with the codes annotators have added (``codebook_mode: extensible``), for whatever
    checks answers or trains on them; the config itself where nothing can be added."""
    if config.codebook_mode != "extensible":
        return config
    return replace(config, annotation_schemes=with_codes(config.annotation_schemes, Codebook(db).added()))
