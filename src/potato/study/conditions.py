"""When a scheme is shown: upstream Potato's ``display_logic`` (show a question only for some answers).

Pure, and mirrored in ``static/conditions.js`` (which the annotation page and the study pages use)
so the pages and the server agree on what was asked.
The server is the one that counts: an answer to a question that was hidden for the answers saved
with it is not stored, and a hidden question is never required.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

OPERATORS = ("equals", "not_equals", "contains", "not_contains", "matches", "gt", "gte", "lt", "lte",
             "in_range", "not_in_range", "empty", "not_empty", "length_gt", "length_lt", "length_in_range")
NEEDS_NO_VALUE = ("empty", "not_empty")
NEEDS_RANGE = ("in_range", "not_in_range", "length_in_range")
NEEDS_NUMBER = ("gt", "gte", "lt", "lte", "length_gt", "length_lt")


@dataclass(frozen=True)
class Condition:
    schema: str
    operator: str
    value: Any = None
    case_sensitive: bool = False


@dataclass(frozen=True)
class DisplayLogic:
    conditions: tuple[Condition, ...]
    any: bool = False
    """True: one condition is enough (upstream's ``logic: any``); False: all of them."""

    def shows(self, answers: Mapping[str, Any]) -> bool:
        results = (holds(c, answers.get(c.schema)) for c in self.conditions)
        return any(results) if self.any else all(results)

    def to_json(self) -> str:
        """The logic as the pages' static/conditions.js reads it (a fieldset's ``data-logic``)."""
        return json.dumps({"any": self.any, "conditions": [
            {"schema": c.schema, "operator": c.operator, "value": c.value, "case_sensitive": c.case_sensitive}
            for c in self.conditions]})


def _empty(answer: Any) -> bool:
    return answer is None or answer == "" or answer == []


def _fold(value: Any, case_sensitive: bool) -> Any:
    return value if case_sensitive or not isinstance(value, str) else value.lower()


def _number(answer: Any) -> float | None:
    if isinstance(answer, bool):
        return None
    if isinstance(answer, (int, float)):
        return float(answer)
    if isinstance(answer, str):
        try:
            number = float(answer)  # a likert point is stored as text: "4"
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def holds(cond: Condition, answer: Any) -> bool:
    """Whether ``answer`` (the watched scheme's answer, None if unanswered) meets ``cond``."""
    op = cond.operator
    if op == "empty":
        return _empty(answer)
    if op == "not_empty":
        return not _empty(answer)
    if _empty(answer):
        return op in ("not_equals", "not_contains", "not_in_range")
    if op in ("equals", "not_equals"):
        wanted = cond.value if isinstance(cond.value, list) else [cond.value]
        given = answer if isinstance(answer, list) else [answer]
        folded = {_fold(str(w), cond.case_sensitive) for w in wanted}
        hit = any(_fold(str(g), cond.case_sensitive) in folded for g in given)
        return hit if op == "equals" else not hit
    if op in ("contains", "not_contains"):
        wanted = _fold(str(cond.value), cond.case_sensitive)
        if isinstance(answer, list):
            hit = any(_fold(str(a), cond.case_sensitive) == wanted for a in answer)
        else:
            hit = wanted in _fold(str(answer), cond.case_sensitive)
        return hit if op == "contains" else not hit
    if op == "matches":
        flags = 0 if cond.case_sensitive else re.IGNORECASE
        return re.search(str(cond.value), str(answer), flags) is not None
    if op.startswith("length_"):
        size = float(len(answer)) if isinstance(answer, (str, list)) else None
        return size is not None and _compare(op[len("length_"):], size, cond.value)
    number = _number(answer)
    return number is not None and _compare(op, number, cond.value)


def _compare(op: str, number: float, value: Any) -> bool:
    if op in ("in_range", "not_in_range"):
        low, high = value
        inside = float(low) <= number <= float(high)
        return inside if op == "in_range" else not inside
    limit = float(value)
    return {"gt": number > limit, "gte": number >= limit, "lt": number < limit, "lte": number <= limit}[op]
