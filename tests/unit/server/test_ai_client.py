"""What the call to an LLM server sends and how its failures read (issue 44, item 2b): the key only
in the Authorization header, read when the call is made; each failure a sentence for the admin page
that never carries the key. The answers of a real server are tested against ``transformers serve``
(tests/e2e/test_llm_option_highlighting.py); here a plain HTTP listener records the request."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from potato.config.schema import LlmService
from potato.server.assist.client import ServiceProblem, complete

SEEN: list[dict[str, Any]] = []


class Recorder(BaseHTTPRequestHandler):
    reply: tuple[int, bytes] = (200, b"")

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        SEEN.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
        status, payload = type(self).reply
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[str]:
    SEEN.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _reply(status: int, payload: object) -> None:
    Recorder.reply = (status, payload if isinstance(payload, bytes) else json.dumps(payload).encode())


def test_the_key_goes_in_the_header_read_at_each_call(listener: str, tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("sk-first\n")
    service = LlmService(kind="openai_compatible", base_url=listener, model="m", temperature=0.2, max_tokens=7,
                         key_file=key)
    _reply(200, {"choices": [{"message": {"role": "assistant", "content": "Joy"}}]})
    text, seconds = complete(service, [{"role": "user", "content": "hi"}])
    assert text == "Joy" and seconds >= 0
    [sent] = SEEN
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer sk-first"
    assert sent["body"] == {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.2,
                            "max_tokens": 7, "stream": False}
    key.write_text("sk-rotated\n")  # a new key is used without a restart
    complete(service, [{"role": "user", "content": "hi"}])
    assert SEEN[-1]["headers"]["Authorization"] == "Bearer sk-rotated"


def test_without_a_key_no_authorization_is_sent(listener: str) -> None:
    _reply(200, {"choices": [{"message": {"content": "x"}}]})
    complete(LlmService(kind="ollama", base_url=listener, model="m"), [])
    assert "Authorization" not in SEEN[0]["headers"]


@pytest.mark.parametrize(("status", "payload", "message"), [
    (401, {"error": "bad key sk-env"}, "the server refused the key (HTTP 401); check ai_config.api_key"),
    (500, {"error": "model not loaded"}, 'the server answered HTTP 500: {"error": "model not loaded"}'),
    (400, {"error": "header was Bearer sk-env"}, 'the server answered HTTP 400: {"error": "header was Bearer [the key]"}'),
    (200, b"<html>proxy</html>", "the reply is not in OpenAI's chat format: <html>proxy</html>"),
    (200, {"choices": [{"message": {"content": None}}]}, "the reply has no text (choices[0].message.content)"),
])
def test_each_failure_reads_as_what_to_check(listener: str, monkeypatch: pytest.MonkeyPatch, status: int,
                                              payload: object, message: str) -> None:
    monkeypatch.setenv("POTATO_TEST_AI_KEY", "sk-env")
    _reply(status, payload)
    service = LlmService(kind="openai", base_url=listener, model="m", key_env="POTATO_TEST_AI_KEY")
    with pytest.raises(ServiceProblem) as failed:
        complete(service, [])
    assert str(failed.value) == message


def test_nothing_listening_names_the_address() -> None:
    service = LlmService(kind="vllm", base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(ServiceProblem, match=r"^nothing answers at http://127.0.0.1:9/v1 \(.*\); is the server "
                                             r"running\?$"):
        complete(service, [])
