"""The parts of an agent's trace an annotator reviews one by one (pure): its tool calls (upstream's
``tool_call_review``) and its handoffs between agents (``handoff_review``).

Both are read from the item's list of steps as upstream's pages read them, and numbered in the
trace's order; an answer names a part by that number (``index``). What a part is (its step, its
tool, the agents it passes between) is written into the stored answer from the item here, never
taken from what was sent, so an answer always describes the trace it was given on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Tuple

TOOL_CALLS, HANDOFFS = "tool_calls", "handoffs"


class BadReview(ValueError):
    """A review that does not fit the item's parts; the message says why and what fits."""


@dataclass(frozen=True)
class Part:
    """One reviewed part of a trace: its number, the step it is at, what names it (a tool; the agent
    handing off and the one taking over) and what it carried (a call's arguments, shown as JSON)."""

    index: int
    step: int
    names: Tuple[Tuple[str, str], ...]
    detail: str = ""

    def shown(self) -> dict[str, Any]:
        return {"index": self.index, "step": self.step, **dict(self.names), "detail": self.detail}


def _pretty(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)


def tool_calls(steps: Any) -> list[Part]:
    """Each call a step made: its ``tool_calls`` (or ``tool_call``), each named by its ``name`` or
    ``tool``; else a step that is a call itself (a ``tool``, or ``action_type: tool``)."""
    found: list[Part] = []
    for n, step in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(step, dict):
            continue
        calls = step.get("tool_calls") or ([step["tool_call"]] if step.get("tool_call") else [])
        if isinstance(calls, list) and calls:
            for call in calls:
                call = call if isinstance(call, dict) else {}
                args = call.get("args", call.get("arguments", call.get("input", {})))
                found.append(Part(len(found), n, (("tool", str(call.get("name") or call.get("tool") or "tool")),), _pretty(args)))
        elif step.get("tool") or step.get("action_type") == "tool":
            args = step.get("args", step.get("arguments", step.get("input", {})))
            found.append(Part(len(found), n, (("tool", str(step.get("tool") or step.get("name") or "tool")),), _pretty(args)))
    return found


def handoffs(steps: Any, agent_key: str) -> list[Part]:
    """Each place where the acting agent changes between one step and the next (the agent under
    ``agent_key``, else the step's speaker or role; a step naming none is an agent of its own)."""
    found: list[Part] = []
    before: Optional[str] = None
    for n, step in enumerate(steps if isinstance(steps, list) else []):
        agent = str(step.get(agent_key) or step.get("speaker") or step.get("role") or "") if isinstance(step, dict) else ""
        agent = agent or f"agent {n + 1}"
        if before is not None and agent != before:
            found.append(Part(len(found), n, (("from", before), ("to", agent))))
        before = agent
    return found


def parts_of(kind: str, steps: Any, agent_key: str) -> list[Part]:
    return tool_calls(steps) if kind == TOOL_CALLS else handoffs(steps, agent_key)


def stored_review(value: Sequence[Mapping[str, Any]], parts: Sequence[Part], answer_keys: Sequence[str]) -> list[dict[str, Any]]:
    """A review as upstream stores it: one entry per part given an answer, in the trace's order, each
    with what the part is (from the item) and its answers (``answer_keys``: a verdict and notes, or
    flags and a quality); parts left without one are left out. :class:`BadReview` names a part the
    item does not have, or one answered twice."""
    known = {part.index: part for part in parts}
    out: dict[int, dict[str, Any]] = {}
    for entry in value:
        index = entry["index"]
        if index not in known:
            raise BadReview(f"this item has {len(parts)} to review, numbered 0 to {len(parts) - 1}; there is no {index}"
                            if parts else "this item has nothing to review here; leave the answer out")
        if index in out:
            raise BadReview(f"part {index} is answered twice; send it once")
        answers = {key: entry[key] for key in answer_keys if entry.get(key) not in (None, "", [], 0)}
        if answers:
            part = known[index]
            out[index] = {"index": index, "step": part.step, **dict(part.names), **answers}
    return [out[index] for index in sorted(out)]
