"""Whether ``potato start`` can listen where it was told, asked before anything starts: a taken port
printed "Serving on ..." and then gunicorn's retries for five seconds."""

from __future__ import annotations

import errno
import os
import shlex
import socket
from pathlib import Path
from typing import Callable

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
                argv = (pid_dir / "cmdline").read_bytes().decode("utf-8", "replace").rstrip("\0").split("\0")
            except OSError:
                argv = []
            return f"pid {pid_dir.name} ({whole_command(argv) if any(argv) else '?'})"
    return None


MAX_COMMAND = 2000
"""A holder's command line is shown whole up to this many characters (a pathological one is cut, saying so)."""


def whole_command(argv: list[str]) -> str:
    """A process's command line as one could type it again (pure)."""
    text = shlex.join(argv)
    return text if len(text) <= MAX_COMMAND else text[:MAX_COMMAND] + " ... (cut)"


def can_listen(host: str, port: int) -> bool:
    """Whether ``host:port`` can be bound now, as gunicorn binds it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port_from(host: str, first: int, tries: int = 100) -> int | None:
    """The first port from ``first`` on that can be listened on now (checked by binding it), if any."""
    for port in range(first, min(first + tries, 65536)):
        if can_listen(host, port):
            return port
    return None


def _other_port(host: str, first: int, command: Callable[[int], str] | None) -> str:
    """The advice to start elsewhere: a port that is free now, with the whole command when known."""
    free = free_port_from(host, first)
    if free is None:
        return "start on another port with -p."
    if command is None:
        return f"start on a free port with -p, e.g. -p {free} (free now)."
    return f"start on port {free}, which is free now:\n  {command(free)}"


def port_problem(host: str, port: int, command: Callable[[int], str] | None = None) -> str | None:
    """None when ``host:port`` can be listened on now, else what is wrong and what to do. ``command``
    gives the whole command line to start on another port (the user's own, with its port changed)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn does: TIME_WAIT is no obstacle
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                holder = port_holder(port)
                by = f" by {holder}" if holder else " by another program (one of another user, or not visible here)"
                return f"Port {port} is in use{by}. Stop it, or {_other_port(host, port + 1, command)}"
            if exc.errno == errno.EACCES:
                return (f"Port {port} needs administrator rights (ports below 1024); "
                        f"{_other_port(host, max(port, 8000), command)}")
            if exc.errno == errno.EADDRNOTAVAIL:
                return f"{host} is not an address of this machine; use --host 127.0.0.1, or 0.0.0.0 for all."
            return f"Cannot listen on {host}:{port}: {exc.strerror or exc}."
        except socket.gaierror as exc:
            return f"Cannot listen on {host}:{port}: {exc}. Check --host."
    return None
