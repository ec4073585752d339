"""Where agents reach this server: the address ``potato training register`` puts in its commands
and the agent backend's check names.

The commands are copied onto another machine and run there, so the address must be one that machine
reaches. Pure except :func:`record_address`/:func:`recorded_address`, which keep the address a
running server last started on (its ``--host``/``-p`` may differ from the config's) in the database.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from potato import defaults
from potato.db import Database

ADDRESS_KEY = "server:address"
"""meta key: ``<public URL or empty>\\t<host it binds>\\t<port>``, written by every ``potato start``."""
LOOPBACK = ("127.0.0.1", "localhost", "::1")
ALL_ADDRESSES = ("0.0.0.0", "", "::")


@dataclass(frozen=True)
class Address:
    """Where agents reach the server, and a note when that may not work from another machine."""

    url: str
    note: str | None = None


def server_address(flag: str | None, public_url: str | None, recorded: tuple[str, str, int] | None,
                   config_host: str | None, config_port: int | None, fqdn: str) -> Address:
    """The URL for the agent command, first of: the ``--server-url`` flag, the public URL the server
    last started with (its ``--public-url``, else the config's then), ``server.public_url``, the host
    and port it last started on, the config's host and port.

    A server bound to all addresses is reached under this machine's name (``fqdn``); one bound to
    loopback only cannot be reached from elsewhere, which the note says with the fix."""
    if flag:
        return Address(flag.rstrip("/"))
    if recorded and recorded[0]:
        return Address(recorded[0].rstrip("/"))
    if public_url:
        return Address(public_url.rstrip("/"))
    if recorded:
        host, port, source = recorded[1], recorded[2], "the server's last start"
    else:
        host, port = config_host or defaults.HOST, config_port or defaults.PORT
        source = "the config (the server has not been started yet)"
    if host in ALL_ADDRESSES:
        return Address(f"http://{fqdn}:{port}")
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}"
    if host in LOOPBACK:
        return Address(url, f"note: by {source}, the server listens on {host} only, which no other machine "
                            "reaches; start it with --host 0.0.0.0, or set server.public_url in the config (or "
                            "--server-url here) to the address the training machine reaches it under")
    return Address(url)


def record_address(db: Database, public_url: str | None, host: str, port: int) -> None:
    """Keep where this server serves, for a later ``register`` (no secret in it)."""
    value = f"{public_url or ''}\t{host}\t{port}"
    with db.transaction() as conn:  # no group-commit thread: ``potato start`` forks its workers after this
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (ADDRESS_KEY, value))


def recorded_address(db: Database) -> tuple[str, str, int] | None:
    row = db.conn.execute("SELECT value FROM meta WHERE key = ?", (ADDRESS_KEY,)).fetchone()
    if row is None:
        return None
    public_url, host, port = (str(row[0]).split("\t") + ["", "", ""])[:3]
    try:
        return public_url, host, int(port)
    except ValueError:
        return None


def this_host() -> str:
    """This machine's name as other machines would look it up: its fully qualified name, or its
    host name where the resolver knows it only as localhost (other machines never do)."""
    fqdn = socket.getfqdn()
    if fqdn.split(".", 1)[0] in ("localhost", "") or fqdn.startswith("localhost"):
        return socket.gethostname() or fqdn
    return fqdn
