"""Folders 0700 and files 0600 for everything training keeps, on the server and on a training host,
and the one way a file is replaced whole.

A run's folder holds every item and every label with its annotator's name (the bundle, the
predictions, the logs). Made with the process's umask and under an output folder made beforehand
(a volume, a ``mkdir``), they were 0755 and 0644: readable by every account on the machine. Every
folder and file under the server's ``training/`` and the agent's work folder is made through these
functions instead, with explicit modes, so neither the umask nor the parent's mode decides who can
read them. Remote-safe: standard library only, Python 3.8.
"""

from __future__ import annotations

import os
import stat
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Optional, Union

DIR_MODE = 0o700
FILE_MODE = 0o600

_FLAGS = {"r": os.O_RDONLY, "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
          "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL}


def private_dir(path: Path) -> Path:
    """``path`` as a folder only its owner can open: made 0700 with any missing parents (which are
    made 0700 too), or narrowed to 0700 when it was there with wider modes. Folders above the first
    one that exists are left as they are (the output folder is the admin's; validate warns about it)."""
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            pass
        os.chmod(folder, DIR_MODE)  # exactly: a umask such as 0277 would leave the owner out too
    if not missing:
        _narrow(path, DIR_MODE)
    return path


def open_private(path: Path, mode: str, encoding: str | None = None) -> IO[Any]:
    """``open(path, mode)`` for a file only its owner can read: a new file is made 0600, an existing
    one (an older version's) narrowed to 0600. ``mode`` as for :func:`open` ("a", "ab", "wb", "a+"...)."""
    flags = _FLAGS[mode[0]]
    if "+" in mode:
        flags = (flags & ~(os.O_WRONLY | os.O_RDONLY)) | os.O_RDWR
    fd = os.open(str(path), flags | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        current = stat.S_IMODE(os.fstat(fd).st_mode)
        if current & ~FILE_MODE:
            os.fchmod(fd, current & FILE_MODE)
        return os.fdopen(fd, mode, encoding=None if "b" in mode else (encoding or "utf-8"))
    except BaseException:
        os.close(fd)
        raise


def make_private(tree: Path) -> None:
    """Narrow a folder that came from elsewhere (a trainer's model files, which may copy a cache's
    0644 files) to folders 0700 and files 0600. Links are left alone: their modes are not theirs."""
    for root, _dirs, files in os.walk(tree):  # links to folders are listed, not entered
        _narrow(Path(root), DIR_MODE)
        for name in files:
            _narrow(Path(root) / name, FILE_MODE)


def _narrow(path: Path, mode: int) -> None:
    """Take from ``path`` the bits ``mode`` lacks (group's and others'), if it is ours and not a link."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid():
        return
    current = stat.S_IMODE(info.st_mode)
    if current & ~mode:
        os.chmod(path, current & mode)


@contextmanager
def atomic_file(path: Path, binary: bool = False, newline: Optional[str] = None) -> Iterator[IO[Any]]:
    """A file that replaces ``path`` whole when the block ends without an error: a reader (another
    process, the next start after a crash) finds the old file or the whole new one, never a part or
    an empty one. Written beside it under a name of this process and thread, made 0600 whatever the
    umask (a temporary file a crash left keeps its old mode through O_TRUNC otherwise), flushed to
    disk before the rename; an error leaves ``path`` as it was and takes the temporary file away."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8",
                       newline=None if binary else newline) as fh:
            fd = -1  # the file object closes it now
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(str(tmp), str(path))
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(str(tmp))
        except OSError:
            pass
        raise


def write_atomic(path: Path, content: Union[str, bytes], newline: Optional[str] = None) -> None:
    """``content`` as the whole of ``path`` (see :func:`atomic_file`)."""
    with atomic_file(path, binary=isinstance(content, bytes), newline=newline) as fh:
        fh.write(content)
