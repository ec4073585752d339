"""The turns of a trace or dialogue field, as a turn-level question is asked on them (pure).

Each turn is one entry of what the page draws for the field (an agent trace's steps, a discussion's
or a dialogue's turns, a chain of thought's steps), in the same order, read by the same readers
(:mod:`potato.display.traces`, :func:`potato.display.fields.dialogue_turns`): the turn an answer
names is the one the annotator saw. A turn's id is the trace's own (``turn_id``, ``step_id`` or
``id``, as upstream reads it) where that names one turn only, else ``t<index>``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from potato.display import traces
from potato.display.fields import dialogue_turns
from potato.training.job.turns import Turn

TURN_FIELD_TYPES = ("agent_trace", "multi_agent_discussion", "cot_trace", "dialogue")
"""The instance_display types a turn-level question can be asked on (upstream's, less audio and trees)."""
ID_KEYS = ("turn_id", "step_id", "id")


def _tool(step: Mapping[str, Any]) -> str:
    """The tool a step called: its ``tool``, else the name before ``(`` of an action's text."""
    if step.get("tool"):
        return str(step["tool"])
    if step.get("kind") == "action":
        match = traces.CALL.match(str(step.get("text", "")))
        if match:
            return match.group(0).rstrip("( \t")
    return ""


def turns_of(kind: str, value: Any, options: Mapping[str, Any]) -> list[Turn]:
    """The turns of one field of ``kind`` holding ``value`` (none for a type that has no turns)."""
    speaker_key = str(options.get("speaker_key") or "speaker")
    text_key = str(options.get("text_key") or "text")
    found: list[dict[str, Any]] = []
    if kind == "cot_trace" and traces.segmented(value, text_key):  # one step per entry
        drawn = traces.cot_trace(value, options, "", "")["steps"]
        found = [{"kind": s["kind"], "text": s["text"], **_ids(raw)} for s, raw in zip(drawn, value)]
    elif kind in ("agent_trace", "cot_trace"):
        found = [dict(step) for step in traces.trace_steps(value, speaker_key, text_key)]
    elif kind == "multi_agent_discussion":
        drawn = traces.discussion(value, options, "", "")["turns"]
        found = [{"speaker": turn["speaker"], "text": turn["text"], "agent_id": turn["agent"], **_from(raw)}
                 for turn, raw in _beside(drawn, value)]
    elif kind == "dialogue":
        drawn = dialogue_turns(value, options.get("speaker_extraction", True) is not False, speaker_key, text_key)
        found = [{"speaker": turn["speaker"], "text": turn["text"], "agent_id": str(raw.get("agent_id") or ""),
                  **_from(raw)} for turn, raw in _beside(drawn, value)]
    ids = [_own_id(step) for step in found]
    seen = Counter(ids)
    out: list[Turn] = []
    for n, step in enumerate(found):
        own = ids[n]
        turn_id = own if own and seen[own] == 1 else f"t{n}"
        out.append(Turn(id=turn_id, index=n, text=str(step.get("text", "")), speaker=str(step.get("speaker", "")),
                        step_type=str(step.get("kind", "")), agent_id=str(step.get("agent_id", "")),
                        tool=_tool(step), run_id=str(step.get("run_id", ""))))
    return out


def step_turns(value: Any, text_key: str, speaker_key: str | None = None) -> list[Turn]:
    """A list of steps read entry by entry (the ``steps_key`` or ``turns_key`` of a process reward,
    a trajectory evaluation, a consensus tracker): each string or object is one turn, named by its place (``t<index>``, as upstream names a step by its index); its text is
    its ``text_key``, else its content (a coding agent's text blocks and the tools it called) or
    reasoning; its speaker its ``speaker_key`` where that is given, else its role, speaker or agent.
    Entries that are neither are skipped, as the trace displays skip them."""
    out: list[Turn] = []
    for raw in value if isinstance(value, list) else []:
        if isinstance(raw, str):
            speaker, kind, text = "", "", raw
        elif isinstance(raw, dict):
            speaker = str((raw.get(speaker_key) if speaker_key else None) or raw.get("role") or raw.get("speaker")
                          or raw.get("agent") or "")
            kind = str(raw.get("step_type") or raw.get("type") or raw.get("kind") or "")
            text = traces.text_of(raw.get(text_key)) if raw.get(text_key) not in (None, "") else _content(raw)
        else:
            continue
        n = len(out)
        out.append(Turn(id=f"t{n}", index=n, text=text, speaker=speaker, step_type=kind,
                        agent_id=str(raw.get("agent_id") or "") if isinstance(raw, dict) else ""))
    return out


def _content(raw: Mapping[str, Any]) -> str:
    """A step's words and, for a coding agent's turn, the tools it called, one line each."""
    turn = traces.coding_turns([raw])[0]
    calls = [f"[{call['tool']}] {call['file'] or call.get('command') or ''}".rstrip() for call in turn["calls"]]
    return "\n".join([turn["text"]] * bool(turn["text"]) + calls) or traces.text_of(raw)


def _beside(drawn: list[dict[str, Any]], value: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each drawn turn with the entry of the item it was read from ({} where that is no object): a
    discussion or a dialogue draws one turn per entry."""
    raw = value if isinstance(value, list) else []
    return [(turn, raw[n] if n < len(raw) and isinstance(raw[n], dict) else {}) for n, turn in enumerate(drawn)]


def _from(raw: Mapping[str, Any]) -> dict[str, str]:
    """What a turn's own entry says of it besides its speaker and text: its kind, tool, run and ids."""
    return {"kind": str(raw.get("step_type") or ""), "tool": str(raw.get("tool") or ""),
            "run_id": str(raw.get("run_id") or ""), **_ids(raw)}


def _ids(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    return {key: str(raw[key]) for key in ID_KEYS if raw.get(key) not in (None, "")}


def _own_id(step: Mapping[str, Any]) -> str:
    for key in ID_KEYS:
        if step.get(key) not in (None, ""):
            return str(step[key])
    return ""
