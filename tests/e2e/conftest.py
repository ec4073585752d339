"""What every browser test here starts: a headless chromium page, and a server on a fresh project
(files that need another project define their own ``server``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.browser import browser_page
from tests.harness.servers import ServerProcess


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    srv = ServerProcess(make_project()).start()
    yield srv
    srv.stop()


@pytest.fixture
def page() -> Iterator[Any]:
    yield from browser_page()


@pytest.fixture
def errors(page: Any) -> list[str]:
    """Console errors and uncaught exceptions of the page; a test that asks for them ends with none."""
    seen: list[str] = []
    page.on("console", lambda msg: seen.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: seen.append(str(exc)))
    return seen
