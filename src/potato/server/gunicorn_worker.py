"""gunicorn's threaded worker, except that a thread gets a connection only once its request headers
have all arrived.

The stock ``gthread`` worker hands a connection to one of its threads as soon as the first bytes
arrive, and that thread then waits for the rest of the headers. Forty clients sending a header line
every two seconds (slowloris) held all 24 threads of a default server, and it stopped answering. Here
the worker's own event loop collects the headers of every connection, however many and however slow,
without a thread, and closes one that has not sent them within ``HEAD_TIMEOUT_S`` (nginx's
client_header_timeout does the same). Bodies of up to a megabyte (all an annotator sends) are collected
the same way, within ``BODY_TIMEOUT_S``. Threads serve only complete requests: annotators' labels and
agents' long polls (which the server caps itself) are untouched.

This builds on the worker's internals (``enqueue_req``, ``murder_keepalived``, its poller); with a
gunicorn that lacks them :func:`worker_class` falls back to plain ``gthread``.
"""

from __future__ import annotations

import os
import re
import selectors
import time
from functools import partial
from typing import Any

from gunicorn.workers.gthread import TConn, ThreadWorker

HEAD_TIMEOUT_S = 10.0
"""Seconds a client has to send a request's headers (the request line and every header line)."""
HEAD_MAX = 64 * 1024
"""Headers larger than this go to the parser as they are, which refuses them (431/400)."""
BODY_PREREAD_MAX = 1024 * 1024
"""Bodies up to this size (every annotator's request: the annotator routes' limit) are collected in
the event loop too; larger ones (an admin's predictions upload) are read by their thread."""
BODY_TIMEOUT_S = 30.0
"""Seconds, after the headers, a client has to send a body of up to BODY_PREREAD_MAX."""
END = b"\r\n\r\n"
_LENGTH = re.compile(rb"\r\ncontent-length[ \t]*:[ \t]*(\d{1,12})[ \t]*\r\n", re.IGNORECASE)
_HANDED_OVER = re.compile(rb"\r\n(?:transfer-encoding|expect)[ \t]*:", re.IGNORECASE)


def body_wanted(head: bytes) -> int:
    """Bytes of body to collect after a complete header block (pure): its Content-Length when that is
    at most BODY_PREREAD_MAX, else 0 (a chunked body, an ``Expect: 100-continue`` client waiting for
    the server's go-ahead, a large upload: their threads read those)."""
    block = head[:head.index(END) + 2] if END in head else head
    if _HANDED_OVER.search(block):
        return 0
    found = _LENGTH.search(block)
    length = int(found.group(1)) if found else 0
    return length if length <= BODY_PREREAD_MAX else 0
TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


class HeadFirstWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    def init_process(self) -> None:
        self.heads: dict[TConn, tuple[bytearray, float]] = {}
        super().init_process()

    def enqueue_req(self, conn: TConn) -> None:
        held = conn.parser.unreader.buf.getvalue() if conn.parser is not None else b""
        conn.potato_body_deadline = None
        if END in held or conn.cfg.is_ssl or getattr(conn, "is_http2", False):
            super().enqueue_req(conn)  # a pipelined request is complete already; TLS reads in the thread
            return
        conn.sock.setblocking(False)
        self.heads[conn] = (bytearray(), time.monotonic() + HEAD_TIMEOUT_S)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_head_readable, conn))

    def on_head_readable(self, conn: TConn, client: Any) -> None:
        buf, _ = self.heads[conn]
        try:
            data = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the client went away before its request was complete
            self.drop(conn)
            return
        buf += data
        held = conn.parser.unreader.buf.getvalue() if conn.parser is not None else b""
        whole = held + buf
        if END not in whole and len(buf) < HEAD_MAX:
            return
        if END in whole:
            # A slow body would hold a thread as slow headers did: collect small bodies here as well.
            body_end = whole.index(END) + len(END) + body_wanted(whole)
            if len(whole) < body_end:
                if not getattr(conn, "potato_body_deadline", None):
                    conn.potato_body_deadline = True
                    self.heads[conn] = (buf, time.monotonic() + BODY_TIMEOUT_S)
                return
        self.poller.unregister(conn.sock)
        del self.heads[conn]
        conn.sock.setblocking(True)
        conn.init()  # the HTTP/1 parser (no I/O without TLS or h2c prior knowledge, see worker_class)
        unreader = conn.parser.unreader
        unreader.unread(unreader.take_buffered() + bytes(buf))
        conn.data_ready = True
        super().enqueue_req(conn)

    def drop(self, conn: TConn, answer: bytes = b"") -> None:
        self.heads.pop(conn, None)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        if answer:
            try:
                conn.sock.send(answer)
            except OSError:
                pass
        self.nr_conns -= 1
        conn.close()

    def murder_keepalived(self, force: bool = False) -> None:
        super().murder_keepalived(force)
        now = time.monotonic()
        for conn, (_, deadline) in list(self.heads.items()):
            if force or deadline <= now:
                self.drop(conn, TIMEOUT_RESPONSE)


def worker_class(cfg_http2_cleartext: str | None = None) -> str:
    """The worker for ``potato start``: this one where the installed gunicorn has what it builds on
    (``POTATO_STOCK_GTHREAD=1`` picks the stock one, for bench/slowloris.py's comparison)."""
    if os.environ.get("POTATO_STOCK_GTHREAD") == "1":
        return "gthread"
    needed = ("enqueue_req", "murder_keepalived", "finish_request")
    if all(hasattr(ThreadWorker, name) for name in needed) and hasattr(TConn, "init") \
            and "data_ready" in TConn.__init__.__code__.co_names and cfg_http2_cleartext in (None, "off"):
        return f"{__name__}.HeadFirstWorker"
    return "gthread"
