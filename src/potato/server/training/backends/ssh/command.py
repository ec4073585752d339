"""ssh command lines and what their failures mean: pure, no processes.

The system OpenSSH client does the work, so ``~/.ssh/config`` aliases, ssh-agent, ProxyJump and
known_hosts all apply. Every remote command is one string of :func:`shlex.quote`-d words, so a
hostile host name or path (``a'; echo foo``) stays one word on the remote side; ``--`` before the
host keeps a host starting with ``-`` from being read as an option.

Every remote command is :func:`framed`: it first prints a start line with a nonce of its own and
the remote shell's pid on stdout and stderr, so what the login shell printed before it (an ``echo``
in ``~/.bashrc``, which Debian's bash reads for ssh commands too) is told apart and ignored
(:func:`unframe`), and a command that runs out of time can be stopped on the host by that pid (the
shell sshd starts leads a session and process group of its own). The ssh client itself gets an
allow-list environment (:func:`client_env`): the server's secrets never reach it, nor the master
it forks.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from potato.config.schema import RemoteHost
from potato.errors import PotatoError

SERVER_ALIVE = ("-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4")
"""A dead connection is noticed within a minute, not after TCP's hours."""
RUN_GAP_S = 10
"""With ``keep_connection_s: 0``, how long the control master waits for a run's next command (the
run closes it at its end; a check leaves it for this long)."""


CLIENT_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "SSH_AUTH_SOCK", "SSH_AGENT_PID",
              "KRB5CCNAME", "KRB5_CONFIG")
"""What the ssh client may see of the server's environment (plus ``LC_*``): enough to find its config
and keys, ssh-agent and a Kerberos ticket (GSSAPI). Never the server's tokens (HF_TOKEN, cloud keys,
POTATO_*): a ProxyCommand that needs credentials reads them from its own files under HOME."""


def client_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The ssh client's environment: the names of :data:`CLIENT_ENV` and ``LC_*`` from ``environ``."""
    return {k: v for k, v in environ.items() if k in CLIENT_ENV or k.startswith("LC_")}


def new_nonce() -> str:
    """A fresh nonce for one remote command's start line."""
    return secrets.token_hex(8)


def start_token(nonce: str) -> bytes:
    """What a framed command's start line begins with (the pid and a newline follow)."""
    return f"potato-{nonce}-start ".encode()


def framed(command: str, nonce: str) -> str:
    """``command`` after a start line on stdout and on stderr: ``potato-<nonce>-start <pid>``, the pid
    of the remote shell (sshd made it a session and process group leader). The line is built by
    printf from parts, so a login shell that echoes the command line (``set -v``) does not print it."""
    line = f"printf 'potato-%s-start %s\\n' {nonce} \"$$\""
    return f"{line}; {line} >&2; {command}"


@dataclass(frozen=True)
class Frame:
    """One stream of a framed command, split at its start line."""

    found: bool
    """The start line was there: the command ran (else everything is the login shell's)."""
    preamble: bytes
    """What came before the start line: the login shell's, ignored."""
    payload: bytes
    """What the command printed."""
    pid: int | None = None
    """The remote shell's pid (its process group) from the start line."""


_PID = re.compile(rb"(\d+)\r?\n")


def unframe(data: bytes, nonce: str) -> Frame:
    """Split ``data`` at the start line of the command framed with ``nonce``."""
    token = start_token(nonce)
    at = data.find(token)
    if at < 0:
        return Frame(False, data, b"")
    match = _PID.match(data, at + len(token))
    if match is None:
        return Frame(False, data, b"")
    return Frame(True, data[:at], data[match.end():], int(match.group(1)))


def preamble_text(*preambles: bytes) -> str:
    """The login shell's text for the run log: its first 80 characters on one line."""
    text = " ".join(" ".join(p.decode("utf-8", "replace").split()) for p in preambles if p.strip())
    return text[:80] + ("..." if len(text) > 80 else "")


def preamble_notice(host: str, text: str) -> str:
    """The run log's one line about what the login shell prints (named once per run)."""
    return (f"The login shell on {host} printed text before the command's output (from ~/.bashrc or similar); "
            f"it is ignored: '{text}'")


def stop_command(pid: int) -> str:
    """Ends what a timed-out command started on the host: its process group, TERM then KILL."""
    return f"kill -TERM -- -{pid} 2>/dev/null; sleep 2; kill -KILL -- -{pid} 2>/dev/null; true"


@dataclass(frozen=True)
class SshStep:
    """A remote step as its messages name it, with its deadline and the fix when it runs out."""

    what: str
    """What the step does, as a phrase: "copying Potato's code"."""
    timeout_s: float
    fix: str = ("log in to the host as the user that runs this server and try the step by hand; a slow login "
                "(a ~/.bashrc that waits, a home folder on a hung network mount) delays every step")


def timed_out(host: str, step: SshStep, stopped: bool) -> SshFailed:
    """A step that ran past its deadline: which one, the fix, and whether what it started is gone."""
    after = ("what it started there was stopped" if stopped else
             "it may still run there (the host never said it had started)")
    return SshFailed(f"{host}: {step.what} took longer than {step.timeout_s:.0f} s; {step.fix}. The ssh command "
                     f"was ended and {after}.")


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


CONTROL_HASH_CHARS = 10
"""Hex characters of :func:`control_name`'s hash before ssh's own ``%C`` (40): with the control folder
(``/tmp/potato-ssh-<uid>-<10>``) and the 17 characters ssh adds while it binds the socket, the path
stays under the 104 bytes a Unix socket path may have on macOS (108 on Linux)."""


def auth_settings(backend: RemoteHost) -> list[str]:
    """What decides how ssh logs in, beyond what ``%C`` covers (the host, port and user after
    ~/.ssh/config): the backend's own host, port, user and identity file, and which file that is now
    (replaced in place, it is another key)."""
    parts = [backend.host, str(backend.port or ""), backend.user or "", backend.identity_file or ""]
    if backend.identity_file:
        key = Path(backend.identity_file).expanduser()
        try:
            info = key.stat()
        except OSError as exc:
            parts.append(f"unreadable {exc.errno}")
        else:
            parts.append(f"{key.resolve()} {info.st_dev} {info.st_ino} {info.st_size} {info.st_mtime_ns}")
    return parts


def control_name(backend: RemoteHost) -> str:
    """The control socket's name: a hash of :func:`auth_settings`, then ssh's ``%C``. A check or run
    after ``identity_file``, ``user`` or ``port`` changed never joins the connection the old settings
    logged in with (which ``%C`` alone would share: it knows nothing of the key)."""
    digest = hashlib.sha256("\0".join(auth_settings(backend)).encode()).hexdigest()[:CONTROL_HASH_CHARS]
    return f"{digest}-%C"


@dataclass(frozen=True)
class SshTarget:
    """How to reach one ssh backend's host (or a slurm backend's login node): its user, port and identity file plus a
    control master, one per login (:func:`control_name`: host, port, user and key): backends and
    checks that log in the same way share it."""

    backend: RemoteHost
    control_dir: Path
    control_path: str = field(init=False, repr=False, compare=False)
    """Fixed when the target is made, so a run's last command (``-O stop``) reaches the master its
    first one opened."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "control_path", f"{self.control_dir}/{control_name(self.backend)}")

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
                "-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_path}", "-o", f"ControlPersist={persist}"]
        if b.user:
            argv += ["-l", b.user]
        if b.port:
            argv += ["-p", str(b.port)]
        if b.identity_file:
            argv += ["-i", str(Path(b.identity_file).expanduser())]
        return argv

    def by_hand(self, *options: str) -> str:
        """The ssh command line a person types to log in as the server does: ``ssh -p PORT -i KEY
        USER@HOST`` (no ``-p`` for port 22 or none, no ``USER@`` without a user)."""
        b = self.backend
        words = ["ssh", *options]
        if b.port and b.port != 22:
            words += ["-p", str(b.port)]
        if b.identity_file:
            words += ["-i", str(Path(b.identity_file).expanduser())]
        words.append(f"{b.user}@{b.host}" if b.user else b.host)
        return shell(words)

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
        """Ends the master now, and with it every command and session still on it (255, no message)."""
        return ["ssh", *self.options(), "-O", "exit", "--", self.host]

    def stop_master(self) -> list[str]:
        """Retires the master: its socket goes at once (the next command starts a new connection), and
        it exits when the last command or session on it ends. The master is shared by every backend
        and check that logs in the same way (:func:`control_name`), so ending a run must not cut off
        another's command the way ``-O exit`` does."""
        return ["ssh", *self.options(), "-O", "stop", "--", self.host]

    def cancel_forward(self, forward: str) -> list[str]:
        """A reverse forward a session asked for stays on the connection after that session ends,
        until cancelled."""
        return ["ssh", *self.options(), "-O", "cancel", "-R", forward, "--", self.host]


class SshFailed(PotatoError):
    """ssh could not run a command on the host; the message is the tutorial's, plus the fix."""


def connect_error(host: str, stderr: str, step: SshStep | None = None, target: SshTarget | None = None) -> SshFailed:
    """Why ssh could not connect or log in, from its own stderr (rc 255), with the fix in the backend's own terms
    when the ``target`` is known (the exact ``ssh`` command to try, the setting to look at). Without a
    message, a multiplexed command whose connection (the control master) ended under it: said with
    the step it was in."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " ".join(lines)
    if not lines and step is not None:
        return SshFailed(f"ssh to {host} failed: the connection ended while {step.what}, without a message "
                         "(ssh exited 255: its shared connection closed or the host dropped it); start it again, "
                         "and if it recurs check the host's sshd log")
    login = target.by_hand() if target is not None else shell(["ssh", host])
    setting = f" of backend '{target.backend.name}' in the config" if target is not None else ""
    if "Permission denied" in text:
        key = re.search(r"Identity file (.+?) not accessible: ([^.]+)", text)
        bad = re.search(r'Load key "(.+?)": (.+?)(?= \S+@\S+: Permission denied|$)', text)
        unreadable = (f" The identity_file {key.group(1)} cannot be read ({key.group(2)}): set `identity_file`"
                      f"{setting} to the private key's path." if key else
                      f" The identity_file {bad.group(1)} is not a private key ssh can load ({bad.group(2)}): set "
                      f"`identity_file`{setting} to the private key (not its .pub)." if bad else "")
        batch = target.by_hand("-o", "BatchMode=yes") if target is not None else shell(
            ["ssh", "-o", "BatchMode=yes", host])
        return SshFailed(
            f"ssh to {host} failed: Permission denied.{unreadable} Potato runs ssh with BatchMode=yes, so it needs "
            "a key that logs in without a prompt: check `user` and `identity_file`, that the key is in the host's "
            f"authorized_keys, or that ssh-agent holds it (try `{batch} true` as the user that runs the server).")
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        port = target.backend.port if target is not None else None
        known = f"[{host}]:{port}" if port and port != 22 else host
        return SshFailed(f"ssh to {host} failed: the host's key is not the one known_hosts has for it (a reinstalled "
                         "host, or someone in between). Ask the host's admin for its key fingerprint; if it is the "
                         f"host's new key, remove the old one (ssh-keygen -R {shell([known])}) and connect once by "
                         f"hand to accept the new one: {login}")
    if "Host key verification failed" in text:
        return SshFailed(f"ssh to {host} failed: Host key verification failed. Add the host's key to "
                         f"known_hosts of the user that runs the server (connect once by hand: {login}).")
    unknown = re.search(r"Could not resolve hostname (\S+?):", text)
    if unknown and target is not None:
        return SshFailed(f"ssh to {host} failed: Could not resolve host '{unknown.group(1)}': check `host`{setting} "
                         f"(a name this server can resolve, or a Host alias in ~/.ssh/config of the user that runs "
                         f"the server).")
    refused = re.search(r"connect to host \S+ port (\d+): Connection refused", text)
    if refused and target is not None:
        return SshFailed(f"ssh to {host} failed: nothing accepts connections on port {refused.group(1)} there "
                         f"(Connection refused): check `port`{setting} (sshd's port on that host; 22 when unset) "
                         "and that sshd runs there.")
    last = lines[-1] if lines else "no message"
    return SshFailed(f"ssh to {host} failed: {last}")


def python_missing(python: str, host: str) -> SshFailed:
    """The host has no such interpreter, or one older than Python 3.8."""
    return SshFailed(f"{python} was not found on {host}. Set `python` in the backend to an interpreter the "
                     f"host has (Python 3.8 or newer), e.g. python: /usr/bin/python3.")
