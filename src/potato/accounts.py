"""Annotators' passwords, for projects with upstream Potato's ``require_password: true``.

Only salted, slow hashes are stored (werkzeug's scrypt), in the ``users`` table next to the name
the labels are filed under. The first sign-in with a name creates its account; after that the
name belongs to whoever chose its password.
"""

from __future__ import annotations

import time
import unicodedata

from werkzeug.security import check_password_hash, generate_password_hash

from potato.errors import PotatoError
from potato.db import Database

MIN_PASSWORD = 8
MAX_PASSWORD = 1024
"""Long enough for any passphrase, short enough that hashing it is no denial of service."""


_UNUSABLE = generate_password_hash("no account has this password")

LOOKALIKES = str.maketrans({
    # Cyrillic letters that look like Latin ones (after casefold)
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "һ": "h", "ԁ": "d", "ԛ": "q",
    "ԝ": "w", "ӏ": "l", "ɡ": "g",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "ω": "w",
    # Latin letters without their dot: Turkish dotless i, dotless j
    "ı": "i", "ȷ": "j",
})
"""Letters of other scripts that a reader takes for Latin ones: a name written with them is, to the
people reading the admin's progress table, the same name."""


def typed_name(name: str) -> str:
    """The name as the annotator meant to type it (pure): full-width and other compatibility forms
    become the plain letters (NFKC), so ``ａｍｙ`` is ``amy``."""
    return unicodedata.normalize("NFKC", name)


def same_name_key(name: str) -> str:
    """Two names with the same key are one name for signing in (pure): case does not matter, as
    people expect of a user name (``AMY`` signs in as ``amy``)."""
    return typed_name(name).casefold()


def lookalike_key(name: str) -> str:
    """Two names with the same key look alike on a page (pure): beyond case, accents (``amý``),
    letters of other scripts drawn like Latin ones (a Cyrillic ``а``), dotless letters (``ı``) are
    dropped, and a run of spaces is one space (a page shows it as one). Annotators' names and the codes they add
    to a codebook (:mod:`potato.codebook`) are told apart by this one key."""
    folded = unicodedata.normalize("NFKD", same_name_key(name))
    plain = "".join(char for char in folded if not unicodedata.combining(char))
    return " ".join(unicodedata.normalize("NFKC", plain.translate(LOOKALIKES)).split())


class AccountError(PotatoError):
    """Why a sign-in or registration was refused; the message is shown to the annotator."""


def password_problem(password: str) -> str | None:
    """Why ``password`` cannot be someone's password, or None (pure)."""
    if len(password) < MIN_PASSWORD:
        return f"Choose a password of at least {MIN_PASSWORD} characters."
    if len(password) > MAX_PASSWORD:
        return f"Choose a password of at most {MAX_PASSWORD} characters."
    return None


class Accounts:
    def __init__(self, db: Database) -> None:
        self.db = db

    def _hash_of(self, name: str) -> str | None:
        row = self.db.conn.execute("SELECT password_hash FROM users WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def register(self, name: str, password: str) -> str:
        """Create the account and return its name as stored (:func:`typed_name`); refused when the
        name already has a password, or looks like another annotator's name (two people whose names
        look alike cannot be told apart in the progress table or in the labels' export)."""
        problem = password_problem(password)
        if problem:
            raise AccountError(problem)
        name = typed_name(name)
        hashed, now = generate_password_hash(password), time.time()
        with self.db.transaction() as conn:
            row = conn.execute("SELECT password_hash FROM users WHERE name = ?", (name,)).fetchone()
            if row is not None and row[0]:
                raise AccountError(f"The name {name!r} is taken. Sign in with its password, or choose another name.")
            key = lookalike_key(name)
            for (other,) in conn.execute("SELECT name FROM users WHERE name != ?", (name,)):
                if lookalike_key(other) == key:
                    raise AccountError(f"The name {name!r} is taken: it looks like {other!r}, who is already an "
                                       f"annotator here. Sign in as {other!r}, or choose a name that looks "
                                       "different.")
            conn.execute(
                "INSERT INTO users (name, created_at, last_seen, password_hash) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET password_hash = excluded.password_hash", (name, now, now, hashed))
        return name

    def account_for(self, name: str) -> str:
        """The account a typed name signs in to: the name itself if it has a password, else the one
        account whose name differs only in case or width (``AMY``, ``ａｍｙ`` for ``amy``)."""
        if self._hash_of(name):
            return name
        key = same_name_key(name)
        matches = [other for (other,) in self.db.conn.execute(
            "SELECT name FROM users WHERE password_hash IS NOT NULL AND password_hash != ''")
            if same_name_key(other) == key]
        return matches[0] if len(matches) == 1 else name

    def check(self, name: str, password: str) -> str:
        """The account's name when ``password`` is its password (see :meth:`account_for`); raises
        otherwise, with a message that does not say which of the two was wrong."""
        name = self.account_for(name)
        hashed = self._hash_of(name) or _UNUSABLE  # an unknown name costs the same hashing as a known one
        if len(password) > MAX_PASSWORD or hashed is _UNUSABLE or not check_password_hash(hashed, password):
            raise AccountError("Wrong name or password. New here? Choose Create account.")
        return name
