"""ssh command lines and what their failures mean: pure, no processes (R13, E1, E2).

The system OpenSSH client does the work, so ``~/.ssh/config`` aliases, ssh-agent, ProxyJump and
known_hosts all apply. Every remote command is one string of :func:`shlex.quote`-d words, so a
hostile host name or path (``a'; echo foo``) stays one word on the remote side; ``--`` before the
host keeps a host starting with ``-`` from being read as an option.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from potato.config.schema import SlurmBackend, SshBackend

SERVER_ALIVE = ("-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4")
"""A dead connection is noticed within a minute, not after TCP's hours."""
RUN_GAP_S = 10
"""With ``keep_connection_s: 0``, how long the control master waits for a run's next command (the
run closes it at its end; a check leaves it for this long)."""


def remote_path(path: str) -> str:
    """A shell word for ``path`` on the host: ``~`` still means the remote home, the rest is quoted."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def join(*parts: str) -> str:
    """Join already-quoted shell words with ``/`` (``remote_path(dir)`` + ``/code``)."""
    return "/".join(p.rstrip("/") if i < len(parts) - 1 else p for i, p in enumerate(parts))


def shell(words: Sequence[str]) -> str:
    """One remote command line from plain words, each quoted."""
    return " ".join(shlex.quote(w) for w in words)


@dataclass(frozen=True)
class SshTarget:
    """How to reach one ssh backend's host (or a slurm backend's login node): the flags of R13 plus one
    control master per backend."""

    backend: SshBackend | SlurmBackend
    control_dir: Path

    @property
    def host(self) -> str:
        return self.backend.host

    def options(self) -> list[str]:
        """One connection per backend carries everything, the agent's session too: the first command
        opens it (``ControlMaster=auto``), the others join it, and it closes ``keep_connection_s``
        after its last command, so a run or check soon after starts without a new login."""
        b = self.backend
        persist = b.keep_connection_s or RUN_GAP_S
        argv = ["-o", "BatchMode=yes", *SERVER_ALIVE,
                "-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_dir}/%C", "-o", f"ControlPersist={persist}"]
        if b.user:
            argv += ["-l", b.user]
        if b.port:
            argv += ["-p", str(b.port)]
        if b.identity_file:
            argv += ["-i", str(Path(b.identity_file).expanduser())]
        return argv

    def argv(self, command: str, *extra: str) -> list[str]:
        """``ssh <options> <extra> -- <host> <command>``; ``command`` is already a shell line."""
        return ["ssh", *self.options(), *extra, "--", self.host, command]

    def env_prefix(self) -> str:
        """``env K=V ... `` for the backend's ``env`` (PATH among them), before every remote program
        Potato starts, so the checks see what the run will see."""
        if not self.backend.env:
            return ""
        return "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in self.backend.env.items()) + " "

    def exit_master(self) -> list[str]:
        return ["ssh", *self.options(), "-O", "exit", "--", self.host]

    def cancel_forward(self, forward: str) -> list[str]:
        """A reverse forward a session asked for stays on the connection after that session ends,
        until cancelled."""
        return ["ssh", *self.options(), "-O", "cancel", "-R", forward, "--", self.host]


class SshFailed(Exception):
    """ssh could not run a command on the host; the message is the tutorial's, plus the fix."""


def connect_error(host: str, stderr: str) -> SshFailed:
    """E1 and its relatives, from ssh's own stderr (rc 255)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " ".join(lines)
    if "Permission denied" in text:
        return SshFailed(
            f"ssh to {host} failed: Permission denied. Potato runs ssh with BatchMode=yes, so it needs a key "
            "that logs in without a prompt: check `user` and `identity_file`, that the key is in the host's "
            "authorized_keys, or that ssh-agent holds it (try `ssh -o BatchMode=yes "
            f"{host} true` as the user that runs the server).")
    if "Host key verification failed" in text:
        return SshFailed(f"ssh to {host} failed: Host key verification failed. Add the host's key to "
                         f"known_hosts of the user that runs the server (connect once by hand: ssh {host}).")
    last = lines[-1] if lines else "no message"
    return SshFailed(f"ssh to {host} failed: {last}")


def python_missing(python: str, host: str) -> SshFailed:
    """E2."""
    return SshFailed(f"{python} was not found on {host}. Set `python` in the backend to an interpreter the "
                     f"host has (Python 3.8 or newer), e.g. python: /usr/bin/python3.")
