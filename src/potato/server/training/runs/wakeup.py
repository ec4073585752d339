"""A doorbell between gunicorn's worker processes: queueing a run wakes the dispatcher at once.

The dispatcher lives in whichever worker holds its lock, and the request that queues a run may
land in any worker. Without a signal the run waits for the dispatcher's next look at the queue
(``IDLE_POLL_S``), which is most of a warm run's start. The bell is a FIFO: the holder keeps it open
and waits on it; any process writes one byte after queueing. A missed ring costs nothing but that
wait: the dispatcher still looks at the queue on its own.

The FIFO lives outside the project, in a folder only this user can enter (:func:`bell_path`): a
named pipe in the project's folder made every copy of the project fail (``shutil.copytree``, ``cp``,
backups), and a project folder is something people copy. Every process of one server finds the same
FIFO: its name is a hash of the server's training folder, so two servers on one machine have two.
"""

from __future__ import annotations

import hashlib
import os
import select
import stat
import tempfile
import time
from pathlib import Path
from typing import Mapping

RUNTIME_DIRS = ("RUNTIME_DIRECTORY", "XDG_RUNTIME_DIR")
"""Where a service manager puts a service's sockets and pipes: systemd's ``RuntimeDirectory=`` (the
server's unit sets it), a login session's runtime folder. Else the temporary folder."""
TEMP_DIRS = ("/tmp", "/var/tmp", "/usr/tmp")


def bell_base(environ: Mapping[str, str], tempdir: str, cwd: str) -> str | None:
    """The folder the bells of this user's servers go under (pure: the environment, the temporary
    folder and the working folder given). None when there is none but the working folder, which is
    what :func:`tempfile.gettempdir` falls back to where no temporary folder is writable (under the
    server's systemd unit without ``RuntimeDirectory=``: the project's own folder)."""
    for name in RUNTIME_DIRS:
        first = environ.get(name, "").split(":")[0]  # systemd lists several RuntimeDirectory= with ':'
        if first.startswith("/"):
            return first
    chosen = {environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")} | set(TEMP_DIRS)
    if cwd and tempdir not in chosen and os.path.abspath(tempdir) == os.path.abspath(cwd):
        return None
    return tempdir


def bell_path(training_dir: Path, base: str | None, run_id: str = "") -> Path | None:
    """The FIFO of the server whose training folder is ``training_dir``: ``<base>/potato-bell-<uid>/<hash>.wake``;
    with ``run_id``, that run's own (``<hash>-<run_id>.wake``), rung whenever the run changes state."""
    if base is None:
        return None
    digest = hashlib.sha256(str(training_dir.resolve()).encode("utf-8")).hexdigest()[:16]
    return Path(base) / f"potato-bell-{os.getuid()}" / (f"{digest}-{run_id}.wake" if run_id else f"{digest}.wake")


def private_folder(path: Path) -> bool:
    """Make ``path`` a folder only this user can enter (0700), or check that it is one: not a link,
    this user's own, tightened if it is wider. False when it cannot be (another user's: the bell is
    then not used, and the dispatcher only looks at the queue on its own)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return False
        if info.st_mode & 0o077:
            os.chmod(path, 0o700)
    except OSError:
        return False
    return True


class Wakeup:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        """The FIFO; None where there is no folder to put it in (the dispatcher then only polls)."""
        self._fd: int | None = None

    @classmethod
    def of(cls, training_dir: Path, run_id: str = "") -> Wakeup:
        """The bell of the server whose training folder is ``training_dir``, the same in every process
        of it (they share the environment: the unit's or the shell's that started it); with
        ``run_id``, the bell of that run: whoever follows a run in one process hears its moves made in
        any other (an agent's report lands in any of gunicorn's workers)."""
        try:
            cwd = os.getcwd()
        except OSError:  # the working folder was removed
            cwd = ""
        return cls(bell_path(training_dir, bell_base(os.environ, tempfile.gettempdir(), cwd), run_id))

    def listen(self) -> bool:
        """Open the FIFO for reading (made 0600 when missing; anything else at the path is replaced).
        False when the file system cannot hold a FIFO: the dispatcher then only polls."""
        if self.path is None or not private_folder(self.path.parent):
            return False
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

    def heal(self) -> None:
        """Listen again if the FIFO this process waits on is no longer at its path: a clean-up of the
        temporary folder (systemd-tmpfiles ages ``/tmp``) may remove it, and rings would go nowhere."""
        if self._fd is None or self.path is None:
            return
        try:
            there, mine = os.stat(self.path), os.fstat(self._fd)
            if (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
                return
        except OSError:
            pass
        self.close()
        self.listen()

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
        if self.path is None:
            return
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

    def remove(self) -> None:
        """Stop listening and take the FIFO away (a run's bell, once nobody follows the run)."""
        self.close()
        if self.path is None:
            return
        try:
            if stat.S_ISFIFO(os.lstat(self.path).st_mode):
                os.unlink(self.path)
        except OSError:
            pass
