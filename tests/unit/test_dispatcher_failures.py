"""A dispatcher that cannot write (a full disk) backs off and says so once, not every 0.1 s with
two tracebacks each (30 KB/s of log were seen)."""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import Any

import pytest

from potato.server.training.dispatcher import Dispatcher, failure_pause


def test_the_pause_grows_to_half_a_minute() -> None:
    assert [failure_pause(n) for n in (1, 2, 3)] == [0.2, 0.4, 0.8] and failure_pause(50) == 30.0


def test_a_full_disk_is_logged_once_per_streak_and_recovery_once(app: Any, caplog: pytest.LogCaptureFixture) -> None:
    dispatcher: Dispatcher = app.extensions["potato.dispatcher"]
    failing = [True]

    def run_next() -> bool:
        if failing[0]:
            raise sqlite3.OperationalError("database or disk is full")
        return False

    dispatcher.run_next = run_next  # type: ignore[method-assign]
    dispatcher.watch = lambda: None  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger="potato.server.training.dispatcher"):
        dispatcher.ensure_started()
        time.sleep(1.6)
        failing[0] = False
        time.sleep(1.5)
        dispatcher.stop()
    messages = [r.getMessage() for r in caplog.records if r.name == "potato.server.training.dispatcher"]
    full = [m for m in messages if "disk is full" in m]
    assert len(full) == 1 and "runs wait until there is space" in full[0]
    assert not any(r.exc_info for r in caplog.records)  # no traceback for a full disk
    assert len([m for m in messages if m.startswith("dispatcher: working again after")]) == 1
