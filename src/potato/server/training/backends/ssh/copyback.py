"""Copy-back: a run's model files from the ssh host, in one stream over the open connection.

On the host, :data:`SEND_ARTIFACTS` (run by the host's own Python) lists the files first: those over
the per-file cap stay, and when the others together pass the total cap none is sent (the run keeps
them on the host, nothing partial). Otherwise it sends each as a line ``<size> <name as JSON>`` and
its bytes through ``os.sendfile``, then ``end``; its stderr says the total and which files stayed
behind. Here :func:`receive` skips what the host's login shell printed before the command's start
line (:func:`~potato.server.training.backends.ssh.command.framed`), writes the files into ``<dest>.part``, refusing
any name that would land outside it or bytes past either cap, and renames the folder into place
only when every byte arrived: a partial copy is never passed off as complete. A stream that sends
nothing for ``COPY_STALL_S`` is given up. Measured against a raw ``ssh host cat``: bench/ssh.py.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, cast

from potato.errors import PotatoError
from potato.server.training.runs import quota
from potato.training.job.private import FILE_MODE, private_dir
from potato.server.training.backends.ssh.command import preamble_text, start_token

COPY_STALL_S = 180.0
"""A copy-back that sends nothing this long is given up."""
CHUNK = 1 << 20
PREAMBLE_MAX = 1 << 20
"""The most a login shell may print before the copy's start line; more is not a copy-back."""

SEND_ARTIFACTS = r"""
import json, os, sys
root, cap = sys.argv[1], int(sys.argv[2])
total_cap = int(sys.argv[3]) if len(sys.argv) > 3 else -1
files, total = [], 0
for folder, dirs, names in os.walk(root):
    dirs.sort()
    for name in sorted(names):
        path = os.path.join(folder, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        size = os.path.getsize(path)
        if size > cap:
            sys.stderr.write("skipped %s %d\n" % (os.path.relpath(path, root), size))
            continue
        files.append(path)
        total += size
out = sys.stdout.buffer
if 0 <= total_cap < total:
    sys.stderr.write("over-total %d %d %s\n" % (total, len(files), os.path.abspath(root)))
    sys.stderr.flush()
    out.write(b"end\n")
    out.flush()
    sys.exit(0)
sys.stderr.write("total %d\n" % total)
sys.stderr.flush()
for path in files:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        out.write(("%d %s\n" % (size, json.dumps(os.path.relpath(path, root)))).encode())
        out.flush()
        sent = 0
        try:
            while sent < size:
                n = os.sendfile(out.fileno(), f.fileno(), sent, size - sent)
                if n == 0:
                    break
                sent += n
        except OSError:
            f.seek(sent)
            while sent < size:
                chunk = f.read(min(1 << 20, size - sent))
                if not chunk:
                    break
                out.write(chunk)
                sent += len(chunk)
        if sent != size:
            sys.exit("%s changed size while it was sent" % path)
out.write(b"end\n")
out.flush()
"""
"""Runs on the host with its own Python: ``ROOT CAP [TOTAL_CAP]``. The model files under the cap as one
stream on stdout, each a line ``<size> <name as JSON>`` and its bytes (os.sendfile: no copy through
Python), then ``end``; their total and the files left behind on stderr. When they pass TOTAL_CAP
together, only ``end``, and ``over-total <bytes> <files> <absolute folder>`` on stderr."""


class CopyFailed(PotatoError):
    """The copy did not complete; the message says how (a stall: how long nothing came). Nothing was kept."""

    def __init__(self, message: str, remote_pid: int | None = None) -> None:
        super().__init__(message)
        self.remote_pid = remote_pid
        """The sender's process group on the host, from its start line, when it may still run there."""


@dataclass
class Copied:
    received: int
    left_behind: list[tuple[str, int]] = field(default_factory=list)
    """Files over the cap that stayed on the host: (name, bytes)."""
    over_total: tuple[int, int, str] | None = None
    """The files together passed the total cap, so none was sent: (bytes, files, folder on the host)."""
    preamble: str = ""
    """What the host's login shell printed before the copy's start line (skipped)."""


def over_total_message(host: str, over: tuple[int, int, str], limit_mb: int) -> str:
    """run.log's line when the model files together passed max_artifacts_total_mb (none was sent)."""
    total, count, folder = over
    return (f"The model files on {host} total {total / 1e6:.0f} MB ({count} files), over "
            f"max_artifacts_total_mb ({limit_mb} MB): none was copied; they stay on {host} in "
            f"{folder}, and the job folder is kept. Raise max_artifacts_total_mb to copy them next time, or copy "
            f"them yourself (scp -r {host}:{folder} .); the predictions are saved.")


def receive(argv: list[str], dest: Path, host: str, progress: Callable[[int, int], None],
            clock: Callable[[], float] = time.time, stall_s: float = COPY_STALL_S,
            max_file_bytes: int | None = None, max_total_bytes: int | None = None, nonce: str | None = None,
            env: Mapping[str, str] | None = None, reserve_mb: int | None = None) -> Copied:
    """Run ``argv`` (ssh to the host running :data:`SEND_ARTIFACTS`) and keep what it sends in ``dest``.
    A file announced over ``max_file_bytes``, or bytes past ``max_total_bytes``, fail the copy: the
    host was asked to keep those. With ``nonce`` (a framed command), the stream starts after its
    start line; ``env`` is the ssh client's environment. ``reserve_mb``: free disk space here that the
    copy may not take (model_training.disk_reserve_mb, kept for annotators' labels)."""
    partial = dest.with_name(dest.name + ".part")
    shutil.rmtree(partial, ignore_errors=True)
    private_dir(partial)  # the model files are the project's: 0700, and 0600 files, whatever the umask
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            bufsize=CHUNK, start_new_session=True, env=None if env is None else dict(env))
    try:
        return _receive(proc, partial, dest, host, progress, clock, stall_s, max_file_bytes, max_total_bytes, nonce,
                        reserve_mb)
    finally:
        _stop(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the copy's whole process group (ssh and any ProxyCommand it started hold the pipe too)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def _receive(proc: subprocess.Popen[bytes], partial: Path, dest: Path, host: str,
             progress: Callable[[int, int], None], clock: Callable[[], float], stall_s: float,
             max_file_bytes: int | None, max_total_bytes: int | None, nonce: str | None,
             reserve_mb: int | None = None) -> Copied:
    try:  # a 1 MiB pipe: fewer switches between ssh and this reader (Linux; 64 KiB otherwise)
        fcntl.fcntl(proc.stdout.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), CHUNK)  # type: ignore[union-attr]
    except OSError:
        pass
    notes: list[str] = []
    total, got, last = [0], [0], [clock()]
    over: list[tuple[int, int, str]] = []
    preambles = [b"", b""]  # the login shell's, on stdout and stderr
    remote_pid: list[int | None] = [None]

    def read_notes() -> None:
        if proc.stderr is None:
            return
        started = nonce is None
        for raw in proc.stderr:
            if not started:
                at = raw.find(start_token(nonce or ""))
                if at < 0:
                    preambles[1] += raw if len(preambles[1]) < PREAMBLE_MAX else b""
                else:
                    preambles[1] += raw[:at]
                    started = True
                continue
            line = raw.decode("utf-8", "replace").strip()
            if line.startswith("total "):
                total[0] = int(line.split()[1])
            elif line.startswith("over-total "):
                size, count, folder = line[len("over-total "):].split(" ", 2)
                over.append((int(size), int(count), folder))
            elif line:
                notes.append(line)

    def stall_guard() -> None:
        while proc.poll() is None:
            if clock() - last[0] > stall_s:
                _stop(proc)
                return
            time.sleep(min(1.0, stall_s / 4))

    readers = threading.Thread(target=read_notes, daemon=True)
    readers.start()
    threading.Thread(target=stall_guard, daemon=True).start()
    try:
        if nonce is not None:
            preambles[0], remote_pid[0] = _skip_to_start(proc, nonce, host)
        _write_files(proc, partial, host, got, last, total, progress, clock, max_file_bytes, max_total_bytes,
                     reserve_mb)
    except (OSError, ValueError, CopyFailed, quota.DiskReserve) as exc:  # ValueError: a name open() refuses (a NUL)
        _stop(proc)
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, quota.DiskReserve):
            raise CopyFailed(f"The copy from {host} was stopped: {exc}", remote_pid[0]) from None
        if clock() - last[0] > stall_s:
            raise CopyFailed(f"The copy from {host} sent nothing for {stall_s:.0f} s", remote_pid[0]) from None
        raise CopyFailed(f"The copy from {host} broke off ({exc})", remote_pid[0]) from None
    code = proc.wait()
    readers.join(5)
    preamble = preamble_text(*preambles)
    if code == 0 and over and not got[0]:
        shutil.rmtree(partial, ignore_errors=True)  # nothing partial: every file stays on the host
        return Copied(0, over_total=over[0], preamble=preamble)
    if code != 0 or (total[0] and got[0] != total[0]):
        shutil.rmtree(partial, ignore_errors=True)
        raise CopyFailed(f"The copy from {host} ended early (exit {code}, {got[0]} of {total[0]} bytes)")
    shutil.rmtree(dest, ignore_errors=True)
    partial.replace(dest)
    left = []
    for note in notes:
        if note.startswith("skipped "):
            name, _, size = note[len("skipped "):].rpartition(" ")  # a name may hold spaces
            left.append((name, int(size)))
    return Copied(got[0], left, preamble=preamble)


def _skip_to_start(proc: subprocess.Popen[bytes], nonce: str, host: str) -> tuple[bytes, int | None]:
    """Read past what the login shell printed, to the end of the copy's start line: (what was
    skipped, the sender's pid on the host)."""
    if proc.stdout is None:
        raise CopyFailed("no stream")
    token, seen = start_token(nonce), b""
    while True:
        line = proc.stdout.readline(4096)
        if not line:
            raise CopyFailed(f"the stream from {host} ended before the copy began ({preamble_text(seen)!r})")
        seen += line
        at = seen.rfind(token)
        if at >= 0 and seen.endswith(b"\n") and b"\n" not in seen[at:-1]:
            pid = seen[at + len(token):].strip()
            return seen[:at], int(pid) if pid.isdigit() else None
        if len(seen) > PREAMBLE_MAX:
            raise CopyFailed(f"the login shell on {host} printed more than {PREAMBLE_MAX // 1024} KiB before the "
                             f"copy began ({preamble_text(seen)!r})")


def _write_files(proc: subprocess.Popen[bytes], partial: Path, host: str, got: list[int], last: list[float],
                 total: list[int], progress: Callable[[int, int], None], clock: Callable[[], float],
                 max_file_bytes: int | None = None, max_total_bytes: int | None = None,
                 reserve_mb: int | None = None) -> None:
    if proc.stdout is None:
        raise CopyFailed("no stream")
    stream = cast(io.BufferedReader, proc.stdout)  # bufsize > 0: a buffered reader, with read1
    root = partial.resolve()
    shown = 0.0
    while True:
        head = stream.readline(4096).decode("utf-8", "replace")
        if head == "end\n":
            return
        size_text, _, name_json = head.rstrip("\n").partition(" ")
        try:
            size, name = int(size_text), json.loads(name_json)
        except ValueError:
            raise CopyFailed(f"the stream from {host} broke off or is not a copy-back ({head[:80]!r})") from None
        target = (partial / str(name)).resolve()
        if not isinstance(name, str) or size < 0 or root not in target.parents:
            raise CopyFailed(f"the copy from {host} held {name!r}, which is not a plain file inside the "
                             "artifacts folder; nothing was kept")
        if max_file_bytes is not None and size > max_file_bytes:
            raise CopyFailed(f"the copy from {host} announced {name} with {size / 1e6:.0f} MB, over "
                             f"max_artifact_mb ({max_file_bytes / 1e6:.0f} MB); nothing was kept")
        if max_total_bytes is not None and got[0] + size > max_total_bytes:
            raise CopyFailed(f"the copy from {host} sent more than max_artifacts_total_mb "
                             f"({max_total_bytes / 1e6:.0f} MB) in all; nothing was kept")
        if reserve_mb is not None:
            quota.check_reserve(partial, size, reserve_mb)
        private_dir(target.parent)
        # A new file, never through a link: a name sent twice, or a link planted in the folder, fails.
        fd = os.open(str(target), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
        with os.fdopen(fd, "wb") as out:
            remaining = size
            while remaining:
                chunk = stream.read1(min(remaining, CHUNK))
                if not chunk:
                    raise CopyFailed(f"the stream from {host} ended inside {name}")
                out.write(chunk)
                remaining -= len(chunk)
                got[0] += len(chunk)
                last[0] = clock()
                if last[0] - shown >= 1.0:
                    shown = last[0]
                    progress(got[0], total[0])
