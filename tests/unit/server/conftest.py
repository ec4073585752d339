"""Fixtures of the server's tests: a study project served in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.config import load_config
from potato.server import close_app, create_app
from tests.harness.studies import STUDY, write_surveys


@pytest.fixture
def make_client(make_project: Callable[..., Path]) -> Iterator[Callable[..., Any]]:
    """A project of two items served in-process: its test client, with ``config_path``. ``prepare``
    gets the project's folder before the app starts (to write the files the config names)."""
    apps: list[Any] = []

    def _make(prepare: Callable[[Path], None] | None = None, **overrides: Any) -> Any:
        path = make_project(n_items=2, **overrides)
        if prepare is not None:
            prepare(path.parent)
        app = create_app(load_config(path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
        apps.append(app)
        client = app.test_client()
        client.config_path = path
        return client

    yield _make
    for app in apps:
        close_app(app)


@pytest.fixture
def study(make_client: Callable[..., Any]) -> Callable[..., Any]:
    """A study with every kind of page (tests.harness.studies), its config overridden by keyword."""
    return lambda **overrides: make_client(write_surveys, **{**STUDY, **overrides})
