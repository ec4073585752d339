"""Fixtures the integration suites share."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest

from tests.harness.runs import label_all
from tests.harness.servers import ServerProcess


@pytest.fixture
def make_server(make_project: Callable[..., Path]) -> Iterator[Callable[..., ServerProcess]]:
    """A gunicorn server on a new project with 20 labels; stopped after the test."""
    servers: list[ServerProcess] = []

    def _make(config: Dict[str, Any]) -> ServerProcess:
        srv = ServerProcess(make_project(**config)).start()
        servers.append(srv)
        label_all(srv, 20)
        return srv

    yield _make
    for srv in servers:
        srv.stop()
