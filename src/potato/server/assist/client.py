"""A call to an OpenAI-compatible chat server (``POST {base_url}/chat/completions``), stdlib only.

The key is read when a call is made, from the environment variable or the file the config names,
and goes only into the request's Authorization header: never into a URL, a log line, an error or
the page. Every failure becomes :class:`ServiceProblem`, whose message says what went wrong in words
the admin page can show.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Sequence

from potato.config.schema import LlmService
from potato.study.llm_help import shorten


class ServiceProblem(Exception):
    """The LLM server gave no usable answer; the message is for the admin page."""


def read_key(service: LlmService) -> str | None:
    """The key as it is now (a rotated key is picked up without a restart); None without one."""
    if service.key_env:
        return os.environ.get(service.key_env) or None
    if service.key_file is not None:
        try:
            return service.key_file.read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise ServiceProblem(f"cannot read the key file {service.key_file}: {exc.strerror or exc}") from None
    return None


def complete(service: LlmService, messages: Sequence[dict[str, str]]) -> tuple[str, float]:
    """The reply's text and the seconds the call took."""
    key = read_key(service)
    try:
        return _call(service, messages, key)
    except ServiceProblem as exc:  # a server may quote the request back: the key never leaves in a message
        if key and key in str(exc):
            raise ServiceProblem(str(exc).replace(key, "[the key]")) from None
        raise


def _call(service: LlmService, messages: Sequence[dict[str, str]], key: str | None) -> tuple[str, float]:
    body = json.dumps({"model": service.model, "messages": list(messages), "temperature": service.temperature,
                       "max_tokens": service.max_tokens, "stream": False}).encode("utf-8")
    request = urllib.request.Request(service.base_url + "/chat/completions", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    if key:
        request.add_unredirected_header("Authorization", f"Bearer {key}")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=service.timeout) as response:  # noqa: S310 - http(s) only (config)
            raw = response.read(4 * 1024 * 1024)
    except urllib.error.HTTPError as exc:
        detail = shorten(exc.read(2000).decode("utf-8", "replace")) if exc.fp is not None else ""
        if exc.code in (401, 403):
            raise ServiceProblem(f"the server refused the key (HTTP {exc.code}); check ai_config.api_key") from None
        raise ServiceProblem(f"the server answered HTTP {exc.code}: {detail or exc.reason}") from None
    except (socket.timeout, TimeoutError):
        raise ServiceProblem(f"no answer within {service.timeout:g} s (ai_config.timeout)") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (socket.timeout, TimeoutError)):
            raise ServiceProblem(f"no answer within {service.timeout:g} s (ai_config.timeout)") from None
        raise ServiceProblem(f"nothing answers at {service.base_url} ({exc.reason}); is the server running?") from None
    except OSError as exc:
        raise ServiceProblem(f"the call to {service.base_url} failed: {exc}") from None
    return _reply_text(raw), time.monotonic() - started


def _reply_text(raw: bytes) -> str:
    try:
        value: Any = json.loads(raw)
        content = value["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ServiceProblem("the reply is not in OpenAI's chat format: "
                             f"{shorten(raw.decode('utf-8', 'replace'))}") from None
    if not isinstance(content, str):
        raise ServiceProblem("the reply has no text (choices[0].message.content)")
    return content
