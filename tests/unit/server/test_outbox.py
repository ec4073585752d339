"""The outbox a worker's thread writes an answer through (issue 42): it never waits for a client that
does not read, except within the limits, and what it keeps is sent whole and in order later. On a
socketpair: the kernel's buffers fill as they do on a real connection."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Iterator

import pytest

from potato.server.serving.outbox import OUTBOX_MAX, Outbox, SendBudget, SlowReader, abort, client_address


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    yield ours, theirs
    ours.close()
    theirs.close()


def _read_all(outbox: Outbox, theirs: socket.socket, nbytes: int) -> bytes:
    """Read as the client, pumping as the event loop does whenever the client has made room."""
    got = bytearray()
    theirs.settimeout(5)
    while len(got) < nbytes:
        outbox.pump()
        got += theirs.recv(1 << 16)
    return bytes(got)


def test_an_unread_answer_leaves_the_thread_at_once_and_is_sent_whole_in_order_later(
        pair: tuple[socket.socket, socket.socket], tmp_path: Path) -> None:
    ours, theirs = pair
    budget = SendBudget(threads=8)
    outbox = Outbox(ours, "10.0.0.1", budget, timeout_s=30, min_rate=16 * 1024)
    head, tail = b"H" * 300_000, b"T" * 1000  # more than the socket's buffers take
    media = tmp_path / "media.bin"
    media.write_bytes(os.urandom(500_000))
    outbox.sendall(head)  # returns without the client having read a byte
    with media.open("rb") as f:
        outbox.sendfile(f, offset=0, count=500_000)
    # the app's file is closed now; the outbox holds a descriptor of its own, not the file's bytes
    outbox.sendall(tail)
    assert outbox.pending and outbox.buffered < len(head) + len(tail) + 1
    assert budget.queued == outbox.buffered
    assert _read_all(outbox, theirs, len(head) + 500_000 + len(tail)) == head + media.read_bytes() + tail
    assert outbox.pump() and not outbox.pending and budget.queued == 0


def test_a_thread_waits_only_within_its_clients_share_and_then_ends_the_connection(
        pair: tuple[socket.socket, socket.socket]) -> None:
    """Past OUTBOX_MAX in memory a thread would wait; a client that already has its share of waiting
    threads (a quarter of the worker's) gets its connection ended instead, and the memory is freed."""
    ours, _ = pair
    budget = SendBudget(threads=8)
    assert budget.waiters_max == 2
    assert budget.enter("10.0.0.1") and budget.enter("10.0.0.1")  # two threads wait for it already
    outbox = Outbox(ours, "10.0.0.1", budget, timeout_s=30, min_rate=16 * 1024)
    with pytest.raises(SlowReader, match="unread"):
        outbox.sendall(b"x" * (OUTBOX_MAX + 100_000))
    assert outbox.abandoned and budget.queued == 0 and isinstance(SlowReader("x"), BrokenPipeError)
    with pytest.raises(SlowReader):  # the rest of the answer goes nowhere
        outbox.sendall(b"more")
    budget.leave("10.0.0.1")
    assert budget.waiting == {"10.0.0.1": 1}  # another client was never counted against this one


def test_a_waiting_thread_gives_up_at_the_deadline(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    now = [0.0]

    def clock() -> float:
        now[0] += 100.0  # every look at the clock: long past any deadline
        return now[0]

    budget = SendBudget(threads=8)
    outbox = Outbox(ours, "10.0.0.2", budget, timeout_s=30, min_rate=16 * 1024, clock=clock)
    with pytest.raises(SlowReader, match="slower than 16 KB/s"):
        outbox.sendall(b"x" * (OUTBOX_MAX + 100_000))
    assert budget.waiting == {} and budget.queued == 0  # its place among the waiters is given back


def test_a_waiting_thread_goes_on_once_its_client_reads(pair: tuple[socket.socket, socket.socket]) -> None:
    """A client that reads (a large answer to a slow browser) is only waited for, never cut off."""
    import threading

    ours, theirs = pair
    outbox = Outbox(ours, "10.0.0.3", SendBudget(threads=8), timeout_s=30, min_rate=16 * 1024)
    body = os.urandom(OUTBOX_MAX + 300_000)
    got = bytearray()

    def client() -> None:
        theirs.settimeout(10)
        while len(got) < len(body):
            got.extend(theirs.recv(1 << 16))

    reader = threading.Thread(target=client)
    reader.start()
    outbox.sendall(body)  # waits until less than OUTBOX_MAX is left in memory
    assert outbox.buffered <= OUTBOX_MAX
    while not outbox.pump():
        pass
    reader.join(10)
    assert bytes(got) == body


def test_the_budget_counts_a_workers_memory_and_clients_by_address() -> None:
    budget = SendBudget(threads=8, total_max=1000)
    assert not budget.over(10)
    budget.add(2000)
    assert budget.over(10) and not budget.over(0)  # over the worker's total: whoever holds bytes waits
    assert budget.over(OUTBOX_MAX + 1)
    assert SendBudget(threads=1).waiters_max == 1
    assert client_address(("192.0.2.7", 51234)) == "192.0.2.7"
    assert client_address("") == ""  # a Unix socket's client


def test_abort_ends_a_connection_the_client_left(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, theirs = pair
    theirs.close()
    abort(ours)  # no error for a connection already gone
