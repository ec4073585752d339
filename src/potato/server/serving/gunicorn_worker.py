"""gunicorn's threaded worker, except that a thread gets a connection only once its request has
arrived, and then only with a deadline on whatever it still reads.

The stock ``gthread`` worker hands a connection to one of its threads as soon as the first bytes
arrive, and that thread then waits for the rest of the headers and the body. Forty clients sending a
header line every two seconds (slowloris) held all 24 threads of a default server, and it stopped
answering; 100 clients sending a body a byte a second did the same (issue 20). Here the worker's own
event loop collects the headers of every connection, however many and however slow, without a
thread, and closes one that has not sent them within ``HEAD_TIMEOUT_S`` (nginx's
client_header_timeout does the same). Then the headers decide, before any thread waits on a body
(:func:`plan_body`):

- a body of up to ``BODY_PREREAD_MAX`` (all an annotator or an agent's report sends), by
  Content-Length or chunked, is collected by the event loop too, within ``BODY_TIMEOUT_S``; a client
  that waits for ``100 Continue`` gets it from the event loop. Small chunked bodies are collected, not
  refused: requests chunks a generator body, Go's net/http a reader of unknown length;
- a larger or chunked body goes to a thread before it has arrived only on the upload routes (an
  agent's predictions and reports with its bearer token, the admin label import with
  ``X-API-Key``), and only while fewer than a quarter of the threads read one (else ``503`` with
  ``Retry-After``);
- any other larger body is a ``413`` (ambiguous framing a ``400``) from the event loop, no thread.

Whatever a thread still reads from its client has a deadline (:class:`PacedSocket`):
``BODY_TIMEOUT_S`` without a byte, or on average less than ``BODY_MIN_RATE`` after the first
``BODY_TIMEOUT_S``, and the request ends with ``408``. A connection the server ends is wound down by
its thread (:func:`wind_down`), not by the event loop, which gunicorn's graceful close would hold for
seconds while a slow client still sends.

Nor does a thread wait for a client to read its answer (issue 42): it writes through an
:class:`~potato.server.serving.outbox.Outbox`, which sends what the kernel takes at once and keeps the rest
(bytes, or a file for ``sendfile``); the event loop then sends that as the client reads
(:meth:`HeadFirstWorker.finish_request`), before it reads the connection's next request.

This builds on the worker's internals (``enqueue_req``, ``handle``, ``murder_keepalived``, its
poller, the parser's unreader); with a gunicorn that lacks them :func:`worker_class` falls back to
plain ``gthread``. TLS connections (``certfile``) are read by their threads as in ``gthread``.

The limits and every decision made from a request's bytes (:func:`plan_body`, :func:`chunked_end`, the
answers) are pure functions in :mod:`potato.server.serving.request_framing`; this module does the I/O.
"""

from __future__ import annotations

import ctypes
import os
import selectors
import signal
import socket
import sys
import threading
import time
from functools import partial
from typing import Any, Callable

from gunicorn import util as gunicorn_util
from gunicorn.workers.gthread import TConn, ThreadWorker

from potato.server.serving import stopping
from potato.server.serving.outbox import SEND_IDLE_S, Outbox, SendBudget, abort, client_address
from potato.server.serving.request_framing import (
    BAD_FRAMING_RESPONSE,
    BODY_MIN_RATE,
    BODY_PREREAD_MAX,
    CONTINUE,
    END,
    HEAD_MAX,
    HEAD_TIMEOUT_S,
    HEAD_TOO_LARGE_RESPONSE,
    TIMEOUT_RESPONSE,
    TOO_LARGE_RESPONSE,
    Body,
    BodyPlan,
    answer,
    body_timeout,
    chunked_end,
    cut_short,
    parser_error_answer,
    plan_body,
    read_deadline,
    strip_expect,
)
from potato.server.security import SlowBody

UPLOAD_THREADS_SHARE = 4
"""At most one thread in this many reads an upload's body at a time; other uploads get 503."""
UPLOAD_RETRY_S = 10
"""The ``Retry-After`` of that 503."""
LINGER_S = 2.0
"""After an answer that refuses a body, how long the event loop reads and drops what the client still
sends, so that closing does not reset the connection before the client has read the answer."""
LINGER_MAX = 4 * 1024 * 1024
"""...and at most this much (a client that sent a few megabytes before reading still reads the answer)."""


class PacedSocket:
    """A client socket as its request's thread reads it: every ``recv`` waits at most ``timeout_s``
    and ends the body at its :func:`read_deadline`, raising :class:`SlowBody` (the app answers 408)."""

    def __init__(self, sock: socket.socket, timeout_s: float, min_rate: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sock = sock
        self.timeout_s = timeout_s
        self.min_rate = min_rate
        self.clock = clock
        self.started = clock()
        self.received = 0
        self.expired = False
        self._cap: float | None = None  # set by gunicorn's own bounded drain

    def recv(self, size: int) -> bytes:
        left = read_deadline(self.started, self.received, self.timeout_s, self.min_rate) - self.clock()
        if left <= 0:
            self.expired = True
            raise SlowBody(f"the request's body arrived slower than {self.min_rate // 1024} KB/s")
        self.sock.settimeout(min(left, self.timeout_s, self._cap if self._cap is not None else left))
        try:
            data = self.sock.recv(size)
        except socket.timeout:
            self.expired = True
            raise SlowBody(f"no byte of the request's body for {self.timeout_s:g} s") from None
        finally:
            self.sock.settimeout(None)
        self.received += len(data)
        return data

    def settimeout(self, value: float | None) -> None:
        self._cap = value

    def gettimeout(self) -> float | None:
        return self._cap

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class _ErrorPage:
    """Stands in for the client socket while gunicorn's ``handle_error`` writes its error page, which
    is kept here instead of sent (:meth:`StopSafeWorker.handle_error` sends its own answer)."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.written = bytearray()

    def gettimeout(self) -> float:
        return 0.0

    def setblocking(self, flag: bool) -> None:
        pass  # nothing is sent from here

    def sendall(self, data: bytes) -> None:
        self.written += data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


def wind_down(sock: socket.socket) -> None:
    """End a connection from its thread: half-close, read and drop what the client still sends
    (``LINGER_S``, ``LINGER_MAX``: time to read the answer before a close with unread bytes resets
    the connection), then shut it both ways. gunicorn's own graceful close, which follows on the
    event loop, then finds nothing to wait for."""
    try:
        sock.shutdown(socket.SHUT_WR)
        deadline, dropped = time.monotonic() + LINGER_S, 0
        while dropped < LINGER_MAX and deadline > time.monotonic():
            sock.settimeout(deadline - time.monotonic())
            data = sock.recv(65536)
            if not data:
                break
            dropped += len(data)
    except OSError:
        pass  # reset, gone or still sending at the deadline: either way the connection ends now
    finally:
        try:
            sock.settimeout(None)
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already reset by the client: nothing left to shut


class _Pending:
    """A connection whose request the event loop is still collecting."""

    __slots__ = ("buf", "deadline", "searched", "plan", "body_at", "scan", "lingering")

    def __init__(self, deadline: float) -> None:
        self.buf = bytearray()
        self.deadline = deadline
        self.searched = 0
        self.plan: BodyPlan | None = None
        self.body_at = 0
        self.scan = 0
        self.lingering = -1  # while collecting; after a refusal, the bytes dropped since


PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal the kernel sends a process when the thread that forked it ends."""


def request_parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process the moment its parent, gunicorn's master, ends
    (Linux's ``prctl(PR_SET_PDEATHSIG)``; the setting is not inherited by the processes this one starts,
    so a training run's outlive it). False where there is no such call: gunicorn's look at the parent
    pid once a second notices instead (:meth:`StopSafeWorker.is_parent_alive`)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(sig), ctypes.c_ulong(0), ctypes.c_ulong(0),
                              ctypes.c_ulong(0))) == 0
    except (OSError, AttributeError):
        return False


STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGQUIT}
"""What the master holds across a fork (:class:`potato.server.serving.gunicorn_app.StopSafeArbiter`)."""


class StopSafeWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's threaded worker that takes the stop signals its master held while forking it.

    Until a worker installs its own handlers it runs the master's, which only queue a signal in the
    child's copy of the master's queue: a SIGTERM that came while a worker booted was lost, and that
    worker served on until the master's graceful timeout killed it (30 s, all of systemd's stop time).
    The master now blocks the stop signals across the fork; one sent meanwhile stays pending and
    arrives here, once the worker's own handler is in place.
    """

    releases_held_signals = True

    def init_signals(self) -> None:
        super().init_signals()
        # From here on the master's death is a SIGTERM, the stop below (issue 33): after a kill -9 of
        # the master its workers held the port for the whole graceful timeout, and a restart failed.
        request_parent_death_signal(signal.SIGTERM)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        if os.getppid() != self.ppid:  # it died before the kernel was asked to say so
            os.kill(os.getpid(), signal.SIGTERM)

    def is_parent_alive(self) -> bool:
        """gunicorn's look at the parent pid, once a second: where the kernel sends no parent-death
        signal, a master found dead starts the same stop as a SIGTERM (gunicorn's own leaves the loop
        without it, and its sockets open until the graceful timeout)."""
        if super().is_parent_alive():
            return True
        self.handle_exit(signal.SIGTERM, None)
        return False

    def set_accept_enabled(self, enabled: bool) -> None:
        """gunicorn's: stop or start taking connections; when the worker stops, also close its copies of
        the listening sockets at once, before it waits for the requests in flight. The master has
        closed its own (a stop) or is gone (killed): the port is free as soon as no worker holds it,
        for the next server to listen on while this one still answers what it took."""
        super().set_accept_enabled(enabled)
        if enabled or self.alive:
            return  # only as many connections as it takes: no stop
        if os.getppid() != self.ppid:
            self.log.warning("gunicorn's master (pid %s) has ended: worker %s stops taking connections, "
                             "answers the %d it has and exits", self.ppid, self.pid, self.nr_conns)
        for listener in self.sockets:
            listener.close()

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """gunicorn's, which logs the error and picks the status (414 for a long request line, 431 for
        too many header fields, 400 for one that is not HTTP, 500 when the app failed outside Flask),
        except that the answer it writes is :func:`parser_error_answer`'s: JSON with the security
        headers every answer carries, where gunicorn's HTML page carried none (issue 42)."""
        page = _ErrorPage(client)
        super().handle_error(req, page, addr, exc)
        if not page.written:
            return
        try:
            gunicorn_util.write_nonblock(client, parser_error_answer(bytes(page.written)))
        except OSError as err:  # as gunicorn's own: a client that has gone gets no answer
            self.log.debug("Failed to send error message: %s", err)


class _Sending:
    """A connection whose thread has answered and whose outbox the event loop is sending."""

    __slots__ = ("outbox", "fs", "keep")

    def __init__(self, outbox: Outbox, fs: Any, keep: bool) -> None:
        self.outbox = outbox
        self.fs = fs
        self.keep = keep


class HeadFirstWorker(StopSafeWorker):
    def handle_exit(self, sig: int, frame: Any) -> None:
        stopping.requested.set()  # waiting long polls answer now instead of holding the shutdown
        super().handle_exit(sig, frame)

    def init_process(self) -> None:
        self.heads: dict[TConn, _Pending] = {}
        self.body_timeout_s = body_timeout(os.environ)
        self.upload_max = max(1, self.cfg.threads // UPLOAD_THREADS_SHARE)
        self.uploads = 0
        self.uploads_lock = threading.Lock()
        self.send_budget = SendBudget(self.cfg.threads)
        self.sending: dict[TConn, _Sending] = {}
        super().init_process()

    def enqueue_req(self, conn: TConn) -> None:
        if conn.cfg.is_ssl or getattr(conn, "is_http2", False):
            super().enqueue_req(conn)  # TLS reads in the thread
            return
        conn.sock.setblocking(False)
        pending = _Pending(time.monotonic() + HEAD_TIMEOUT_S)
        if conn.parser is not None:  # bytes a keep-alive request read ahead: the next request's start
            pending.buf += conn.parser.unreader.take_buffered()
        self.heads[conn] = pending
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_head_readable, conn))
        if pending.buf:
            self.advance(conn, pending)

    def on_head_readable(self, conn: TConn, client: Any) -> None:
        pending = self.heads[conn]
        try:
            data = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if pending.lingering >= 0:  # refused: drop what still comes, then close
            pending.lingering += len(data)
            if not data or pending.lingering > LINGER_MAX:
                self.drop(conn)
            return
        if not data:  # the client closed its side before its request was complete
            if pending.plan is None:
                self.drop(conn)  # before its headers: nothing to answer
            else:  # mid-body: it may be waiting for an answer (a half-close), and a gone one is not hurt
                self.refuse(conn, cut_short(pending.plan, len(pending.buf) - pending.body_at))
            return
        pending.buf += data
        self.advance(conn, pending)

    def advance(self, conn: TConn, pending: _Pending) -> None:
        """Decide from the headers once they are in, then hand the request over, refuse it, or wait."""
        buf = pending.buf
        if pending.plan is None:
            end = buf.find(END, pending.searched)
            if end < 0:
                pending.searched = max(0, len(buf) - 3)
                if len(buf) >= HEAD_MAX:
                    self.refuse(conn, HEAD_TOO_LARGE_RESPONSE)
                return
            head = bytes(buf[:end + len(END)])
            plan = plan_body(head)
            if plan.kind is Body.BAD:
                self.refuse(conn, BAD_FRAMING_RESPONSE)
                return
            if plan.kind is Body.TOO_LARGE:
                self.refuse(conn, TOO_LARGE_RESPONSE)
                return
            if plan.kind is Body.UPLOAD:
                with self.uploads_lock:
                    free = self.uploads < self.upload_max
                    if free:
                        self.uploads += 1
                if not free:
                    self.refuse(conn, answer(503, "Service Unavailable", "The server is reading as many uploads "
                                             "as it reads at once; send it again later.", UPLOAD_RETRY_S))
                    return
                conn.potato_upload = True
            if plan.expects_continue:  # the event loop gives the go-ahead; the thread must not repeat it
                stripped = strip_expect(head)
                buf[:len(head)] = stripped
                head = stripped
                if len(buf) == len(head):
                    self.send(conn, CONTINUE)
            pending.plan, pending.body_at, pending.scan = plan, len(head), len(head)
            pending.deadline = time.monotonic() + self.body_timeout_s
        kind = pending.plan.kind
        if kind is Body.COLLECT and len(buf) < pending.body_at + pending.plan.length:
            return
        if kind is Body.CHUNKED:
            try:
                pending.scan, done = chunked_end(buf, pending.scan)
            except ValueError:
                self.refuse(conn, BAD_FRAMING_RESPONSE)
                return
            if (pending.scan if done else len(buf)) - pending.body_at > BODY_PREREAD_MAX:
                self.refuse(conn, TOO_LARGE_RESPONSE)
                return
            if not done:
                return
        self.hand_over(conn, pending)

    def hand_over(self, conn: TConn, pending: _Pending) -> None:
        self.poller.unregister(conn.sock)
        del self.heads[conn]
        conn.sock.setblocking(True)
        conn.init()  # the HTTP/1 parser (no I/O without TLS or h2c prior knowledge, see worker_class)
        conn.parser.unreader.unread(bytes(pending.buf))
        conn.data_ready = True
        conn.potato_paced = True
        super().enqueue_req(conn)

    def handle(self, conn: TConn) -> Any:
        """The thread's part: gunicorn's, reading through a :class:`PacedSocket` and writing through an
        :class:`Outbox`; a connection that ends is closed here, so the event loop never lingers on it,
        unless its outbox still holds some of the answer (the event loop sends it, then closes)."""
        if not getattr(conn, "potato_paced", False):
            return super().handle(conn)
        conn.potato_paced = False
        upload, conn.potato_upload = getattr(conn, "potato_upload", False), False
        unreader = conn.parser.unreader
        raw = conn.sock
        paced = unreader.sock = PacedSocket(raw, self.body_timeout_s, BODY_MIN_RATE)
        outbox = conn.sock = Outbox(raw, client_address(conn.client), self.send_budget, self.body_timeout_s,
                                    BODY_MIN_RATE)
        try:
            keep = super().handle(conn)
        finally:
            conn.sock = raw
            unreader.sock = raw
            if upload:
                with self.uploads_lock:
                    self.uploads -= 1
        if outbox.abandoned:
            self.log.info("Ended a connection from %s: it did not read its answers", outbox.client)
            abort(raw)
            return False
        keep = bool(keep) and not paced.expired  # a 408 (paced.expired) ends the connection too
        if outbox.pending:
            conn.potato_outbox = outbox  # for finish_request, on the event loop
            return keep
        if keep:
            return keep
        wind_down(raw)
        return False

    def finish_request(self, conn: TConn, fs: Any) -> None:
        """gunicorn's, once the thread's answer has all been sent: until then the event loop sends
        what the thread left in its outbox, as the client reads, and reads nothing more from it."""
        outbox: Outbox | None = getattr(conn, "potato_outbox", None)
        if outbox is None:
            super().finish_request(conn, fs)
            return
        conn.potato_outbox = None
        keep = not fs.cancelled() and fs.exception() is None and bool(fs.result())
        self.sending[conn] = _Sending(outbox, fs, keep)
        conn.sock.setblocking(False)
        self.poller.register(conn.sock, selectors.EVENT_WRITE, partial(self.on_writable, conn))

    def on_writable(self, conn: TConn, client: Any) -> None:
        sending = self.sending[conn]
        try:
            done = sending.outbox.pump()
        except OSError:
            self.end_sending(conn)  # reset by the client, or its file shrank: nothing more to send
            return
        if not done:
            return
        self.poller.unregister(conn.sock)
        del self.sending[conn]
        if sending.keep:
            super().finish_request(conn, sending.fs)  # kept alive: wait for (or read) the next request
        else:
            self.linger(conn)

    def end_sending(self, conn: TConn) -> None:
        """Give up on a connection whose answer the event loop is still sending."""
        sending = self.sending.pop(conn)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass  # the socket is closed already: the poller forgot it
        sending.outbox.abandon()
        abort(conn.sock)
        self.nr_conns -= 1
        conn.close()

    def linger(self, conn: TConn) -> None:
        """Close from the event loop without waiting in it: half-close, then drop what the client still
        sends for a moment (as after a refusal, :meth:`refuse`)."""
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self.nr_conns -= 1
            conn.close()
            return
        pending = self.heads[conn] = _Pending(time.monotonic() + LINGER_S)
        pending.lingering = 0
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_head_readable, conn))

    def send(self, conn: TConn, data: bytes) -> None:
        try:
            conn.sock.send(data)
        except OSError:
            pass

    def refuse(self, conn: TConn, response: bytes) -> None:
        """Answer from the event loop, then drop what the client still sends for a moment and close."""
        pending = self.heads[conn]
        self.send(conn, response)
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self.drop(conn)
            return
        pending.lingering, pending.deadline = 0, time.monotonic() + LINGER_S
        pending.buf = bytearray()

    def drop(self, conn: TConn, response: bytes = b"") -> None:
        self.heads.pop(conn, None)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        if response:
            self.send(conn, response)
        self.nr_conns -= 1
        conn.close()

    def murder_keepalived(self, force: bool = False) -> None:
        super().murder_keepalived(force)
        now = time.monotonic()
        for conn, sending in list(self.sending.items()):
            if force:
                self.end_sending(conn)
            elif sending.outbox.idle_s(now) >= SEND_IDLE_S:
                self.log.info("Ended a connection from %s: it took no byte of its answer for %g s",
                              sending.outbox.client, SEND_IDLE_S)
                self.end_sending(conn)
        for conn, pending in list(self.heads.items()):
            if force:
                self.drop(conn, b"" if pending.lingering >= 0 else TIMEOUT_RESPONSE)
            elif pending.deadline <= now:
                if pending.lingering >= 0:
                    self.drop(conn)
                else:
                    self.refuse(conn, TIMEOUT_RESPONSE)  # headers or body not in time


def worker_class(cfg_http2_cleartext: str | None = None) -> str:
    """The worker for ``potato start``: this one where the installed gunicorn has what it builds on
    (``POTATO_STOCK_GTHREAD=1`` picks the stock one, for bench/slowloris.py's comparison)."""
    if os.environ.get("POTATO_STOCK_GTHREAD") == "1":
        return "gthread"
    needed = ("enqueue_req", "murder_keepalived", "finish_request", "handle")
    if all(hasattr(ThreadWorker, name) for name in needed) and hasattr(TConn, "init") \
            and "data_ready" in TConn.__init__.__code__.co_names and cfg_http2_cleartext in (None, "off"):
        return f"{__name__}.HeadFirstWorker"
    return f"{__name__}.StopSafeWorker"
