"""A codebook: the labels of ``codebook: true`` schemes, each with its definition, and the codes
annotators add under ``codebook_mode: extensible``.

Added codes live in the database beside the labels; the codebook's revision counts them, and every
label records the revision it was made under, so an analysis can tell which codes an annotator could
have chosen. Codes are only ever added: a code somebody used never disappears from under their label.

Every code is a choice on every annotator's page and a class to train, so how many can be added is
limited, per annotator and for the project (``codebook_max_codes_per_annotator``,
``codebook_max_codes``: one annotator once added 3,000 in 31 s, issue 42); and a code that looks like
one the scheme has (another case, full-width letters, a Cyrillic ``о``, an accent, a doubled space)
is that code, compared as annotators' names are (:func:`potato.accounts.lookalike_key`), inside the
write's transaction so that two annotators adding look-alikes at once cannot both succeed.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from potato.accounts import lookalike_key, typed_name
from potato.config._labels import MAX_SEQUENTIAL_KEY
from potato.config.schema import Config
from potato.db import Database
from potato.errors import PotatoError
from potato.training.job.schemes import LabelOption, Scheme

CODE_MAX = 64
DEFINITION_MAX = 500


class CodeRefused(PotatoError):
    """A code that cannot be added; the message says why and what to do. ``status`` is the HTTP
    status the tray's API answers it with."""

    status = 400


class CodeInvalid(CodeRefused):
    """The code's scheme, name or definition is not one that can be added (named in the message)."""


class CodeTaken(CodeRefused):
    """The scheme already has this code, or one that looks like it: the message names it to pick."""

    status = 409


class CodebookFull(CodeRefused):
    """The codebook, or the annotator, has as many added codes as the config allows: the message names
    the limit, its config key and that the study's admin raises it."""

    status = 403


@dataclass(frozen=True)
class CodeLimits:
    """How many codes may be added: in all, and by one annotator (the config's ``codebook_max_codes``
    and ``codebook_max_codes_per_annotator``)."""

    codes: int
    per_annotator: int

    @classmethod
    def of(cls, config: Config) -> CodeLimits:
        return cls(config.codebook_max_codes, config.codebook_max_codes_per_annotator)


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


def code_name(name: str) -> str:
    """A code as stored (pure): as the annotator meant to type it (full-width letters are plain ones,
    :func:`potato.accounts.typed_name`), without spaces around it or runs of them inside."""
    return " ".join(typed_name(name).split())


def check_code(schemes: Sequence[Scheme], added: Mapping[str, Sequence[Code]], scheme_name: object, name: object,
               definition: object) -> tuple[Scheme, str, str]:
    """The scheme, name and definition of a code to add, or the :class:`CodeRefused` that says why
    not (pure): :class:`CodeInvalid`, or :class:`CodeTaken` when the scheme has a code that looks
    like it (:func:`taken_by`)."""
    scheme = next((s for s in schemes if s.name == scheme_name and s.codebook), None)
    if scheme is None:
        names = ", ".join(s.name for s in schemes if s.codebook)
        raise CodeInvalid(f"{scheme_name!r} is not a codebook scheme; codes are added to: {names}.")
    clean = code_name(name) if isinstance(name, str) else ""
    if not clean or len(clean) > CODE_MAX or not clean.isprintable():
        raise CodeInvalid(f"A code is a name of 1 to {CODE_MAX} printable characters.")
    if definition is not None and (not isinstance(definition, str) or len(definition) > DEFINITION_MAX):
        raise CodeInvalid(f"A definition is text of at most {DEFINITION_MAX} characters.")
    existing = taken_by(scheme, added.get(scheme.name, ()), clean)
    if existing is not None:
        looks = "" if existing.casefold() == clean.casefold() else f" (it looks like {existing!r})"
        raise CodeTaken(f"{clean!r} is already a code of {scheme.name}{looks}: pick {existing!r} from the list.")
    return scheme, clean, (definition or "").strip()


def taken_by(scheme: Scheme, added: Sequence[Code], name: str) -> str | None:
    """The code of ``scheme`` (its own label, or one added) that ``name`` looks like, or None (pure):
    compared as annotators' names are, so case, letter width, accents, look-alike letters of other
    scripts and runs of spaces do not make a new code."""
    key = lookalike_key(name)
    return next((other for other in (*scheme.labels, *(c.name for c in added)) if lookalike_key(other) == key), None)


def check_limits(added: Mapping[str, Sequence[Code]], user: str, limits: CodeLimits) -> None:
    """Raise :class:`CodebookFull` when one more code would pass a limit (pure); the message names
    the limit's config key, for the annotator to pass on to the study's admin."""
    codes = [c for scheme_codes in added.values() for c in scheme_codes]
    if len(codes) >= limits.codes:
        raise CodebookFull(f"The codebook has {len(codes)} added codes, as many as this study allows "
                           f"(codebook_max_codes: {limits.codes}); no more can be added. Ask the study's admin to "
                           "raise codebook_max_codes in the config and restart the server, or pick a code from the list.")
    mine = sum(1 for c in codes if c.added_by == user)
    if mine >= limits.per_annotator:
        raise CodebookFull(f"You have added {mine} codes, as many as one annotator may add in this study "
                           f"(codebook_max_codes_per_annotator: {limits.per_annotator}). Ask the study's admin to "
                           "raise codebook_max_codes_per_annotator in the config and restart the server, or pick a "
                           "code from the list.")


def code_keys(schemes: Sequence[Scheme], added: Mapping[str, Sequence[Code]]) -> dict[tuple[str, str], str]:
    """The key (keyboard shortcut) of each added code, by (scheme, code) (pure): the next of 1-9 that
    no label on the page has, in the order the codes were added, for schemes whose labels get
    sequential keys; none once every one is taken. Every page gives a code the same key."""
    taken = {option.key for scheme in schemes for option in scheme.options if option.key}
    free = [str(n) for n in range(1, MAX_SEQUENTIAL_KEY + 1) if str(n) not in taken]
    codes = sorted((c for s in schemes if s.codebook and s.sequential_key_binding for c in added.get(s.name, ())),
                   key=lambda c: c.revision)
    return {(c.scheme, c.name): key for c, key in zip(codes, free)}


def with_codes(schemes: Sequence[Scheme], added: Mapping[str, Sequence[Code]]) -> tuple[Scheme, ...]:
    """The schemes with the codes annotators added, after their own labels, each with its key where
    one was free (:func:`code_keys`) (pure)."""
    keys = code_keys(schemes, added)
    out = []
    for scheme in schemes:
        codes = added.get(scheme.name, ()) if scheme.codebook else ()
        if codes:
            options = tuple(LabelOption(c.name, tooltip=c.definition, key=keys.get((c.scheme, c.name), ""))
                            for c in codes)
            scheme = replace(scheme, labels=scheme.labels + tuple(c.name for c in codes),
                             options=scheme.options + options)
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

    def added(self, conn: sqlite3.Connection | None = None) -> dict[str, list[Code]]:
        """The added codes by scheme, in the order they were added (read on ``conn``: inside a write)."""
        rows = (conn or self.db.conn).execute("SELECT * FROM codebook_codes ORDER BY revision").fetchall()
        out: dict[str, list[Code]] = {}
        for row in rows:
            out.setdefault(row["scheme"], []).append(Code(row["scheme"], row["name"], row["definition"],
                                                          row["added_by"], row["added_at"], row["revision"]))
        return out

    def add(self, schemes: Sequence[Scheme], scheme_name: object, name: object, definition: object,
            user: str, limits: CodeLimits) -> Code:
        """Add a code for everyone, as the next revision; two annotators adding at once both get theirs
        (the revision is taken inside the write's transaction). The look-alike check and the limits
        are applied inside that transaction too, on the codes as they are then: four annotators
        adding ``case1word``, ``CASE1WORD``, ... at once all got theirs while it ran before it."""
        check_code(schemes, {}, scheme_name, name, definition)  # a bad request waits for no lock
        with self.db.transaction() as tx:
            added = self.added(tx)
            scheme, clean, text = check_code(schemes, added, scheme_name, name, definition)
            check_limits(added, user, limits)
            row = tx.execute("SELECT COALESCE(MAX(revision), 0) + 1 FROM codebook_codes").fetchone()
            now = time.time()
            tx.execute("INSERT INTO codebook_codes (scheme, name, definition, added_by, added_at, revision) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (scheme.name, clean, text, user, now, row[0]))
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
