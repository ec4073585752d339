"""C2, C3 under gunicorn: login, label, relabel, export; kill -9 loses no acknowledged label."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.harness.servers import ServerProcess
from tests.faults.matrix import fault

pytestmark = pytest.mark.integration


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    srv = ServerProcess(make_project()).start()
    yield srv
    srv.stop()


def _session(srv: ServerProcess, name: str) -> requests.Session:
    s = requests.Session()
    assert s.post(srv.url + "/login", data={"name": name}, allow_redirects=False).status_code == 302
    return s


def test_login_label_relabel_export(server: ServerProcess) -> None:
    s = _session(server, "alice")
    r = s.post(server.url + "/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}})
    assert r.status_code == 200 and r.json()["item"]["id"] == "r001"
    r = s.post(server.url + "/api/label", json={"id": "r000", "labels": {"sentiment": "negative"}, "go": "stay"})
    assert r.json()["item"]["labels"] == {"sentiment": "negative"}
    export = requests.get(server.url + "/admin/api/export", headers={"X-API-Key": ADMIN_KEY})
    rows = [json.loads(line) for line in export.text.splitlines()]
    assert [(r["user"], r["id"], r["label"]) for r in rows] == [("alice", "r000", "negative")]


@pytest.mark.parametrize("headers", [{}, {"X-API-Key": "wrong"}, {"X-API-Key": ADMIN_KEY + "x"}])
def test_wrong_or_missing_key_gets_401(server: ServerProcess, headers: dict) -> None:
    for route in ("/admin/api/progress", "/admin/api/export", "/admin/api/labels"):
        assert requests.get(server.url + route, headers=headers).status_code == 401


@fault("Annotators and the server",
       "kill -9 of the server right after labels were acknowledged",
       "Every acknowledged label is on disk; the annotator resumes at the next item",
       "Nothing; the labels are there after the restart")
def test_kill_9_right_after_ack_loses_nothing(make_project: Callable[..., Path]) -> None:
    config_path = make_project()
    srv = ServerProcess(config_path).start()
    s = _session(srv, "alice")
    acknowledged = []
    for i in range(25):
        r = s.post(srv.url + "/api/label", json={"id": f"r{i:03d}", "labels": {"sentiment": "positive"}})
        assert r.status_code == 200
        acknowledged.append(f"r{i:03d}")
    srv.kill9()  # no shutdown hook, no flush: the 200s above must already be on disk

    again = ServerProcess(config_path).start()
    try:
        rows = requests.get(again.url + "/admin/api/labels?user=alice", headers={"X-API-Key": ADMIN_KEY}).json()
        assert sorted(lab["id"] for lab in rows["labels"]) == acknowledged
        # The annotator resumes on the next unlabelled item.
        page = _session(again, "alice").get(again.url + "/annotate").text
        assert '"id": "r025"' in page
    finally:
        again.stop()


def test_start_refuses_invalid_config(make_project: Callable[..., Path]) -> None:
    import subprocess
    import sys

    bad = make_project(model_training={"backends": {"gpu": {"type": "ssh", "host": "h", "pyhton": "/x"}}})
    proc = subprocess.run([sys.executable, "-m", "potato", "start", str(bad), "-p", "1"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "pyhton" in proc.stderr and "python" in proc.stderr


def test_cli_import_while_server_runs_shows_on_annotation_page(server: ServerProcess, tmp_path: Path) -> None:
    import subprocess
    import sys

    s = _session(server, "alice")
    s.post(server.url + "/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}})
    labels = tmp_path / "alice.jsonl"
    labels.write_text('{"id": "r001", "schema": "sentiment", "label": "negative"}\n')
    proc = subprocess.run([sys.executable, "-m", "potato", "import-labels", str(server.config_path), str(labels),
                           "--user", "alice"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    item = s.get(server.url + "/api/item/2").json()["item"]
    assert item["labels"] == {"sentiment": "negative"} and item["labelled"] is True and item["done"] == 2


def test_two_projects_of_one_account_run_side_by_side_without_a_shared_control_socket(
        make_project: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gunicorn's per-account ~/.gunicorn/gunicorn.ctl was shared by every Potato server of a user."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    first = make_project()
    second_dir = tmp_path / "second"
    second_dir.mkdir()
    second = second_dir / "config.yaml"
    second.write_text(first.read_text().replace("task_dir: .", f"task_dir: {first.parent}")
                      .replace("output_annotation_dir: annotation_output",
                               f"output_annotation_dir: {second_dir / 'out'}"))
    servers = [ServerProcess(first).start(), ServerProcess(second).start()]
    try:
        for srv in servers:
            assert requests.get(srv.url + "/healthz", timeout=5).json()["ok"] is True
        assert not (home / ".gunicorn").exists()
    finally:
        for srv in servers:
            srv.stop()


@fault("Annotators and the server",
       "Many clients send their headers a line at a time (slowloris)",
       "The event loop collects headers without a thread; 408 after 10 s",
       "Annotators are served as usual")
def test_clients_that_send_headers_slowly_do_not_stop_the_server(server: ServerProcess) -> None:
    """Slowloris: 40 connections sending a header line every 2 s held every thread (24) of a default
    server, and it answered no one. Now the headers are collected without a thread, and a client
    that has not sent them within 10 s gets a 408 and is closed."""
    import socket
    import threading

    slow = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(60)]
    stop = threading.Event()

    def drip() -> None:
        while not stop.is_set():
            for sock in slow:
                try:
                    sock.send(b"X-Slow: 1\r\n")
                except OSError:
                    pass
            stop.wait(1.0)

    for sock in slow:
        sock.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    threading.Thread(target=drip, daemon=True).start()
    try:
        for _ in range(3):
            assert requests.get(server.url + "/healthz", timeout=10).json()["ok"] is True
            session = requests.Session()
            assert session.post(server.url + "/login", data={"name": "kim"}, allow_redirects=False).status_code == 302
        slow[0].settimeout(30)
        assert slow[0].recv(64).startswith(b"HTTP/1.1 408")  # after HEAD_TIMEOUT_S, never a thread held
    finally:
        stop.set()
        for sock in slow:
            sock.close()


def test_clients_that_send_bodies_slowly_do_not_stop_the_server(server: ServerProcess) -> None:
    """Slow bodies held a thread each after the headers had been collected without one: 60 clients
    sending a sign-in body a byte a second would have held all 24 threads. Bodies up to 1 MB are now
    collected in the event loop too; a client that then sends the rest gets its answer as usual."""
    import socket
    import threading

    body = b"name=slow-body-client"
    head = (b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    slow = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(60)]
    stop = threading.Event()

    def drip() -> None:
        sent = 0
        while not stop.is_set() and sent < 5:
            for sock in slow:
                try:
                    sock.send(body[sent:sent + 1])
                except OSError:
                    pass
            sent += 1
            stop.wait(1.0)

    for sock in slow:
        sock.send(head)
    dripping = threading.Thread(target=drip, daemon=True)
    dripping.start()
    try:
        for _ in range(3):
            assert requests.get(server.url + "/healthz", timeout=10).json()["ok"] is True
            session = requests.Session()
            assert session.post(server.url + "/login", data={"name": "kim"}, allow_redirects=False).status_code == 302
        dripping.join(30)  # five bytes each, a second apart
        slow[0].send(body[5:])  # the rest of the body: the request is answered like any other
        slow[0].settimeout(15)
        assert slow[0].recv(64).startswith(b"HTTP/1.1 302")
    finally:
        stop.set()
        for sock in slow:
            sock.close()
