"""Whether ``potato start`` can listen where it was told, asked before anything starts: a taken port
printed "Serving on ..." and then gunicorn's retries for five seconds."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

LISTEN = "0A"
"""The LISTEN state in /proc/net/tcp."""


def listening_inodes(port: int, proc: Path = Path("/proc")) -> set[str]:
    """Socket inodes listening on ``port`` (Linux's /proc/net/tcp and tcp6; empty elsewhere)."""
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(fields[9])
    return found


def port_holder(port: int, proc: Path = Path("/proc")) -> str | None:
    """``pid 1234 (python3 -m http.server 8000)`` for the process listening on ``port``, when this
    user may see it."""
    inodes = {f"socket:[{inode}]" for inode in listening_inodes(port, proc)}
    if not inodes:
        return None
    for pid_dir in proc.glob("[0-9]*"):
        try:
            fds = list((pid_dir / "fd").iterdir())
        except OSError:
            continue
        links = set()
        for fd in fds:
            try:
                links.add(os.readlink(fd))
            except OSError:  # closed meanwhile (the listing's own descriptor among them)
                continue
        if links & inodes:
            try:
                cmdline = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except OSError:
                cmdline = "?"
            return f"pid {pid_dir.name} ({cmdline[:80]})"
    return None


def port_problem(host: str, port: int) -> str | None:
    """None when ``host:port`` can be listened on now, else what is wrong and what to do."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn does: TIME_WAIT is no obstacle
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                holder = port_holder(port)
                by = f" by {holder}" if holder else " by another program (one of another user, or not visible here)"
                return f"Port {port} is in use{by}. Stop it, or start on another port with -p, e.g. -p {port + 1}."
            if exc.errno == errno.EACCES:
                return f"Port {port} needs administrator rights (ports below 1024); start with -p 8000."
            if exc.errno == errno.EADDRNOTAVAIL:
                return f"{host} is not an address of this machine; use --host 127.0.0.1, or 0.0.0.0 for all."
            return f"Cannot listen on {host}:{port}: {exc.strerror or exc}."
        except socket.gaierror as exc:
            return f"Cannot listen on {host}:{port}: {exc}. Check --host."
    return None
