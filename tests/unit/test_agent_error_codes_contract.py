"""Issue 33 item 6: every error ``code`` the agent protocol's routes can answer is in the contract's
``ErrorCode`` enum (docs/agent-protocol.yaml), described there, and in agent-protocol.md's table; and
the enum names no code the server never answers. The probe met ``no_such_package``, which the enum
lacked. The codes are collected from the source, so a new ``_fail(..., "code")`` without its entry in
the contract fails here."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Set

import yaml

from potato.server.training.agent_protocol import routes as agent_api
from potato.training.agent import protocol

ROOT = Path(__file__).resolve().parents[2]
SOURCE = Path(agent_api.__file__)
SPEC = yaml.safe_load((ROOT / "docs" / "agent-protocol.yaml").read_text(encoding="utf-8"))
GUIDE = (ROOT / "docs" / "agent-protocol.md").read_text(encoding="utf-8")


def _text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


INDIRECT = {"predictions_problem": {protocol.EMPTY_UPLOAD, protocol.CUT_OFF}}
"""Functions whose result a route answers as its code (a variable, not a literal): the codes each
can give."""


def _code_of(node: ast.expr, calls: Set[str], line: int) -> Set[str]:
    text = _text(node)
    if text is not None:
        return {text}
    if isinstance(node, ast.Name) and isinstance(getattr(agent_api, node.id, None), str):
        return {getattr(agent_api, node.id)}
    given = set().union(*(INDIRECT[name] for name in calls & set(INDIRECT)))
    assert given, (f"line {line}: a code that is neither a literal nor a module constant, in a function that calls "
                   f"none of {sorted(INDIRECT)}: name its codes in INDIRECT")
    return given


def answered_codes() -> Set[str]:
    """The codes in the agent protocol's routes: the third argument (or ``code=``) of every ``_fail`` call, every
    ``code=`` keyword of a JSON answer, and what the app's own errors are given (:func:`error_code`)."""
    codes: Set[str] = set()
    for function in ast.walk(ast.parse(SOURCE.read_text(encoding="utf-8"))):
        if not isinstance(function, ast.FunctionDef) or function.name == "_fail":  # _fail passes its own on
            continue
        inside = [node for node in ast.walk(function) if isinstance(node, ast.Call)]
        calls = {node.func.id for node in inside if isinstance(node.func, ast.Name)}
        for node in inside:
            if isinstance(node.func, ast.Name) and node.func.id == "_fail" and len(node.args) >= 3:
                codes |= _code_of(node.args[2], calls, node.lineno)
            for keyword in node.keywords:
                if keyword.arg == "code":
                    codes |= _code_of(keyword.value, calls, node.lineno)
    codes |= set(agent_api.HTTP_ERROR_CODES.values())
    codes |= {agent_api.error_code(status) for status in (400, 404, 405, 408, 413, 416, 429, 500, 503, 507)}
    return codes


def test_every_code_the_server_answers_is_in_the_contract_enum_and_no_other() -> None:
    codes = answered_codes()
    enum = SPEC["components"]["schemas"]["ErrorCode"]["enum"]
    assert len(enum) == len(set(enum))
    assert {"no_such_package", "package_unavailable", "agent_too_old", "range_not_satisfiable"} <= codes
    assert sorted(codes - set(enum)) == [], "answered, but not in ErrorCode's enum"
    assert sorted(set(enum) - codes) == [], "in ErrorCode's enum, but never answered"


def test_every_code_is_explained_in_the_contract_and_the_guide() -> None:
    described = SPEC["components"]["schemas"]["ErrorCode"]["description"]
    missing = [code for code in answered_codes() if f"`{code}`" not in described]
    assert missing == [], "ErrorCode's description does not explain these"
    table = [line for line in GUIDE.splitlines() if line.startswith("| ")]
    missing = [code for code in answered_codes() - {"server_error"}  # the guide: "anything else is not an answer"
               if not any(f"| `{code}` |" in line for line in table)]
    assert missing == [], "agent-protocol.md's table of errors lacks these"


def test_every_route_error_answer_names_only_codes_of_the_enum() -> None:
    """A route's own enum (``allOf`` with a narrower ``code``) holds codes of ErrorCode only."""
    enum = set(SPEC["components"]["schemas"]["ErrorCode"]["enum"])

    def narrowed(node: object) -> Set[str]:
        found: Set[str] = set()
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict) and isinstance(props.get("code"), dict) and "enum" in props["code"]:
                found |= set(props["code"]["enum"])
            for value in node.values():
                found |= narrowed(value)
        elif isinstance(node, list):
            for value in node:
                found |= narrowed(value)
        return found

    assert sorted((narrowed(SPEC["paths"]) | narrowed(SPEC["components"]["responses"])) - enum) == []
