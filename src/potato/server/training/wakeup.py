"""A doorbell between gunicorn's worker processes: queueing a run wakes the dispatcher at once.

The dispatcher lives in whichever worker holds its lock, and the request that queues a run may
land in any worker. Without a signal the run waits for the dispatcher's next look at the queue
(``IDLE_POLL_S``), which is most of a warm run's start. The bell is a FIFO in the training folder:
the holder keeps it open and waits on it; any process writes one byte after queueing. A missed ring
costs nothing but that wait: the dispatcher still looks at the queue on its own.
"""

from __future__ import annotations

import os
import select
import stat
import time
from pathlib import Path

WAKE_FILE = "dispatcher.wake"


class Wakeup:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def listen(self) -> bool:
        """Open the FIFO for reading (made 0600 when missing; anything else at the path is replaced).
        False when the file system cannot hold a FIFO: the dispatcher then only polls."""
        try:
            info = os.lstat(self.path)
            if not stat.S_ISFIFO(info.st_mode) or info.st_uid != os.getuid():
                os.unlink(self.path)
                raise FileNotFoundError
        except FileNotFoundError:
            try:
                os.mkfifo(self.path, 0o600)
            except OSError:
                return False
        try:  # read and write: the FIFO never reads as closed while no one rings, and open() does not block
            self._fd = os.open(self.path, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return False
        return True

    def wait(self, timeout: float) -> bool:
        """Sleep until rung or ``timeout`` passed; True when rung. Every pending ring is taken."""
        if self._fd is None:
            time.sleep(timeout)
            return False
        ready, _, _ = select.select([self._fd], [], [], timeout)
        if not ready:
            return False
        try:
            while os.read(self._fd, 4096):
                pass
        except BlockingIOError:
            pass
        return True

    def ring(self) -> None:
        """Wake the listener, if there is one; never blocks, never fails the caller."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:  # no FIFO yet, or no listener (ENXIO): the dispatcher's own look finds the run
            return
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, b"!")
        except OSError:  # full (EAGAIN): rung already; the listener gone (EPIPE): nobody to wake
            pass
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
