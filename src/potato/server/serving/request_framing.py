"""What the head-first worker decides from a request's bytes, with no socket in sight: the header
block parsed, what happens to the body (:func:`plan_body`), where a chunked body ends, the limits
(header size and time, the body preread and its deadline) and the answers the event loop sends for
them (408, 413, 431, 400 on ambiguous framing), and those for what gunicorn's own parser refuses
(:func:`parser_error_answer`): all with the security headers of the app's answers.

It is apart from :mod:`potato.server.serving.gunicorn_worker`, which owns the event loop, the threads and
their sockets, so that every rule about HTTP framing is a pure function, tested byte for byte
without a server or a socket (tests/unit/server/test_security.py, test_request_framing.py).
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Mapping

from potato.server.headers import ANSWER_POLICY, security_headers

HEAD_TIMEOUT_S = 10.0
"""Seconds a client has to send a request's headers (the request line and every header line)."""
HEAD_MAX = 64 * 1024
"""Headers larger than this are refused (431) without a thread."""
BODY_PREREAD_MAX = 1024 * 1024
"""Bodies up to this size (every annotator's request: the annotator routes' limit) are collected in
the event loop; larger ones go to a thread on the upload routes only."""
BODY_TIMEOUT_S = 30.0
"""Seconds, after the headers, a client has to send a body of up to BODY_PREREAD_MAX; and the longest
a thread waits for the next bytes of an upload. ``POTATO_BODY_TIMEOUT_S`` sets it (tests)."""
BODY_MIN_RATE = 16 * 1024
"""Bytes per second an upload must average after its first BODY_TIMEOUT_S (a slow link does 100 KB/s)."""
END = b"\r\n\r\n"
_CHUNK_LINE_MAX = 4096
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
_TOKEN = re.compile(r"bearer[ \t]+\S", re.IGNORECASE)


class Body(str, Enum):
    """What the event loop does with a request's body, decided from its headers."""

    NONE = "none"
    """No body: the request goes to a thread."""
    COLLECT = "collect"
    """Content-Length up to BODY_PREREAD_MAX: collected here, then a thread."""
    CHUNKED = "chunked"
    """Chunked: collected here up to BODY_PREREAD_MAX (a larger one is a 413), then a thread."""
    UPLOAD = "upload"
    """Larger or chunked, on an upload route with its credentials in the headers: a paced thread reads it."""
    TOO_LARGE = "too_large"
    """Larger than BODY_PREREAD_MAX where no route takes that: 413, no thread."""
    BAD = "bad"
    """Framing the server will not guess at (two lengths, a length and chunked, a coding other than
    chunked, chunked in HTTP/1.0): 400, no thread (gunicorn's parser refuses these too)."""


@dataclass(frozen=True)
class BodyPlan:
    kind: Body
    length: int = 0
    """COLLECT: the body's bytes."""
    expects_continue: bool = False
    """The client waits for ``100 Continue`` before it sends the body (HTTP/1.1 only)."""


@dataclass(frozen=True)
class UploadRoute:
    method: str
    path: re.Pattern[str]
    credential: Callable[[Mapping[str, list[str]]], bool]
    """Whether the headers carry what the route's view checks first (present, not yet valid)."""


def _bearer(fields: Mapping[str, list[str]]) -> bool:
    return any(_TOKEN.match(value) for value in fields.get("authorization", []))


def _api_key(fields: Mapping[str, list[str]]) -> bool:
    return any(value for value in fields.get("x-api-key", []))


UPLOAD_ROUTES = (
    UploadRoute("PUT", re.compile(r"/training/agent/v1/runs/[^/?]+/predictions"), _bearer),
    UploadRoute("POST", re.compile(r"/training/agent/v1/runs/[^/?]+/(?:events|result)"), _bearer),
    UploadRoute("POST", re.compile(r"/admin/api/labels"), _api_key),
)
"""The only routes that take bodies over BODY_PREREAD_MAX (``max_predictions_mb``; an agent's report
batch; ``POST /admin/api/labels`` under the app's 64 MB). Each view checks its token or key before it
reads the body, so an impostor holds a thread only until its 401."""


def parse_head(head: bytes) -> tuple[str, str, str, dict[str, list[str]]]:
    """Method, path (without query), version and header fields (lower-case name -> values) of a
    complete header block (pure). Lines that are not fields are left to gunicorn's parser."""
    lines = head[:head.index(END)].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    method, target, version = parts if len(parts) == 3 else ("", "", "")
    if "://" in target.split("?", 1)[0]:  # absolute-form: http://host/path
        target = "/" + target.split("://", 1)[1].partition("/")[2]
    fields: dict[str, list[str]] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            fields.setdefault(name.strip().lower(), []).append(value.strip(" \t"))
    return method, target.split("?", 1)[0], version, fields


def upload_route(method: str, path: str, fields: Mapping[str, list[str]]) -> bool:
    """Whether this request may send a large or chunked body to a thread (pure)."""
    return any(route.method == method and route.path.fullmatch(path) and route.credential(fields)
               for route in UPLOAD_ROUTES)


def plan_body(head: bytes) -> BodyPlan:
    """What to do with the body of the request whose complete header block starts ``head`` (pure)."""
    method, path, version, fields = parse_head(head)
    lengths, codings = fields.get("content-length", []), fields.get("transfer-encoding", [])
    expects = version == "HTTP/1.1" and any(v.lower() == "100-continue" for v in fields.get("expect", []))
    if codings:
        if lengths or len(codings) > 1 or codings[0].lower() != "chunked" or version != "HTTP/1.1":
            return BodyPlan(Body.BAD)
        if upload_route(method, path, fields):
            return BodyPlan(Body.UPLOAD)
        return BodyPlan(Body.CHUNKED, expects_continue=expects)
    if not lengths:
        return BodyPlan(Body.NONE)
    if len(lengths) > 1 or not lengths[0].isdigit() or len(lengths[0]) > 15:
        return BodyPlan(Body.BAD)
    length = int(lengths[0])
    if length == 0:
        return BodyPlan(Body.NONE)
    if length <= BODY_PREREAD_MAX:
        return BodyPlan(Body.COLLECT, length, expects)
    return BodyPlan(Body.UPLOAD if upload_route(method, path, fields) else Body.TOO_LARGE, length)


def body_wanted(head: bytes) -> int:
    """Bytes of body the event loop collects by Content-Length right after a complete header block
    (pure): 0 for no body, a chunked or too large one, and for a client that waits for ``100
    Continue`` (it is sent the go-ahead first)."""
    plan = plan_body(head)
    return plan.length if plan.kind is Body.COLLECT and not plan.expects_continue else 0


def chunked_end(body: bytes | bytearray, pos: int = 0) -> tuple[int, bool]:
    """Scan a chunked body from ``pos``, the start of a chunk's size line (pure). Returns where the
    scan stopped and whether the body is complete: then that is its end, trailers included; else the
    start of the first chunk not yet all there, to resume from. Raises ValueError on bad framing."""
    while True:
        eol = body.find(b"\r\n", pos, pos + _CHUNK_LINE_MAX + 2)
        if eol < 0:
            if len(body) - pos > _CHUNK_LINE_MAX:
                raise ValueError("chunk size line too long")
            return pos, False
        size_text = bytes(body[pos:eol]).split(b";", 1)[0].rstrip(b" \t")
        if not _CHUNK_SIZE.fullmatch(size_text):
            raise ValueError(f"bad chunk size {size_text[:20]!r}")
        size = int(size_text, 16)
        if size == 0:  # the last chunk, then trailer lines up to an empty one (4 KB in all)
            line, limit = eol + 2, eol + 2 + _CHUNK_LINE_MAX
            while True:
                end = body.find(b"\r\n", line, limit)
                if end < 0:
                    if len(body) >= limit:
                        raise ValueError("trailers longer than 4 KB")
                    return pos, False
                if end == line:
                    return end + 2, True
                line = end + 2
        data_end = eol + 2 + size
        if len(body) < data_end + 2:
            return pos, False
        if body[data_end:data_end + 2] != b"\r\n":
            raise ValueError("chunk data not followed by CRLF")
        pos = data_end + 2


def strip_expect(head: bytes) -> bytes:
    """The header block without its ``Expect`` fields (pure): the event loop has answered them."""
    return re.sub(rb"\r\nexpect[ \t]*:[^\r\n]*", b"", head[:head.index(END)], flags=re.IGNORECASE) + END


def read_deadline(started: float, received: int, timeout_s: float, min_rate: float) -> float:
    """When a thread stops waiting for a body (pure): ``timeout_s`` after it began to read, plus one
    second for every ``min_rate`` bytes that have arrived."""
    return started + timeout_s + received / min_rate


def answer(status: int, reason: str, message: str = "", retry_after: int | None = None, code: str = "") -> bytes:
    """A complete response from the event loop, which then closes the connection (pure). It carries
    the security headers of every answer (:func:`potato.server.headers.security_headers`), so a
    browser treats it as it treats the app's own (issue 42: these answers carried none)."""
    body = json.dumps({"error": message, **({"code": code} if code else {})}).encode() if message else b""
    head = [f"HTTP/1.1 {status} {reason}", "Connection: close", f"Content-Length: {len(body)}"]
    if body:
        head.append("Content-Type: application/json")
    if retry_after is not None:
        head.append(f"Retry-After: {retry_after}")
    head += [f"{name}: {value}" for name, value in security_headers(ANSWER_POLICY)]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_ERROR_PAGE = re.compile(rb"HTTP/1\.[01] (\d{3}) ([^\r\n]*)\r\n.*?</h1>(.*?)</body>", re.DOTALL)


def parser_error_answer(page: bytes) -> bytes:
    """The answer for an error gunicorn's own parser found (414, 431, 400...), from the HTML error page
    gunicorn wrote for it (pure): the same status and message, as JSON with the security headers of
    :func:`answer` (gunicorn's page had none of them)."""
    found = _ERROR_PAGE.match(page)
    if found is None:
        return answer(400, "Bad Request", "The request could not be read as HTTP.")
    status, reason = int(found.group(1)), found.group(2).decode("latin-1").strip()
    message = html.unescape(found.group(3).decode("latin-1")).strip() or reason
    return answer(status, reason, message)


def cut_short(plan: BodyPlan, received: int) -> bytes:
    """The answer to a client that closed its side of the connection (a half-close) before all of its
    body came (pure): a 400 that says how much did, so that it sends the request again, where the
    event loop used to close without a word (issue 33). ``incomplete`` is the predictions route's code."""
    said = f"{received} of {plan.length} bytes" if plan.kind is Body.COLLECT else f"{received} bytes, before its last chunk"
    return answer(400, "Bad Request", f"The request's body ended after {said}; nothing of it was kept: send it again.",
                  code="incomplete")


TIMEOUT_RESPONSE = answer(408, "Request Timeout")
TOO_LARGE_RESPONSE = answer(413, "Content Too Large", f"The request is larger than this route takes "
                            f"({BODY_PREREAD_MAX // 1024} KB); nothing was stored.")
BAD_FRAMING_RESPONSE = answer(400, "Bad Request", "The request's Content-Length or Transfer-Encoding is "
                              "ambiguous; send one Content-Length, or Transfer-Encoding: chunked alone.")
HEAD_TOO_LARGE_RESPONSE = answer(431, "Request Header Fields Too Large")
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def body_timeout(environ: Mapping[str, str]) -> float:
    """BODY_TIMEOUT_S, or ``POTATO_BODY_TIMEOUT_S`` when set to a positive number (pure)."""
    try:
        value = float(environ.get("POTATO_BODY_TIMEOUT_S", ""))
    except ValueError:
        return BODY_TIMEOUT_S
    return value if math.isfinite(value) and value > 0 else BODY_TIMEOUT_S
