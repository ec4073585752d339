"""JSON in and out of every route: strict where Python's json module is lenient.

Python reads ``NaN``/``Infinity`` (not JSON; a run's params once made ``GET runs`` unreadable), and
``1e400`` as infinity (a JSON number no double holds: refused like them; a 401-digit integer is
kept, and the places that turn one into a float refuse it); lone
surrogates such as ``"\\ud800"`` (text SQLite then refuses to store: a 500), and recurses on nested
arrays until RecursionError (100k ``[`` was a 500 on any route, ``/login`` included). Each is a 400
here, through Flask's usual "bad JSON" path; and nothing non-finite is ever written out.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterator

from flask.json.provider import DefaultJSONProvider

from potato.items import is_unicode_text

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]", re.ASCII)


class BadJson(ValueError):
    """Flask turns a ValueError from ``loads`` into its 400 for a body that is not JSON."""


def _reject_constant(name: str) -> Any:
    raise BadJson(f"{name} is not a JSON number; send a finite number or null")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 reads as inf: stored, it broke every later GET of the runs
        raise BadJson(f"{text[:40]} is out of range for a number; send a finite number")
    return value


def _check_text(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not is_unicode_text(item):
                raise BadJson("the text holds a lone surrogate (e.g. \\ud800), which is not Unicode text")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def strict_loads(text: str | bytes, **kwargs: Any) -> Any:
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, **kwargs)
    except RecursionError:
        raise BadJson("the JSON is nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text):  # only then can a lone surrogate be in the result
        _check_text(value)
    return value


class StrictJSONProvider(DefaultJSONProvider):
    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return strict_loads(s, **kwargs)

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        kwargs.setdefault("allow_nan", False)
        return super().dumps(obj, **kwargs)


def why_not_json(data: bytes) -> str:
    """Why ``data`` is not a body this server reads as JSON, as a clause for a 400's message ("" when
    it is JSON, or empty): routes that ask for an object say what was wrong with what came."""
    if not data.strip():
        return ""
    try:
        strict_loads(data)
    except (ValueError, RecursionError) as exc:
        return f" ({str(exc)[:200]})"
    return ""


def jsonl_objects(path: Path) -> Iterator[dict[str, Any]]:
    """Each line's object in a JSON-lines file a worker wrote (``predictions.jsonl``): a line that is
    not one (not JSON, not UTF-8, not an object, nested past the parser's depth) is an empty object,
    so every reader treats a bad line the same way (the writeback counts it as invalid, the others
    find nothing in it); blank lines are skipped."""
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                row = strict_loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):  # UnicodeDecodeError and BadJson are ValueErrors
                row = {}
            yield row if isinstance(row, dict) else {}
