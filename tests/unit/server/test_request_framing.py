"""The answers the worker sends before the app sees a request carry the security headers of every
answer (issue 42 item 11): the event loop's 400/408/413/431 and gunicorn's parser's 400/414/431 had
none. tests/integration/test_gunicorn_security.py sends them to a real server."""

from __future__ import annotations

import json

import pytest
from gunicorn import util as gunicorn_util

from potato.server.headers import ANSWER_POLICY, security_headers
from potato.server.serving.request_framing import (BAD_FRAMING_RESPONSE, HEAD_TOO_LARGE_RESPONSE, TIMEOUT_RESPONSE,
                                                   TOO_LARGE_RESPONSE, answer, cut_short, parser_error_answer, BodyPlan, Body)


def _parse(reply: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    return lines[0], dict(line.split(": ", 1) for line in lines[1:]), body


@pytest.mark.parametrize("reply", [TIMEOUT_RESPONSE, TOO_LARGE_RESPONSE, BAD_FRAMING_RESPONSE, HEAD_TOO_LARGE_RESPONSE,
                                   answer(503, "Service Unavailable", "busy", retry_after=10),
                                   cut_short(BodyPlan(Body.COLLECT, 10), 3)])
def test_every_answer_of_the_event_loop_carries_the_security_headers(reply: bytes) -> None:
    _, headers, body = _parse(reply)
    for name, value in security_headers(ANSWER_POLICY):
        assert headers[name] == value
    assert headers["X-Frame-Options"] == "SAMEORIGIN" and headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert int(headers["Content-Length"]) == len(body)


class _Sink:
    """What gunicorn's ``write_error`` writes to, to get the page it really writes."""

    def __init__(self) -> None:
        self.data = b""

    def gettimeout(self) -> float:
        return 0.0

    def sendall(self, data: bytes) -> None:
        self.data += data


def _gunicorn_page(status: int, reason: str, mesg: str) -> bytes:
    sink = _Sink()
    gunicorn_util.write_error(sink, status, reason, mesg)
    return sink.data


@pytest.mark.parametrize(("status", "reason", "mesg"), [
    (414, "URI Too Long", "4094"),
    (431, "Request Header Fields Too Large", "Error parsing headers: 'limit request headers fields'"),
    (400, "Bad Request", "Invalid Request Line '<script>alert(1)</script>'"),
    (500, "Internal Server Error", ""),
])
def test_gunicorn_s_error_page_becomes_the_same_answer_with_the_headers(status: int, reason: str, mesg: str) -> None:
    page = _gunicorn_page(status, reason, mesg)
    assert b"Content-Security-Policy" not in page  # what the probe saw
    line, headers, body = _parse(parser_error_answer(page))
    assert line == f"HTTP/1.1 {status} {reason}"
    assert headers["Content-Type"] == "application/json" and headers["Connection"] == "close"
    assert json.loads(body) == {"error": mesg or reason}
    for name, value in security_headers(ANSWER_POLICY):
        assert headers[name] == value


def test_bytes_that_are_no_error_page_are_a_plain_400() -> None:
    line, headers, body = _parse(parser_error_answer(b"garbage"))
    assert line == "HTTP/1.1 400 Bad Request" and "Content-Security-Policy" in headers
    assert json.loads(body)["error"] == "The request could not be read as HTTP."
