"""Issue 42 C: what the tests' own harness promises about the servers it starts and the answers it reads.

A clean-clone ``pytest -n 4`` failed once with ``KeyError: 'labels'`` on a label poll that passed alone.
``ServerProcess.start`` took any /healthz answer on its port for its own server's; a port from
``free_port`` handed to two tests side by side gave one of them the other's server, whose throttle a
test's wrong keys could lock (429 for every key from 127.0.0.1), and the helper indexed the 429's
body. These check the harness on real servers: a start waits for its own process to listen, and a
read of the admin API that gets another answer says which.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY, truth
from tests.harness import servers
from tests.harness.adminapi import stored_labels
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration


@pytest.fixture
def first(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    """A server already listening, as another test's would be, with one label of its own."""
    srv = ServerProcess(make_project(n_items=10)).start()
    requests.post(srv.url + "/admin/api/labels", headers={"X-API-Key": ADMIN_KEY}, timeout=30, json={
        "user": "first-only", "labels": [{"id": "r000", "schema": "sentiment", "label": truth("r000")}]},
    ).raise_for_status()
    yield srv
    srv.stop()


def second_project(first: ServerProcess, tmp_path: Path) -> Path:
    """A project of its own for a second server (its own database, the same admin key)."""
    return Path(shutil.copytree(first.config_path.parent, tmp_path / "second",
                                ignore=shutil.ignore_patterns("annotation_output", "*.log"))) / "config.yaml"


def test_a_start_on_a_port_another_server_holds_fails_instead_of_taking_that_server(
        first: ServerProcess, tmp_path: Path) -> None:
    """A restart at a named port (``port=srv.port``) that another server took meanwhile: the start
    returned at once with the other server behind its address."""
    second = ServerProcess(second_project(first, tmp_path), port=first.port)
    with pytest.raises(RuntimeError, match=f"Port {first.port} is in use"):
        second.start()
    second.stop()
    assert stored_labels(first.url, "first-only") != []  # the first server is untouched


def test_a_free_port_another_test_took_first_is_given_up_for_a_fresh_one(
        first: ServerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pytest -n 4``: free_port handed this start the port another test's server bound a moment
    later. The start now ends on a port of its own, and reads its own server's labels."""
    ports = iter([first.port])
    real = servers.free_port
    monkeypatch.setattr(servers, "free_port", lambda: next(ports, None) or real())
    second = ServerProcess(second_project(first, tmp_path)).start()
    try:
        assert second.port != first.port and second.url == f"http://127.0.0.1:{second.port}"
        assert second.listening() and first.listening()
        assert stored_labels(second.url, "first-only") == []
        assert len(stored_labels(first.url, "first-only")) == 1
    finally:
        second.stop()


def test_a_read_that_is_not_answered_with_labels_says_what_was_answered(first: ServerProcess) -> None:
    """What the failed run met: after ten wrong keys from 127.0.0.1 every key from there gets 429,
    and the poll's ``KeyError: 'labels'`` hid it. The helper now names the status and the body."""
    for _ in range(10):
        assert requests.get(first.url + "/admin/api/progress", headers={"X-API-Key": "not-the-key"},
                            timeout=30).status_code == 401
    with pytest.raises(AssertionError) as failed:
        stored_labels(first.url, "first-only")
    said = str(failed.value)
    assert f"GET {first.url}/admin/api/labels?user=first-only answered 429" in said, said
    assert "Too many wrong admin keys from your address" in said and "expected 200 with 'labels'" in said
