"""Issue 20 under gunicorn, the way the probe found it: 100 connections that send the headers of a
large or chunked body and then a byte a second held every thread, /healthz timed out, and one was
still held after 130 s. The headers now decide before any thread waits on a body, and every body
has a deadline (``POTATO_BODY_TIMEOUT_S``, made short here)."""

from __future__ import annotations

import select
import socket
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.harness.servers import ServerProcess
from tests.faults.matrix import fault

pytestmark = pytest.mark.integration

BODY_TIMEOUT_S = 3.0
JSON = b"Content-Type: application/json\r\n"
CHUNKED = b"Transfer-Encoding: chunked\r\n"
LARGE = b"Content-Length: 2000000\r\n"
# (request line and headers, what each connection trickles, the answers it may get)
SLOW = [
    (b"POST /login HTTP/1.1\r\n" + JSON + CHUNKED, b"40\r\n" + b"x" * 64, {408}),
    (b"POST /admin/login HTTP/1.1\r\n" + LARGE, b"x" * 64, {413}),
    (b"POST /training/agent/v1/jobs/next HTTP/1.1\r\nAuthorization: Bearer nope\r\n" + JSON + CHUNKED,
     b"40\r\n" + b"x" * 64, {408}),
    (b"POST /training/agent/v1/jobs/next HTTP/1.1\r\nExpect: 100-continue\r\n" + LARGE, b"x" * 64, {413}),
    (b"PUT /training/agent/v1/runs/r1/predictions HTTP/1.1\r\nAuthorization: Bearer nope\r\n" + LARGE,
     b"x" * 64, {401, 404, 503}),
    (b"POST /admin/api/labels HTTP/1.1\r\nX-API-Key: " + ADMIN_KEY.encode() + b"\r\n" + JSON + CHUNKED,
     b"40\r\n" + b"x" * 64, {408, 503}),
]


@pytest.fixture
def server(make_project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerProcess]:
    monkeypatch.setenv("POTATO_BODY_TIMEOUT_S", str(BODY_TIMEOUT_S))
    srv = ServerProcess(make_project()).start()
    yield srv
    srv.stop()


def _whole(reply: bytes) -> bool:
    """Whether ``reply`` holds a response's headers and all of the body its Content-Length announces."""
    head, sep, body = reply.partition(b"\r\n\r\n")
    if not sep:
        return False
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return len(body) >= length


def _status(reply: bytes) -> int:
    """The final status in what a connection received (after any ``100 Continue``)."""
    for line in reply.split(b"\r\n"):
        if line.startswith(b"HTTP/1.1 ") and not line.startswith(b"HTTP/1.1 100"):
            return int(line.split()[1])
    return 0


@fault("Annotators and the server",
       "100 unauthenticated connections send chunked or over-1-MB bodies a byte a second to /login, /admin/login, jobs/next and the upload routes",
       "The headers decide first: no thread waits on a body it has not accepted; every body has a deadline",
       "/healthz and sign-in answer throughout; each slow connection is answered and closed")
def test_a_hundred_slow_bodies_hold_no_thread_and_each_ends(server: ServerProcess) -> None:
    socks = []
    for i in range(100):
        head, _, _ = SLOW[i % len(SLOW)]
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.sendall(head + b"Host: x\r\n\r\n")
        socks.append(sock)
    replies = {sock: b"" for sock in socks}
    ended: dict[socket.socket, float] = {}
    started = time.monotonic()
    stop = threading.Event()

    def trickle() -> None:
        sent = 0
        while not stop.is_set() and sent < 64:
            for i, sock in enumerate(socks):
                try:
                    sock.send(SLOW[i % len(SLOW)][1][sent:sent + 1])
                except OSError:
                    pass
            sent += 1
            stop.wait(1.0)

    def read_until(deadline: float) -> None:
        while len(ended) < len(socks) and time.monotonic() < deadline:
            readable, _, _ = select.select([s for s in socks if s not in ended], [], [], 0.5)
            for sock in readable:
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                replies[sock] += data
                if not data:
                    ended[sock] = time.monotonic() - started

    dripping = threading.Thread(target=trickle, daemon=True)
    dripping.start()
    try:
        for _ in range(3):  # the probe's /healthz timed out here
            assert requests.get(server.url + "/healthz", timeout=10).json()["ok"] is True
            session = requests.Session()
            assert session.post(server.url + "/login", data={"name": "kim"}, allow_redirects=False,
                                timeout=10).status_code == 302
            read_until(time.monotonic() + 0.5)
        # Every trickling connection is answered and closed by the server, the slowest at their
        # body deadline; 3x that is far more than they need, 130 s (the probe) far less.
        read_until(started + 3 * (BODY_TIMEOUT_S + 5))
    finally:
        stop.set()
        for sock in socks:
            sock.close()
    assert len(ended) == len(socks), f"{len(socks) - len(ended)} connections still open"
    for i, sock in enumerate(socks):
        assert _status(replies[sock]) in SLOW[i % len(SLOW)][2], (SLOW[i % len(SLOW)][0], replies[sock][:200])
    answered_slowly = [_status(replies[sock]) for sock in socks]
    assert 408 in answered_slowly and 413 in answered_slowly


@fault("Annotators and the server",
       "An upload with a valid key that then trickles",
       "Its thread gives up at the body's deadline",
       "408 'The request's body arrived too slowly'; nothing stored")
def test_an_upload_that_trickles_after_its_key_was_accepted_gets_408(server: ServerProcess) -> None:
    """The admin label import is read by a thread (it may be large); a trickle past the deadline ends."""
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(b"POST /admin/api/labels HTTP/1.1\r\nHost: x\r\nX-API-Key: " + ADMIN_KEY.encode() + b"\r\n"
                 + JSON + CHUNKED + b"\r\n")
    reply, started = b"", time.monotonic()
    try:
        for byte in b'40\r\n{"user": "slow", "labels": [':
            sock.send(bytes([byte]))
            readable, _, _ = select.select([sock], [], [], 1.0)
            if readable:
                reply = sock.recv(65536)
                break
        sock.settimeout(3 * BODY_TIMEOUT_S)
        while not _whole(reply):  # the body can come in a segment of its own
            data = sock.recv(65536)
            assert data, reply
            reply += data
    finally:
        sock.close()
    assert _status(reply) == 408 and b"too slowly" in reply
    assert time.monotonic() - started < 3 * (BODY_TIMEOUT_S + 5)
    assert requests.get(server.url + "/healthz", timeout=10).json()["ok"] is True


def test_what_legitimate_clients_send_is_served_as_before(server: ServerProcess) -> None:
    """Small chunked bodies (a generator in requests), ``Expect: 100-continue`` (curl), an admin's
    label import over 1 MB, an annotator's label; a body too large for its route is a 413 it can read."""
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    chunked = requests.post(server.url + "/login", data=iter([b"name=", b"chunky"]), headers=form,
                            allow_redirects=False, timeout=10)
    assert chunked.status_code == 302
    sock = socket.create_connection(("127.0.0.1", server.port))
    try:
        sock.settimeout(10)
        sock.sendall(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                     b"Expect: 100-continue\r\nContent-Length: 9\r\n\r\n")
        assert sock.recv(64) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"name=curl")
        reply = sock.recv(65536)
        assert _status(reply) == 302 and b"100 Continue" not in reply  # one go-ahead only
    finally:
        sock.close()
    big = {"user": "bulk", "labels": [{"id": f"r{i % 40:03d}", "schema": "note", "label": "x" * 2000}
                                      for i in range(600)], "skip_invalid": True}
    imported = requests.post(server.url + "/admin/api/labels", json=big, headers={"X-API-Key": ADMIN_KEY}, timeout=30)
    assert imported.status_code == 200, imported.text
    annotator = requests.Session()
    annotator.post(server.url + "/login", data={"name": "ann"}, timeout=10)
    label = annotator.post(server.url + "/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}}, timeout=10)
    assert label.status_code == 200
    too_large = requests.post(server.url + "/login", data=b"x" * 2_000_000, headers=form, timeout=10)
    assert too_large.status_code == 413 and "larger than this route takes" in too_large.json()["error"]
