"""Issue 42 item 11 under gunicorn, the way the probe found it: ``X-Forwarded-Proto: https`` sent from
loopback made the session cookie ``Secure`` though ``trust_proxy`` was off (gunicorn's own default
trusts forwarded headers from 127.0.0.1), and the answers the server gives from the request's framing
(413, 431, 400 from Potato's event loop; 414, 431, 400 from gunicorn's parser) carried none of the
security headers every answer of the app carries."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration

SAME_AS_THE_APP = ("X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy")


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    srv = ServerProcess(make_project()).start()
    yield srv
    srv.stop()


def _exchange(srv: ServerProcess, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes on a connection of our own; (status, headers, body) of the answer that closes it."""
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    reply = b""
    try:
        sock.sendall(data)
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    except ConnectionResetError:  # the answer came first; a reset after it is the close of unread bytes
        pass
    finally:
        sock.close()
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def test_forwarded_proto_from_loopback_is_ignored_without_trust_proxy(server: ServerProcess) -> None:
    plain = requests.post(server.url + "/login", data={"name": "ana"}, allow_redirects=False, timeout=10)
    claimed = requests.post(server.url + "/login", data={"name": "bo"}, allow_redirects=False, timeout=10,
                            headers={"X-Forwarded-Proto": "https", "X-Forwarded-Ssl": "on"})
    assert plain.status_code == claimed.status_code == 302
    assert "secure" not in plain.headers["Set-Cookie"].lower()
    assert "secure" not in claimed.headers["Set-Cookie"].lower()  # it was Secure: gunicorn believed the header


def test_behind_a_trusted_proxy_its_forwarded_proto_still_counts(make_project: Callable[..., Path]) -> None:
    """trust_proxy: true is the one switch: the app believes the proxy's headers, gunicorn never does."""
    srv = ServerProcess(make_project(trust_proxy=True)).start()
    try:
        claimed = requests.post(srv.url + "/login", data={"name": "bo"}, allow_redirects=False, timeout=10,
                                headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"})
        assert claimed.status_code == 302 and "; secure" in claimed.headers["Set-Cookie"].lower()
    finally:
        srv.stop()


@pytest.mark.parametrize(("request_bytes", "status"), [
    # Potato's event loop: a body over 1 MB where no route takes it, headers over 64 KB, two lengths.
    (b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n", 413),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 70000 + b"\r\n\r\n", 431),
    (b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400),
    # gunicorn's parser: a request line over 4094 bytes, over 100 header fields, a request line of garbage.
    (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-F%d: v\r\n" % i for i in range(120)) + b"\r\n", 431),
    (b"NOT A REQUEST\r\n\r\n", 400),
])
def test_answers_from_the_request_framing_carry_the_app_s_security_headers(
        server: ServerProcess, request_bytes: bytes, status: int) -> None:
    app = requests.get(server.url + "/healthz", timeout=10).headers
    got, headers, body = _exchange(server, request_bytes)
    assert got == status, (headers, body[:200])
    for name in SAME_AS_THE_APP:
        assert headers.get(name.lower()) == app[name], (name, headers)
    policy = headers.get("content-security-policy", "")
    assert "default-src 'none'" in policy and "frame-ancestors 'self'" in policy, headers
    assert headers.get("content-type") in (None, "application/json"), headers  # no HTML page to run in
    assert requests.get(server.url + "/healthz", timeout=10).json()["ok"] is True


def test_media_files_arrive_whole_and_inert_through_gunicorn(make_project: Callable[..., Path]) -> None:
    """gunicorn sends a file from its offset (sendfile): the route must leave it at 0 after looking at
    the file's first bytes. And under the real server too, a page in the media folder is a download."""
    path = make_project(media_directory="media")
    media = path.parent / "media"
    media.mkdir()
    paper = b"%PDF-1.4\n" + bytes(range(256)) * 1200
    (media / "paper.pdf").write_bytes(paper)
    (media / "cat.png").write_bytes(b"\x89PNG" + bytes(range(256)) * 4)
    (media / "evil.html").write_bytes(b"<script src=evil.js></script>")
    (media / "key").symlink_to(path.parent / "annotation_output" / "secret_key")
    srv = ServerProcess(path).start()
    try:
        session = requests.Session()
        assert session.post(srv.url + "/login", data={"name": "ana"}, allow_redirects=False, timeout=10).status_code == 302
        whole = session.get(srv.url + "/media/paper.pdf", timeout=10)
        assert whole.status_code == 200 and whole.content == paper
        assert whole.headers["Content-Type"] == "application/pdf"
        assert "sandbox" in whole.headers["Content-Security-Policy"].split("; ")
        part = session.get(srv.url + "/media/paper.pdf", headers={"Range": "bytes=100-199"}, timeout=10)
        assert part.status_code == 206 and part.content == paper[100:200]
        image = session.get(srv.url + "/media/cat.png", timeout=10)
        assert image.content == (media / "cat.png").read_bytes() and image.headers["Content-Type"] == "image/png"
        page = session.get(srv.url + "/media/evil.html", timeout=10)
        assert page.headers["Content-Type"] == "application/octet-stream"
        assert page.headers["Content-Disposition"].startswith("attachment")
        assert session.get(srv.url + "/media/key", timeout=10).status_code == 404
        assert "not serving /media/key: The media file 'key' is reached through a link" in srv.output()
    finally:
        srv.stop()
