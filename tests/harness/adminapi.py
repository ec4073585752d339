"""The admin API as tests read it. A helper that polls an answer and then indexes it (``["labels"]``)
turned a 429 into ``KeyError: 'labels'``, which says nothing of what the server answered (issue 42 C);
here an answer that is not the one expected fails at once, with its status and its body."""

from __future__ import annotations

import time
from typing import Any

import requests

from tests.conftest import ADMIN_KEY
from tests.harness.servers import ServerProcess

BODY_SHOWN = 2000
"""How much of an unexpected answer's body its failure shows."""


def expect_json(response: requests.Response, key: str, status: int = 200) -> Any:
    """``key`` of the JSON object the answer holds, when it has ``status``; otherwise AssertionError
    naming the request, the status and the body: a 429 or a 401 on a polled route then says so, and
    polling does not go on against an answer that will not change."""
    request = response.request
    said = f"{request.method} {request.url} answered {response.status_code}: {response.text[:BODY_SHOWN]!r}"
    if response.status_code != status:
        raise AssertionError(f"{said}; expected {status} with {key!r}")
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"{said}; expected a JSON object with {key!r}") from None
    if not isinstance(body, dict) or key not in body:
        raise AssertionError(f"{said}; expected a JSON object with {key!r}")
    return body[key]


def stored_labels(url: str, user: str | None = None, schema: str | None = None,
                  timeout: float = 30.0) -> list[dict[str, Any]]:
    """``GET /admin/api/labels`` of the server at ``url`` (the labels, each a dict), filtered as the
    route filters them."""
    params = {name: value for name, value in (("user", user), ("schema", schema)) if value is not None}
    response = requests.get(url + "/admin/api/labels", params=params, headers={"X-API-Key": ADMIN_KEY},
                            timeout=timeout)
    rows: list[dict[str, Any]] = expect_json(response, "labels")
    return rows


def labels_of(srv: ServerProcess, user: str) -> dict[tuple[str, str], Any]:
    rows = stored_labels(srv.url, user)
    return {(r["id"], r["schema"]): r["label"] for r in rows}


def answers_become(url: str, user: str, expected: dict[tuple[str, str], Any], within: float = 15.0,
                   by_turn: bool = False) -> None:
    """``user``'s stored answers, by (item id, scheme), reach ``expected`` within ``within`` seconds (a
    page saves each answer as it is given); ``by_turn``: an answer per turn is compared as
    {turn id: value}, without the turn's place and text kept beside it."""
    def now() -> dict[tuple[str, str], Any]:
        return {(r["id"], r["schema"]): {t: e["value"] for t, e in r["label"].items()}
                if by_turn and isinstance(r["label"], dict) else r["label"] for r in stored_labels(url, user)}
    deadline = time.monotonic() + within
    while now() != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert now() == expected
