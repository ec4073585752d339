"""The cookie-signing key and the database are the server user's only; a crash never leaves an
empty key behind (issue: an empty secret_key made every login a 500 forever)."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from potato.db import connect
from potato.server.context import SECRET_BYTES, session_secret


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_key_is_made_once_0600_in_a_0700_folder_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "annotation_output"
    key = session_secret(out)
    assert len(key) == SECRET_BYTES and mode(out / "secret_key") == 0o600 and mode(out) == 0o700
    assert session_secret(out) == key  # every worker and every restart: the same key
    assert not list(out.glob(".secret_key*.tmp"))  # no temporary file is left beside it


@pytest.mark.parametrize("content", [b"", b"short"])
def test_an_empty_or_short_key_is_replaced_with_a_warning(tmp_path: Path, content: bytes,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "secret_key").write_bytes(content)
    with caplog.at_level(logging.WARNING):
        key = session_secret(out)
    assert len(key) == SECRET_BYTES and (out / "secret_key").read_bytes() == key
    assert f"holds {len(content)} bytes, fewer than 32: replaced" in caplog.text


def test_the_database_file_is_0600(tmp_path: Path) -> None:
    connect(tmp_path / "db" / "potato.sqlite3").close()
    assert mode(tmp_path / "db" / "potato.sqlite3") == 0o600 and mode(tmp_path / "db") == 0o700
