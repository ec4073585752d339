"""A scheme's ``display_logic``: conditions on other schemes' answers that decide whether it is asked.

Apart from the schemes' own keys because each condition is judged against the whole list of
scheme names and against the operators of :mod:`potato.study.conditions`.
"""

from __future__ import annotations

import re
from typing import Mapping

from potato.study.conditions import NEEDS_NO_VALUE, NEEDS_NUMBER, NEEDS_RANGE, OPERATORS, Condition, DisplayLogic
from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    anything,
    boolean,
    check_keys,
    choice,
    mapping,
    show,
    text,
)
from potato.errors import did_you_mean

_CONDITION_KEYS: Mapping[str, Check] = {"schema": text(), "operator": anything, "value": anything,
                                        "case_sensitive": boolean}


def check_display_logic(raw: object, own: str, names: list[str], at: str,
                        findings: Findings) -> DisplayLogic | None:
    """``{show_when: [{schema, operator, value}], logic: all|any}``, each condition naming another scheme."""
    try:
        values, problems = check_keys(mapping(raw, "{show_when: [{schema: sentiment, operator: equals, value: negative}]}"),
                                      {"show_when": anything, "logic": choice(("all", "any"), "logic")},
                                      "display_logic")
    except Invalid as bad:
        findings.errors_at(at, bad.problems)
        return None
    conditions: list[Condition] = []
    raw_conditions = values.get("show_when")
    if not isinstance(raw_conditions, list) or not raw_conditions:
        problems.append((".show_when", "must be a list of conditions such as [{schema: sentiment, operator: equals, "
                                       f"value: negative}}], got {show(raw_conditions)}"))
        raw_conditions = []
    for i, entry in enumerate(raw_conditions):
        where = f".show_when[{i}]"
        try:
            cond_values, cond_problems = check_keys(mapping(entry, "{schema: sentiment, operator: equals, value: x}"),
                                                    _CONDITION_KEYS, "a condition")
        except Invalid as bad:
            problems += [(where + sub, detail) for sub, detail in bad.problems]
            continue
        problems += [(where + sub, detail) for sub, detail in cond_problems]
        schema, op, value = cond_values.get("schema"), cond_values.get("operator"), cond_values.get("value")
        if schema is None:
            problems.append((where + ".schema", "missing; name the scheme whose answer decides"))
        elif schema == own:
            problems.append((where + ".schema", f"is this scheme itself; name another scheme (schemes: {', '.join(names)})"))
        elif schema not in names:
            problems.append((where + ".schema", f"{show(schema)} names no annotation scheme{did_you_mean(schema, names)}; "
                                                f"schemes: {', '.join(names)}"))
        if op not in OPERATORS:
            near = did_you_mean(op, OPERATORS) if isinstance(op, str) else ""
            problems.append((where + ".operator", f"{show(op)} is not an operator{near}; valid: {', '.join(OPERATORS)}"))
        else:
            problem = _condition_value_problem(op, value)
            if problem:
                problems.append((where + ".value", problem))
        if not cond_problems and schema is not None and op in OPERATORS:
            conditions.append(Condition(schema, op, value, cond_values.get("case_sensitive", False)))
    findings.errors_at(at, problems)
    if problems:
        return None
    return DisplayLogic(tuple(conditions), any=values.get("logic") == "any")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _condition_value_problem(op: str, value: object) -> str | None:
    if op in NEEDS_NO_VALUE:
        return None
    if value is None:
        return f"missing; the {op} operator compares with a value"
    if op in NEEDS_RANGE and not (isinstance(value, list) and len(value) == 2 and all(map(_is_number, value))):
        return f"must be [low, high] for {op}, e.g. [1, 3], got {show(value)}"
    if op in NEEDS_NUMBER and not _is_number(value):
        return f"must be a number for {op}, got {show(value)}"
    if op == "matches":
        try:
            re.compile(str(value))
        except re.error as exc:
            return f"is not a valid regular expression ({exc})"
    return None
