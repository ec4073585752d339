"""The parts of an item an annotator reviews one by one (pure): an agent's tool calls (upstream's
``tool_call_review``), its handoffs between agents (``handoff_review``), the blocks of a multimodal
reasoning trace (``multimodal_reasoning``), a GUI agent's steps on their screenshots
(``gui_trajectory``), the segments of a timed transcript (``speech_transcript``), the times two agents'
calls hold the same resource at once (``tool_contention``) and the times a caller and a voice agent
speak at once (``voice_interaction``).

Each is read from the item's list as upstream's pages read it, and numbered in the item's order; an
answer names a part by that number (``index``). What a part is (its step, its tool, the agents it
passes between, a segment's times) is written into the stored answer from the item here, never taken
from what was sent, so an answer always describes the item it was given on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Tuple

TOOL_CALLS, HANDOFFS, REASONING, GUI_STEPS, SEGMENTS = "tool_calls", "handoffs", "reasoning", "gui_steps", "segments"
CONTENTIONS, OVERLAPS = "contentions", "overlaps"
KINDS = {"tool_call_review": TOOL_CALLS, "handoff_review": HANDOFFS, "multimodal_reasoning": REASONING,
         "gui_trajectory": GUI_STEPS, "speech_transcript": SEGMENTS, "tool_contention": CONTENTIONS,
         "voice_interaction": OVERLAPS}
"""The parts each review type asks about, by its annotation type."""


class BadReview(ValueError):
    """A review that does not fit the item's parts; the message says why and what fits."""


@dataclass(frozen=True)
class Part:
    """One reviewed part of an item: its number; its card's heading (``name``, and ``place``: where it
    is) and what its answers are called to a screen reader (``what``); what the stored answer says it
    is (the ``step`` of a trace it is at, and ``names``: a tool, the agents of a handoff, a segment's
    times); and what the card shows: a text (a call's arguments as JSON, a
    block's reasoning, a segment's words), an image with its caption, and where on the image a GUI
    agent clicked (``marker``, each coordinate from 0 to 1)."""

    index: int
    name: str
    place: str
    what: str
    step: Optional[int] = None
    names: Tuple[Tuple[str, Any], ...] = ()
    detail: str = ""
    image: str = ""
    caption: str = ""
    marker: Optional[Tuple[float, float]] = None

    def shown(self) -> dict[str, Any]:
        return {"index": self.index, **({"step": self.step} if self.step is not None else {}), "name": self.name,
                "place": self.place, "what": self.what, **dict(self.names), "detail": self.detail,
                "image": self.image, "caption": self.caption, "marker": list(self.marker) if self.marker else None}


def _pretty(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else _pretty(value)


def _listed(steps: Any) -> list[Any]:
    return steps if isinstance(steps, list) else []


def tool_calls(steps: Any) -> list[Part]:
    """Each call a step made: its ``tool_calls`` (or ``tool_call``), each named by its ``name`` or
    ``tool``; else a step that is a call itself (a ``tool``, or ``action_type: tool``)."""
    found: list[Part] = []

    def call(n: int, name: str, args: Any) -> Part:
        return Part(len(found), name, f"step {n + 1}", f"Call {len(found) + 1} ({name})", n, (("tool", name),),
                    _pretty(args))

    for n, step in enumerate(_listed(steps)):
        if not isinstance(step, dict):
            continue
        calls = step.get("tool_calls") or ([step["tool_call"]] if step.get("tool_call") else [])
        if isinstance(calls, list) and calls:
            for c in calls:
                c = c if isinstance(c, dict) else {}
                found.append(call(n, str(c.get("name") or c.get("tool") or "tool"),
                                  c.get("args", c.get("arguments", c.get("input", {})))))
        elif step.get("tool") or step.get("action_type") == "tool":
            found.append(call(n, str(step.get("tool") or step.get("name") or "tool"),
                              step.get("args", step.get("arguments", step.get("input", {})))))
    return found


def handoffs(steps: Any, agent_key: str) -> list[Part]:
    """Each place where the acting agent changes between one step and the next (the agent under
    ``agent_key``, else the step's speaker or role; a step naming none is an agent of its own)."""
    found: list[Part] = []
    before: Optional[str] = None
    for n, step in enumerate(_listed(steps)):
        agent = str(step.get(agent_key) or step.get("speaker") or step.get("role") or "") if isinstance(step, dict) else ""
        agent = agent or f"agent {n + 1}"
        if before is not None and agent != before:
            name = f"{before} \u2192 {agent}"
            found.append(Part(len(found), name, f"step {n + 1}", f"Handoff {len(found) + 1} ({name})",
                              n, (("from", before), ("to", agent))))
        before = agent
    return found


def reasoning(steps: Any, type_key: str) -> list[Part]:
    """Each block of a multimodal reasoning trace, by its type (``type_key``; else what it holds): a
    text's reasoning, an image with its caption, a tool call with its arguments, an action."""
    found: list[Part] = []
    for n, step in enumerate(_listed(steps)):
        step = step if isinstance(step, dict) else {"text": _text(step)}
        kind = str(step.get(type_key) or "").lower() or (
            "image" if step.get("image") or step.get("image_url") else
            "tool" if step.get("tool") or step.get("tool_calls") or step.get("tool_call") else
            "action" if step.get("action") else "text")
        image = (step.get("image") or step.get("image_url") or "") if kind == "image" else ""
        if kind == "tool":
            call: dict[str, Any] = step["tool_call"] if isinstance(step.get("tool_call"), dict) else step
            detail = (f"{call.get('tool') or call.get('name') or 'tool'}\n"
                      + _pretty(call.get("args", call.get("arguments", call.get("input", {})))))
        else:
            detail = _text(step.get("action") if kind == "action" else step.get("text") or step.get("content"))
        found.append(Part(n, f"Step {n + 1}", kind, f"Step {n + 1}", None, (), detail, image if isinstance(image, str) else "",
                          _text(step.get("caption"))))
    return found


def _number(value: Any) -> Optional[float]:
    """A number an item gives (a click's coordinate, a time in seconds); None for anything else."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def gui_steps(steps: Any, screenshot_key: str, action_key: str, coord_space: str) -> list[Part]:
    """Each step of a GUI agent: the screenshot it saw, the action it took, and where it clicked (``x``
    and ``y``, or a ``click``), marked on the screenshot when the coordinates are fractions of it
    (``coord_space: normalized``) and written out in either space."""
    found: list[Part] = []
    for n, step in enumerate(_listed(steps)):
        step = step if isinstance(step, dict) else {}
        where: dict[str, Any] = step if "x" in step else step["click"] if isinstance(step.get("click"), dict) else {}
        x, y = _number(where.get("x")), _number(where.get("y"))
        action = _text(step.get(action_key) or step.get("text") or step.get("content"))
        marker = None
        if x is not None and y is not None:
            action += f"\nclick at {x:g}, {y:g}" + (" px" if coord_space == "pixels" else "")
            if coord_space != "pixels" and 0 <= x <= 1 and 0 <= y <= 1:
                marker = (x, y)
        shot = step.get(screenshot_key) or step.get("image") or ""
        found.append(Part(n, f"Step {n + 1}", "", f"Step {n + 1}", None, (), action, shot if isinstance(shot, str) else "",
                          "" if shot else "no screenshot", marker))
    return found


def segments(value: Any) -> list[Part]:
    """Each segment of a timed transcript (``start``, ``end``, ``text`` and a ``speaker``), by its time."""
    found: list[Part] = []
    for n, seg in enumerate(_listed(value)):
        seg = seg if isinstance(seg, dict) else {"text": _text(seg)}
        start, end = _interval(seg)
        speaker = _text(seg.get("speaker") or seg.get("role"))
        found.append(Part(n, f"{start:.1f}\u2013{end:.1f} s", speaker, f"Segment {n + 1}", None, (("start", start), ("end", end)),
                          _text(seg.get("text") or seg.get("content"))))
    return found


def _interval(entry: Mapping[str, Any]) -> tuple[float, float]:
    start = _number(entry.get("start")) or 0.0
    return start, _number(entry.get("end")) or start


def _at_once(spans: Sequence[tuple[float, float]], pairs: Sequence[tuple[int, int]]) -> list[tuple[float, float, int, int]]:
    """Where each pair of ``spans`` overlaps (by more than an instant), earliest first, ties in the
    pairs' order (the order upstream's pages number them in)."""
    found = []
    for a, b in pairs:
        start, end = max(spans[a][0], spans[b][0]), min(spans[a][1], spans[b][1])
        if end > start:
            found.append((start, end, a, b))
    return sorted(found, key=lambda region: region[0])


def contentions(calls: Any, agent_key: str, resource_key: str) -> list[Part]:
    """Each time two calls (``start`` to ``end``, in seconds) hold the same resource (``resource_key``,
    else ``lock``) at once; a call is made by the agent its ``agent_key`` names, else its role."""
    listed = [c if isinstance(c, dict) else {} for c in _listed(calls)]
    listed = [c for c in listed if _interval(c)[1] >= _interval(c)[0]]
    held = [str(c.get(resource_key) or c.get("lock") or "") for c in listed]
    who = [f"{c.get(agent_key) or c.get('role') or 'agent'}: {c.get('tool') or c.get('name') or 'tool'}" for c in listed]
    pairs = [(a, b) for a in range(len(listed)) for b in range(a + 1, len(listed)) if held[a] and held[a] == held[b]]
    return [Part(n, held[a], f"{start:.1f}\u2013{end:.1f} s", f"Contention {n + 1} ({held[a]})",
                 detail=f"{who[a]} \u27f7 {who[b]}")
            for n, (start, end, a, b) in enumerate(_at_once([_interval(c) for c in listed], pairs))]


def overlaps(turns: Any, speaker_key: str, user_speakers: Sequence[str]) -> list[Part]:
    """Each time a caller (a speaker of ``user_speakers``, in any case) and the agent talk at once."""
    listed = [t if isinstance(t, dict) else {} for t in _listed(turns)]
    users = {s.lower() for s in user_speakers}
    caller = [str(t.get(speaker_key) or t.get("role") or "").lower() in users for t in listed]
    pairs = [(a, b) for a in range(len(listed)) for b in range(a + 1, len(listed)) if caller[a] != caller[b]]
    regions = _at_once([_interval(t) for t in listed], pairs)
    parts = []
    for n, (start, end, a, b) in enumerate(regions):
        user, agent = (a, b) if caller[a] else (b, a)
        parts.append(Part(n, f"Overlap {n + 1}", f"{start:.1f}\u2013{end:.1f} s", f"Overlap {n + 1}",
                          detail=f"caller: {_text(listed[user].get('text'))}\nagent: {_text(listed[agent].get('text'))}"))
    return parts


def parts_of(kind: str, listed: Any, reads: Mapping[str, str]) -> list[Part]:
    """The parts of one :data:`KINDS` in the item's ``listed`` steps or segments; ``reads`` are the
    scheme's keys for what a step holds (its agent, type, screenshot, action; the coordinates' space)."""
    if kind == TOOL_CALLS:
        return tool_calls(listed)
    if kind == HANDOFFS:
        return handoffs(listed, reads.get("agent", "agent"))
    if kind == REASONING:
        return reasoning(listed, reads.get("type", "type"))
    if kind == CONTENTIONS:
        return contentions(listed, reads.get("agent", "agent"), reads.get("resource", "resource"))
    if kind == OVERLAPS:
        return overlaps(listed, reads.get("speaker", "speaker"), reads.get("users", "user,human,caller").split(","))
    if kind == GUI_STEPS:
        return gui_steps(listed, reads.get("screenshot", "screenshot"), reads.get("action", "action"),
                         reads.get("coord_space", "normalized"))
    return segments(listed)


def stored_keyed(value: Mapping[str, Any], key: str, parts: Sequence[Part]) -> dict[str, Any] | None:
    """A review upstream stores by the parts' numbers, ``{key: {"0": label, ...}, "rating": point}``
    (contentions; overlaps, with the call's rating): the labels given, in the parts' order, and the
    rating where given; None when neither is. :class:`BadReview` names a part the item does not have."""
    labels = {int(index): label for index, label in (value.get(key) or {}).items() if label}
    missing = [index for index in labels if index >= len(parts)]
    if missing:
        raise BadReview(f"this item has {len(parts)} {key}, numbered 0 to {len(parts) - 1}; there is no {missing[0]}"
                        if parts else f"this item has no {key}; leave them out")
    out: dict[str, Any] = {key: {str(index): labels[index] for index in sorted(labels)}} if labels else {}
    if value.get("rating"):
        out["rating"] = value["rating"]
    return out or None


def stored_review(value: Sequence[Mapping[str, Any]], parts: Sequence[Part], answer_keys: Sequence[str]) -> list[dict[str, Any]]:
    """A review as upstream stores it: one entry per part given an answer, in the item's order, each
    with what the part is (from the item) and its answers (``answer_keys``: a verdict and notes, flags
    and a quality, errors and a correction); parts left without one are left out. :class:`BadReview`
    names a part the item does not have, or one answered twice."""
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
            out[index] = {"index": index, **({"step": part.step} if part.step is not None else {}), **dict(part.names),
                          **answers}
    return [out[index] for index in sorted(out)]
