"""The agent's side of the agent protocol: HTTP + JSON under ``/training/agent/v1/``.

Remote-safe: standard library only, Python 3.8. The same client talks to the server over HTTPS
from a machine behind NAT, over a forwarded Unix socket from an ssh host (``unix:/tmp/...``) and
over loopback for the local backend. docs/agent-protocol.md and docs/agent-protocol.yaml (the
OpenAPI file) describe the routes for anyone who writes their own agent.

Tokens travel only in the ``Authorization: Bearer`` header: never in a URL, never in a log line.
Every failure a caller must treat differently is its own exception; :class:`Unreachable` is the
one to retry (no connection, a broken one, or the server answering 5xx while it restarts).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import random
import socket
import ssl
import time
from pathlib import Path
from typing import IO, Any, Callable, Dict, Mapping, Optional, Tuple, Union
from urllib.parse import quote, urlsplit

import potato
from potato.errors import PotatoError

PREFIX = "/training/agent/v1"
LONG_POLL_MAX_S = 25.0
"""Longest a ``jobs/next`` waits on the server for a job (a long poll) before it answers 204."""
RETRY_AFTER_S = (10, 30)
"""Seconds (range, jittered) an agent is told to wait when no server thread is free to hold its poll."""
BUNDLE_TRIES = 5
"""Tries to download a bundle, each resuming where the last stopped."""
CHUNK = 1 << 20
Body = Union[None, bytes, IO[bytes]]


class ProtocolError(PotatoError):
    """The server answered, and said no. ``message`` is the server's own explanation."""

    def __init__(self, status: int, message: str, code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class TokenRejected(ProtocolError):
    """401: the token is unknown, or was replaced by registering the backend again."""


class Forbidden(ProtocolError):
    """403: the token is valid but not for this run."""


class RunEnded(ProtocolError):
    """409: the run is over on the server (cancelled, failed, or finished by another report)."""


class TooLarge(ProtocolError):
    """413: the upload is larger than the server accepts (``max_predictions_mb``)."""


class SeqGap(ProtocolError):
    """400 ``seq_gap``: the batch starts past the events the server has, ``expected_seq``; nothing of it
    was recorded. Send the events from ``expected_seq`` on first (or, where they are gone, number the
    next ones from it)."""

    def __init__(self, status: int, message: str, code: str, expected_seq: int) -> None:
        super().__init__(status, message, code)
        self.expected_seq = expected_seq


class Unreachable(PotatoError):
    """No answer worth acting on: retry later (with :func:`backoff_delay`)."""


class BundleCorrupt(PotatoError):
    """The downloaded bundle's sha256 is not the one the server announced."""


def backoff_delay(attempt: int, base: float = 1.0, cap: float = 30.0,
                  rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): "full jitter" exponential backoff, so
    agents cut off together do not all come back in the same second."""
    return max(0.05, rand() * min(cap, base * (2 ** min(attempt, 16))))


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket: how an ssh host's agent reaches the server (a reverse forward)."""

    def __init__(self, socket_path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout, blocksize=CHUNK)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


class Endpoint:
    """Where the server is: ``http(s)://host[:port][/prefix]`` or ``unix:/path/to.sock``."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        if self.url.startswith("unix:"):
            self.scheme, self.socket_path, self.base = "unix", self.url[len("unix:"):], ""
            if not self.socket_path.startswith("/"):
                raise ValueError(f"{url!r}: a Unix socket address is unix:/absolute/path")
            return
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r} is not a server address; use http://host:8000, https://host or unix:/path")
        if parts.username or parts.password or parts.query:
            raise ValueError(f"{url!r}: put no credentials or query in the server address; "
                             "the token goes in POTATO_TRAINING_TOKEN or --token-file")
        self.scheme, self.socket_path, self.base = parts.scheme, "", parts.path.rstrip("/")
        self.host = parts.hostname
        self.port = parts.port

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        if self.scheme == "unix":
            return UnixHTTPConnection(self.socket_path, timeout)
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=ssl.create_default_context(), blocksize=CHUNK)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout, blocksize=CHUNK)


def _error_from(status: int, payload: Any) -> Exception:
    body = payload if isinstance(payload, dict) else {}
    message = str(body.get("error") or f"the server answered {status}")
    code = str(body.get("code") or "")
    if status == 401:
        return TokenRejected(status, message, code)
    if status == 403:
        return Forbidden(status, message, code)
    if status == 409:
        return RunEnded(status, message, code)
    if status == 413:
        return TooLarge(status, message, code)
    expected = body.get("expected_seq")
    if status == 400 and code == "seq_gap" and isinstance(expected, int) and not isinstance(expected, bool):
        return SeqGap(status, message, code, expected)
    if status >= 500 or status in (404, 408, 429):
        # 5xx: restarting or overloaded; 404: a proxy in front of a server that is not up yet.
        return Unreachable(f"the server answered {status}: {message}")
    return ProtocolError(status, message, code)


class Client:
    """One agent's connection details; each call is one request on a fresh connection."""

    def __init__(self, server: str, token: str, timeout: float = 60.0) -> None:
        self.endpoint = Endpoint(server)
        self.token = token
        self.timeout = timeout

    def _send(self, method: str, path: str, body: Body = None, headers: Optional[Mapping[str, str]] = None,
              timeout: Optional[float] = None) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        conn = self.endpoint.connection(timeout or self.timeout)
        head = {"Authorization": f"Bearer {self.token}", "User-Agent": f"potato-agent/{potato.__version__}"}
        head.update(headers or {})
        try:
            conn.request(method, self.endpoint.base + PREFIX + path, body=body, headers=head)
            return conn, conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise Unreachable(f"{self.endpoint.url}: {exc.__class__.__name__}: {exc}") from None

    def call(self, method: str, path: str, payload: Any = None, timeout: Optional[float] = None) -> Tuple[int, Any]:
        """A JSON request; (status, decoded body) for 2xx, else the matching exception."""
        status, body, _ = self.call_with_headers(method, path, payload, timeout)
        return status, body

    def call_with_headers(self, method: str, path: str, payload: Any = None,
                          timeout: Optional[float] = None) -> Tuple[int, Any, http.client.HTTPMessage]:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json"} if data is not None else {}
        return self._answer(*self._send(method, path, data, headers, timeout))

    def _answer(self, conn: http.client.HTTPConnection,
                resp: http.client.HTTPResponse) -> Tuple[int, Any, http.client.HTTPMessage]:
        """Read and decode an answer: (status, JSON body or None, headers) for 2xx, else its exception."""
        try:
            raw = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise Unreachable(f"{self.endpoint.url}: the answer broke off ({exc})") from None
        finally:
            conn.close()
        try:
            decoded = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            decoded = None
        if 200 <= resp.status < 300:
            return resp.status, decoded, resp.headers
        raise _error_from(resp.status, decoded)

    # -- the routes ------------------------------------------------------------------------------

    def next_job(self, backend: str, agent: Mapping[str, Any], wait_s: float) -> Tuple[Optional[Dict[str, Any]], float]:
        """(job, 0) when the server has one for this backend, else (None, seconds to wait first:
        the server's ``Retry-After`` when it has no thread free to hold a long poll)."""
        status, body, headers = self.call_with_headers(
            "POST", "/jobs/next", {"backend": backend, "agent": dict(agent), "wait_s": wait_s}, timeout=wait_s + 30)
        if status == 200 and isinstance(body, dict):
            return body, 0.0
        try:
            retry = float(headers.get("Retry-After") or 0)
        except ValueError:
            retry = 0.0
        return None, min(max(retry, 0.0), 300.0)

    def leave(self, backend: str, agent_id: str, timeout: float) -> None:
        """Tell the server this agent stops (``agents/leave``): the page shows it left, and a long poll
        it had open claims no run for it."""
        self.call("POST", "/agents/leave", {"backend": backend, "agent": {"id": agent_id}}, timeout=timeout)

    def job(self, run_id: str) -> Dict[str, Any]:
        """The job for a run this agent was started for (ssh, slurm, local: the token came on stdin)."""
        _, body = self.call("GET", f"/runs/{quote(run_id)}")
        if not isinstance(body, dict):
            raise ProtocolError(200, "the server sent no job description")
        return body

    def events(self, run_id: str, seq: int, events: list, log: list) -> Dict[str, Any]:
        _, body = self.call("POST", f"/runs/{quote(run_id)}/events", {"seq": seq, "events": events, "log": log})
        return body if isinstance(body, dict) else {}

    def result(self, run_id: str, report: Mapping[str, Any]) -> Dict[str, Any]:
        _, body = self.call("POST", f"/runs/{quote(run_id)}/result", dict(report))
        return body if isinstance(body, dict) else {}

    def put_predictions(self, run_id: str, path: Path) -> Dict[str, Any]:
        """Stream ``predictions.jsonl`` (never read into memory)."""
        size = path.stat().st_size
        with path.open("rb") as fh:
            _, body, _ = self._answer(*self._send(
                "PUT", f"/runs/{quote(run_id)}/predictions", fh,
                {"Content-Type": "application/x-ndjson", "Content-Length": str(size)}))
        return body if isinstance(body, dict) else {}

    def download_bundle(self, run_id: str, dest: Path, size: int, sha256: str,
                        progress: Callable[[int, int], None] = lambda done, total: None,
                        say: Callable[[str], None] = lambda text: None,
                        sleep: Callable[[float], None] = time.sleep,
                        keep_trying_s: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        """Download the run's bundle to ``dest``, resuming a broken transfer with ``Range`` where it
        stopped: at least :data:`BUNDLE_TRIES` tries, and for ``keep_trying_s`` seconds (the agent's
        patience with an absent server: a server restarted mid-download must not fail the run). The
        sha256 is checked before ``dest`` exists."""
        part = dest.with_name(dest.name + ".part")
        until, attempt = clock() + keep_trying_s, 0
        while True:
            have = part.stat().st_size if part.exists() else 0
            if have > size:
                part.unlink()
                have = 0
            if have == size or (attempt >= BUNDLE_TRIES and clock() >= until):
                break
            attempt += 1
            try:
                self._fetch_range(run_id, part, have, size, progress)
            except Unreachable as exc:
                if attempt >= BUNDLE_TRIES and clock() >= until:
                    raise
                got = part.stat().st_size if part.exists() else 0
                say(f"the bundle download broke off at {got} of {size} bytes ({exc}); resuming")
                sleep(backoff_delay(attempt - 1, base=0.5, cap=5.0))
        got = part.stat().st_size if part.exists() else 0
        if got != size:
            raise Unreachable(f"the bundle download stopped at {got} of {size} bytes after {attempt} tries")
        digest = hashlib.sha256()
        with part.open("rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                digest.update(chunk)
        if digest.hexdigest() != sha256:
            part.unlink()
            raise BundleCorrupt(f"the bundle's sha256 is {digest.hexdigest()}, the server announced {sha256}; "
                                "it was deleted and nothing ran")
        part.replace(dest)

    def _fetch_range(self, run_id: str, part: Path, have: int, size: int,
                     progress: Callable[[int, int], None]) -> None:
        headers = {"Range": f"bytes={have}-"} if have else {}
        conn, resp = self._send("GET", f"/runs/{quote(run_id)}/bundle", None, headers)
        try:
            if resp.status == 200:
                have, mode = 0, "wb"  # the server ignored the range: start over
            elif resp.status == 206:
                mode = "ab"
            else:
                self._answer(conn, resp)  # raises the error the answer says
                raise ProtocolError(resp.status, f"the server answered {resp.status} to a bundle request")
            with part.open(mode) as out:
                while have < size:
                    try:  # read1: a connection that breaks mid-read keeps what had arrived
                        chunk = resp.read1(min(CHUNK, size - have))
                    except (OSError, http.client.HTTPException) as exc:
                        raise Unreachable(f"{exc.__class__.__name__}: {exc}") from None
                    if not chunk:
                        raise Unreachable("the connection closed early")
                    out.write(chunk)
                    have += len(chunk)
                    progress(have, size)
        finally:
            conn.close()


EMPTY_UPLOAD = "empty_upload"
CUT_OFF = "incomplete"
_TAIL_CHUNK = 64 * 1024


def last_line(path: Path) -> Tuple[bytes, bool]:
    """The last line of ``path`` that is not blank (``b""`` when there is none), and whether a
    newline follows it. Read from the end, so a large file costs its last line only."""
    with path.open("rb") as fh:
        pos = fh.seek(0, 2)
        line, found, ended = b"", False, False
        while pos > 0:
            step = min(_TAIL_CHUNK, pos)
            pos -= step
            fh.seek(pos)
            block = fh.read(step)
            if not found:
                text = block.rstrip()
                ended = ended or b"\n" in block[len(text):]
                if not text:
                    continue
                found, block = True, text
            cut = block.rfind(b"\n")
            if cut >= 0:
                return block[cut + 1:] + line, ended
            line = block + line
        return line, ended


def predictions_problem(path: Path) -> Optional[Tuple[str, str]]:
    """Why ``path`` is not a whole ``predictions.jsonl``: ``(code, what is wrong with it)``, or None
    (``what`` follows the file's name: "The predictions upload " + what).

    Empty (no line that is not blank): :data:`EMPTY_UPLOAD`. A last line with no newline after it
    that is not JSON was cut off (a prefix of a JSON object is never JSON): :data:`CUT_OFF`. A whole
    last line that is not JSON is how the worker wrote it, counted invalid like any bad line. Both
    the agent (before it uploads) and the server (before an upload replaces the last) ask this, so
    neither an empty nor a truncated upload takes the place of a complete one (issue 33)."""
    line, ended = last_line(path)
    if not line.strip():
        return EMPTY_UPLOAD, "is empty: it holds no line"
    if ended:
        return None
    try:
        json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        shown = line[-60:].decode("utf-8", "replace")
        return CUT_OFF, (f"ends in a cut-off line: its last {len(line)} bytes, with no newline after them, are not "
                         f"whole JSON ({exc.__class__.__name__}; it ends ...{shown!r})")
    return None
