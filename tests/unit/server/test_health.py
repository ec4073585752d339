"""The healthcheck route the server image's HEALTHCHECK and a load balancer use."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

import potato


def test_healthz_answers_without_a_key_or_a_login_and_says_nothing_more(client: Any) -> None:
    resp = client.get("/healthz")
    assert resp.status_code == 200
    assert resp.get_json() == {"ok": True, "version": potato.__version__}
    assert resp.headers["Cache-Control"] == "no-store"


def test_healthz_fails_when_the_database_does_not_answer(client: Any, app: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(type(app.extensions["potato"].db), "conn", property(broken))
    resp = client.get("/healthz")
    assert resp.status_code == 503 and resp.get_json() == {"ok": False, "error": "the database does not answer"}
