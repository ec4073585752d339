"""What a connection still has to send, so that no thread waits for a client to read (issue 42).

gunicorn's threads wrote each answer with a blocking ``sendall``: a client that asked and did not
read (60 connections pipelining ``GET /static/annotate.js``, or 60 downloads of a large media file,
held unread) left every thread of a worker blocked in a write once the kernel's socket buffers were
full, and signed-in annotators' requests timed out. A thread now writes through an :class:`Outbox`:

- it sends what the kernel takes at once, without waiting; the rest stays in the outbox, in memory
  (the answer's bytes) or as a file (``sendfile``: a media or static file is sent from the file
  itself, whatever its size), and the thread goes back to the pool. The worker's event loop sends it
  as the client reads (:meth:`Outbox.pump`), and ends the connection after ``SEND_IDLE_S`` without a
  byte taken;
- only while a connection holds more than ``OUTBOX_MAX`` in memory (an answer its app produces piece
  by piece, such as a file asked for by ``Range``), or the worker's connections ``OUTBOX_TOTAL_MAX``
  together, does its thread wait for the client to read, and then at most a quarter of the worker's
  threads per client address (:class:`SendBudget`) and never past the body deadline
  (:func:`potato.server.serving.request_framing.read_deadline`: ``BODY_TIMEOUT_S``, ``BODY_MIN_RATE``). A
  thread that may not wait, or waited too long, ends the connection (:class:`SlowReader`).

The worker (:mod:`potato.server.serving.gunicorn_worker`) hands each thread an outbox in place of its client
socket, and after the thread has answered, hands the rest to its event loop.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from potato.server.serving.request_framing import read_deadline

SEND_IDLE_S = 60.0
"""Seconds the event loop waits for a client to take any byte of an answer before it ends the
connection (nginx's send_timeout); such a connection holds no thread meanwhile."""
OUTBOX_MAX = 1024 * 1024
"""Bytes of answer one connection may hold in memory beyond what the kernel took; past this its
thread waits for the client to read (a file held for sendfile is not counted: it is not in memory)."""
OUTBOX_TOTAL_MAX = 64 * 1024 * 1024
"""...and all the connections of one worker together."""
WAITERS_SHARE = 4
"""At most one thread in this many waits for one client address to read; another one ends its connection."""


class SlowReader(BrokenPipeError):
    """The client does not read what it asked for, and a thread would have to wait for it longer or
    more often than allowed: the server ends the connection.

    A signal between the outbox and the worker, outside the PotatoError tree (no person acts on it).
    It is a ``BrokenPipeError`` so that gunicorn's worker treats the connection as one the client broke:
    no error page written after a partial answer, no traceback in the log."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EPIPE, message)


def client_address(client: object) -> str:
    """The address the per-client limits count by (pure): the peer's IP for TCP, else its text."""
    if isinstance(client, (tuple, list)) and client:
        return str(client[0])
    return str(client)


class SendBudget:
    """One worker's limits on what its connections hold unsent: bytes in memory in all, and how many
    of its threads wait for one client address to read. Shared by the worker's threads."""

    def __init__(self, threads: int, total_max: int = OUTBOX_TOTAL_MAX) -> None:
        self.waiters_max = max(1, threads // WAITERS_SHARE)
        self.total_max = total_max
        self.queued = 0
        self.waiting: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, nbytes: int) -> None:
        with self._lock:
            self.queued += nbytes

    def over(self, mine: int) -> bool:
        """Whether a connection holding ``mine`` bytes in memory must wait before it holds more."""
        return mine > OUTBOX_MAX or (mine > 0 and self.queued > self.total_max)

    def enter(self, client: str) -> bool:
        """Count one more thread waiting for ``client``; False (nothing counted) when it has its share."""
        with self._lock:
            if self.waiting.get(client, 0) >= self.waiters_max:
                return False
            self.waiting[client] = self.waiting.get(client, 0) + 1
            return True

    def leave(self, client: str) -> None:
        with self._lock:
            left = self.waiting.get(client, 0) - 1
            if left > 0:
                self.waiting[client] = left
            else:
                self.waiting.pop(client, None)


@dataclass
class _FilePart:
    """Bytes of a file still to send: a descriptor of its own (the app closes its file), where, how many."""

    fd: int
    offset: int
    left: int


class Outbox:
    """A client socket as its request's thread writes to it, and what it could not send yet.

    gunicorn's response writes through ``sendall`` and ``sendfile``, which here never wait for the
    client unless the memory limits say so (see the module's docstring). The event loop calls
    :meth:`pump` when the socket is writable, after the thread is done."""

    def __init__(self, sock: socket.socket, client: str, budget: SendBudget, timeout_s: float, min_rate: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sock = sock
        self.client = client
        self.budget = budget
        self.timeout_s = timeout_s
        self.min_rate = min_rate
        self.clock = clock
        self.parts: deque[memoryview | _FilePart] = deque()
        self.buffered = 0
        """Bytes of ``parts`` held in memory."""
        self.sent = 0
        self.last_progress = clock()
        self.abandoned = False

    @property
    def pending(self) -> bool:
        """Whether some of what the thread wrote has not been sent yet."""
        return bool(self.parts)

    # What gunicorn's response calls.
    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        self._check_open()
        view = memoryview(bytes(data))
        if not view:
            return
        if not self.parts:
            view = view[self._send_now(view):]
            if not view:
                return
        self.parts.append(view)
        self._hold(len(view))
        if self.budget.over(self.buffered):
            self._wait()

    def send(self, data: bytes | bytearray | memoryview) -> int:
        self.sendall(data)
        return len(data)

    def sendfile(self, file: Any, offset: int = 0, count: int | None = None) -> int:
        self._check_open()
        fd = file.fileno()
        if count is None:
            count = os.fstat(fd).st_size - offset
        total = count
        if not self.parts:
            sent = self._sendfile_now(fd, offset, count)
            offset, count = offset + sent, count - sent
        if count > 0:
            self.parts.append(_FilePart(os.dup(fd), offset, count))
        return total

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)

    # What the event loop (and a waiting thread) calls.
    def pump(self) -> bool:
        """Send what the kernel takes now, in order, without waiting; True when nothing is left.
        Raises OSError when the connection is broken (or a file shrank under its answer)."""
        while self.parts:
            part = self.parts[0]
            if isinstance(part, memoryview):
                sent = self._send_now(part)
                self._hold(-sent)
                if sent < len(part):
                    self.parts[0] = part[sent:]
                    return False
                self.parts.popleft()
            else:
                part_sent = self._sendfile_now(part.fd, part.offset, part.left)
                part.offset, part.left = part.offset + part_sent, part.left - part_sent
                if part.left > 0:
                    return False
                self.parts.popleft()
                os.close(part.fd)
        return True

    def idle_s(self, now: float) -> float:
        """Seconds since the client last took a byte of this connection's answers."""
        return now - self.last_progress

    def abandon(self) -> None:
        """Give up on what is left: memory and file descriptors go back; later writes raise SlowReader."""
        self.abandoned = True
        while self.parts:
            part = self.parts.popleft()
            if isinstance(part, _FilePart):
                os.close(part.fd)
        self._hold(-self.buffered)

    # The rest.
    def _check_open(self) -> None:
        if self.abandoned:
            raise SlowReader(f"{self.client} did not read its answers; the connection ends")

    def _hold(self, nbytes: int) -> None:
        self.buffered += nbytes
        self.budget.add(nbytes)

    def _progress(self, nbytes: int) -> None:
        if nbytes:
            self.sent += nbytes
            self.last_progress = self.clock()

    @contextlib.contextmanager
    def _nonblocking(self) -> Iterator[None]:
        before = self.sock.gettimeout()
        self.sock.setblocking(False)
        try:
            yield
        finally:
            self.sock.settimeout(before)

    def _send_now(self, view: memoryview) -> int:
        sent = 0
        with self._nonblocking():
            while sent < len(view):
                try:
                    sent += self.sock.send(view[sent:])
                except BlockingIOError:
                    break
        self._progress(sent)
        return sent

    def _sendfile_now(self, fd: int, offset: int, count: int) -> int:
        sent = 0
        with self._nonblocking():
            while sent < count:
                try:
                    n = os.sendfile(self.sock.fileno(), fd, offset + sent, count - sent)
                except BlockingIOError:
                    break
                if n == 0:
                    raise OSError(errno.EIO, "the file ended before the length its answer announced")
                sent += n
        self._progress(sent)
        return sent

    def _wait(self) -> None:
        """The thread waits for the client to read until this connection, and the worker, hold less
        than their limits; within its client's share of the threads and the body deadline, else the
        connection ends (SlowReader)."""
        if not self.budget.enter(self.client):
            self.abandon()
            raise SlowReader(f"{self.client} has {self.budget.waiters_max} answers unread in this worker "
                             "already; this connection ends")
        started, sent_before = self.clock(), self.sent
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self.sock, selectors.EVENT_WRITE)
                while self.budget.over(self.buffered) and not self.pump():
                    left = read_deadline(started, self.sent - sent_before, self.timeout_s, self.min_rate) - self.clock()
                    if left <= 0:
                        self.abandon()
                        raise SlowReader(f"{self.client} read its answer slower than "
                                         f"{self.min_rate // 1024:g} KB/s; the connection ends")
                    selector.select(min(left, 1.0))
        finally:
            self.budget.leave(self.client)


def abort(sock: socket.socket) -> None:
    """End a connection whose client does not read: shut it both ways (the event loop's close then
    waits for nothing) and reset it on close, so the kernel drops what it still held for the client."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already reset by the client: nothing left to end
