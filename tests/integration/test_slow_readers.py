"""Issue 42 (7) under gunicorn, the way the probe found it: 60 connections from one client, each
asking for annotate.js again and again (pipelined) and never reading, held every thread in a blocking
write, and a signed-in annotator's ``GET /api/move`` timed out; 60 downloads of a large media file
held unread did the same for 160 s. Now a thread never waits for a client to read: what the kernel
does not take at once is sent by the worker's event loop as the client reads it (see
potato.server.serving.outbox)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

from tests.faults.matrix import fault
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration

MEDIA_BYTES = 24 * 1024 * 1024
"""Larger than what the kernel's socket buffers hold on loopback, so an unread download fills them."""
PIPELINED = 100
"""Requests each pipelining connection sends at once (about 6 MB of answers)."""
HELD = 60
"""Connections of each kind, as in the probe."""


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    config = make_project(media_directory="media")
    media = config.parent / "media"
    media.mkdir()
    with (media / "big.bin").open("wb") as f:
        f.truncate(MEDIA_BYTES)  # sparse: zeros, read from no disk
    srv = ServerProcess(config).start()
    yield srv
    srv.stop()


def _signed_in(srv: ServerProcess, name: str) -> requests.Session:
    session = requests.Session()
    assert session.post(srv.url + "/login", data={"name": name}, allow_redirects=False, timeout=10).status_code == 302
    return session


def _held(srv: ServerProcess, request: bytes) -> socket.socket:
    """A connection that sends ``request`` and reads nothing (a small receive buffer, as the probe's)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", srv.port))
    sock.sendall(request)
    return sock


def _read_responses(sock: socket.socket, count: int) -> list[tuple[bytes, bytes]]:
    """Read ``count`` whole responses (head, body) from ``sock``, by their Content-Length."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)  # now a reader, at a reader's pace
    sock.settimeout(30)
    buf = b""
    out: list[tuple[bytes, bytes]] = []
    while len(out) < count:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            head = buf[:end]
            length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            if len(buf) >= end + 4 + length:
                out.append((head, buf[end + 4:end + 4 + length]))
                buf = buf[end + 4 + length:]
                continue
        data = sock.recv(1 << 20)
        assert data, f"the server closed the connection after {len(out)} of {count} answers"
        buf += data
    return out


@fault("Annotators and the server",
       "One client opens 60 connections that each ask for annotate.js 100 times (pipelined), 60 that download "
       "a large media file and 60 that ask for it by Range, and reads none of the answers",
       "No thread waits for a client to read: what the kernel does not take at once is sent by the event "
       "loop as the client reads (a file from the file itself); a thread waits only while an answer over 1 MB "
       "is held in memory, at most a quarter of a worker's threads per client address, and never past the "
       "body deadline",
       "Annotators are served as usual; a held connection that reads later gets every answer whole, in order")
def test_clients_that_do_not_read_their_answers_do_not_stop_the_server(server: ServerProcess) -> None:
    annotator = _signed_in(server, "ann")
    attacker = _signed_in(server, "mallory")
    cookie = "; ".join(f"{c.name}={c.value}" for c in attacker.cookies).encode()
    media = b"GET /media/big.bin HTTP/1.1\r\nHost: x\r\nCookie: " + cookie + b"\r\n"
    script = b"GET /static/annotate.js HTTP/1.1\r\nHost: x\r\n\r\n"
    pipelining = [_held(server, script * PIPELINED) for _ in range(HELD)]
    downloads = [_held(server, media + b"\r\n") for _ in range(HELD)]
    ranges = [_held(server, media + b"Range: bytes=0-\r\n\r\n") for _ in range(HELD)]
    try:
        for _ in range(5):  # the probe's annotator timed out here, every try
            fresh = requests.Session()  # a new connection each time, so that each worker is tried
            fresh.cookies.update(annotator.cookies)
            move = fresh.get(server.url + "/api/move", timeout=10)
            assert move.status_code == 200 and move.json()["item"]["id"], move.text
            assert requests.get(server.url + "/healthz", timeout=10).json()["ok"] is True
        # A held connection that starts reading gets all of its answers, whole and in order.
        expected = (Path(__file__).resolve().parents[2] / "src/potato/server/static/annotate.js").read_bytes()
        answers = _read_responses(pipelining[0], PIPELINED)
        assert all(head.startswith(b"HTTP/1.1 200") and body == expected for head, body in answers)
        [(head, body)] = _read_responses(downloads[0], 1)
        assert head.startswith(b"HTTP/1.1 200") and len(body) == MEDIA_BYTES and not body.strip(b"\0")
    finally:
        for sock in pipelining + downloads + ranges:
            sock.close()
    assert requests.get(server.url + "/healthz", timeout=10).json()["ok"] is True
