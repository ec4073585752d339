"""Annotators' passwords, for projects with upstream Potato's ``require_password: true``.

Only salted, slow hashes are stored (werkzeug's scrypt), in the ``users`` table next to the name
the labels are filed under. The first sign-in with a name creates its account; after that the
name belongs to whoever chose its password.
"""

from __future__ import annotations

import time

from werkzeug.security import check_password_hash, generate_password_hash

from potato.errors import PotatoError
from potato.db import Database

MIN_PASSWORD = 8
MAX_PASSWORD = 1024
"""Long enough for any passphrase, short enough that hashing it is no denial of service."""


_UNUSABLE = generate_password_hash("no account has this password")


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

    def register(self, name: str, password: str) -> None:
        """Create ``name``'s account; refused when the name already has a password."""
        problem = password_problem(password)
        if problem:
            raise AccountError(problem)
        hashed, now = generate_password_hash(password), time.time()
        with self.db.transaction() as conn:
            row = conn.execute("SELECT password_hash FROM users WHERE name = ?", (name,)).fetchone()
            if row is not None and row[0]:
                raise AccountError(f"The name {name!r} is taken. Sign in with its password, or choose another name.")
            conn.execute(
                "INSERT INTO users (name, created_at, last_seen, password_hash) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET password_hash = excluded.password_hash", (name, now, now, hashed))

    def check(self, name: str, password: str) -> None:
        """Raises unless ``password`` is ``name``'s; the message does not say which of the two was wrong."""
        hashed = self._hash_of(name) or _UNUSABLE  # an unknown name costs the same hashing as a known one
        if len(password) > MAX_PASSWORD or hashed is _UNUSABLE or not check_password_hash(hashed, password):
            raise AccountError("Wrong name or password. New here? Choose Create account.")
