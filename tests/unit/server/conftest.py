"""Fixtures of the server's tests: a study project served in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.config import load_config
from potato.server import close_app, create_app
from tests.harness.studies import STUDY, write_surveys


@pytest.fixture
def study(make_project: Callable[..., Path]) -> Iterator[Callable[..., Any]]:
    apps: list[Any] = []

    def _make(**overrides: Any) -> Any:
        path = make_project(n_items=2, **{**STUDY, **overrides})
        write_surveys(path.parent)
        app = create_app(load_config(path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
        apps.append(app)
        client = app.test_client()
        client.config_path = path
        return client

    yield _make
    for app in apps:
        close_app(app)
