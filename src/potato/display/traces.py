"""Agent traces as item fields: upstream Potato's ``agent_trace``, ``eval_trace``, ``coding_trace``,
``multi_agent_discussion`` and ``cot_trace`` display types, read from the item as upstream's examples
write them (pure).

A trace is a list of steps. Upstream's examples write them in several shapes, all read here:

- ``{"speaker": "Agent (Action)", "text": "search(q='x')"}`` (the keys are the ``speaker_key`` and
  ``text_key`` options), the kind of step taken from ``step_type`` or else from the speaker's name;
- ``{"thought": ..., "action": ..., "observation": ...}``, one step per part (a ReAct turn; ``result``
  and ``output`` are its observation too, where upstream dropped them);
- ``{"step_type": "action", "content": ...}``;
- plain strings (a thought, an action that reads ``name(...)``, or an observation).

A coding agent's trace (``coding_trace``) is a list of turns ``{"role", "content", "tool_calls":
[{"tool", "input", "output"}]}`` (or Anthropic-style content blocks): each tool call is shown for
what it did (a file read, an edit as a diff, a shell command and its output).

Nothing here is HTML: the page draws every part with ``textContent`` (``static/traces.js``), so a
trace's text cannot run script, whatever the agent wrote.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from potato.display.fields import FieldType, media_src, register_field_type

KINDS = ("thought", "action", "observation", "system", "error")
SPEAKER_KINDS = (
    ("thought", re.compile(r"thought|reasoning|planning|think", re.I)),
    ("action", re.compile(r"action|tool|function|call|execute", re.I)),
    ("observation", re.compile(r"observation|environment|result|output|response", re.I)),
    ("system", re.compile(r"system|info|metadata", re.I)),
    ("error", re.compile(r"error|fail|exception", re.I)),
)
"""A step's kind from its speaker's name, in upstream's order (``Agent (Action)`` is an action)."""
THINKING = re.compile(r"^\s*(i need to|i should|let me think|let me|my plan|i will|i'll)\b", re.I)
CALL = re.compile(r"^\s*[A-Za-z_][\w.]*\s*\(")
PASSED_ON = ("tool", "run_id", "step_id", "turn_id", "agent_id", "role")
"""Keys of a step kept beside its text (the page shows the tool; the rest say which step it is)."""
FINAL = re.compile(r"final answer|send_message|respond|response|finish|submit|conclusion|answer", re.I)
"""A step whose speaker (or tool) says it is the agent's answer: the eval trace's third pane."""
MAX_OUTPUT_LINES = 50
EVAL_MAX_OUTPUT_LINES = 20
EVAL_PANES = ("Reasoning", "Function Calls", "Final Answer")
TOOL_KINDS = (
    ("search", ("grep", "glob", "search", "find")),
    ("read", ("read",)),
    ("edit", ("edit", "replace", "multiedit", "str_replace")),
    ("write", ("write", "create")),
    ("bash", ("bash", "terminal", "shell", "run")),
)
"""How a coding agent's tool call is shown, by the tool's name (upstream's names, any case)."""


def text_of(value: Any) -> str:
    """Any value of an item as text: a string as it is, an object or list as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2) if isinstance(value, (dict, list)) else str(value)


def kind_of_speaker(speaker: str) -> str:
    for kind, pattern in SPEAKER_KINDS:
        if pattern.search(speaker):
            return kind
    return "observation"


def kind_of_text(text: str) -> str:
    """A bare string's kind: a plan is a thought, ``name(...)`` an action, anything else what was seen."""
    if THINKING.match(text):
        return "thought"
    return "action" if CALL.match(text) else "observation"


def _action_text(action: Any) -> str:
    """An action as the agent called it: ``tool(key='value')`` from ``{"tool", "params"}``."""
    if isinstance(action, dict) and (action.get("tool") or action.get("name")):
        params = action.get("params", action.get("parameters", action.get("args", action.get("input"))))
        if isinstance(params, dict):
            inner = ", ".join(f"{k}={v!r}" for k, v in params.items())
        else:
            inner = "" if params is None else text_of(params)
        return f"{action.get('tool') or action.get('name')}({inner})"
    return text_of(action)


def _step(kind: str, speaker: str, text: str, source: Mapping[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind if kind in KINDS else "observation", "speaker": speaker, "text": text}
    for key in PASSED_ON:
        if source is not None and source.get(key) not in (None, ""):
            out[key] = text_of(source[key])
    if source is not None:
        if source.get("timestamp") not in (None, ""):
            out["timestamp"] = text_of(source["timestamp"])
        if isinstance(source.get("screenshot"), str) and source["screenshot"].strip():
            out["screenshot"] = source["screenshot"].strip()
    return out


def trace_steps(value: Any, speaker_key: str = "speaker", text_key: str = "text") -> list[dict[str, Any]]:
    """A trace's steps as ``{"kind", "speaker", "text"}`` (and ``tool``, ``timestamp``, ``screenshot``
    and the step's ids where it has them), from any of the shapes the module's docstring names. A
    step none of them fits is shown as its JSON rather than dropped."""
    if isinstance(value, str):
        return [_step("observation", "", value)] if value.strip() else []
    if isinstance(value, dict):
        for key in ("steps", "trace", "conversation", "turns", "messages"):
            if isinstance(value.get(key), list):
                return trace_steps(value[key], speaker_key, text_key)
        value = [value]
    if not isinstance(value, list):
        return []
    out: list[dict[str, Any]] = []
    for raw in value:
        if isinstance(raw, str):
            out.append(_step(kind_of_text(raw), "", raw))
        elif not isinstance(raw, dict):
            out.append(_step("observation", "", text_of(raw)))
        elif speaker_key in raw and (text_key in raw or "content" in raw):
            speaker = text_of(raw[speaker_key])
            kind = str(raw.get("step_type") or raw.get("type") or "") or kind_of_speaker(speaker)
            if kind not in KINDS:
                kind = kind_of_speaker(speaker)
            out.append(_step(kind, speaker, text_of(raw.get(text_key, raw.get("content"))), raw))
        elif any(k in raw for k in ("thought", "action", "observation", "result", "output")):
            agent = text_of(raw.get(speaker_key) or raw.get("agent") or "")
            who = f"{agent} " if agent else "Agent "
            if raw.get("thought") not in (None, ""):
                out.append(_step("thought", f"{who}(Thought)", text_of(raw["thought"]), raw))
            if raw.get("action") not in (None, ""):
                action = raw["action"]
                step = _step("action", f"{who}(Action)", _action_text(action), raw)
                if isinstance(action, dict) and (action.get("tool") or action.get("name")):
                    step["tool"] = text_of(action.get("tool") or action.get("name"))
                out.append(step)
            for key in ("observation", "result", "output"):
                if raw.get(key) not in (None, ""):
                    out.append(_step("observation", "Environment", text_of(raw[key]), raw))
        elif raw.get("step_type") or raw.get("type"):
            kind = str(raw.get("step_type") or raw.get("type"))
            out.append(_step(kind, text_of(raw.get(speaker_key) or kind.capitalize()),
                             text_of(raw.get("content", raw.get(text_key, ""))), raw))
        elif text_key in raw or "content" in raw:
            text = text_of(raw.get(text_key, raw.get("content")))
            out.append(_step(kind_of_text(text), "", text, raw))
        else:
            out.append(_step("observation", "", text_of(raw), raw))
    return out


def _media_src(value: str, media_url: str) -> str | None:
    """Where the page loads a screenshot from: an http(s) address as it is, a file under
    ``media_directory`` from the media route; None for anything else (it is then named, not shown)."""
    return media_src(value, media_url)[0] or None


def _options_steps(value: Any, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    return trace_steps(value, str(options.get("speaker_key") or "speaker"), str(options.get("text_key") or "text"))


def agent_trace(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    """The steps one under another, each marked with its kind; thoughts and actions numbered."""
    steps = _options_steps(value, options)
    numbered = options.get("show_step_numbers", True) is not False
    count = 0
    for step in steps:
        if numbered and step["kind"] in ("thought", "action"):
            count += 1
            step["number"] = count
        shot = step.pop("screenshot", None)
        if shot and options.get("show_screenshots", True) is not False:
            src = _media_src(shot, media_url)
            step["screenshot"] = {"src": src, "name": shot} if src else {"name": shot}
        if options.get("show_timestamps") is not True:
            step.pop("timestamp", None)
    summary = None
    if options.get("show_summary", True) is not False:
        summary = {kind: sum(1 for s in steps if s["kind"] == kind) for kind in ("thought", "action", "observation")}
        summary["steps"] = len(steps)
    return {"steps": steps, "summary": summary, "collapse": options.get("collapse_observations") is True}


def _lines_limit(options: Mapping[str, Any], default: int) -> int:
    """How many lines of a tool's output show before the rest folds away (0: never folded)."""
    if options.get("collapse_long_outputs", True) is False:
        return 0
    value = options.get("max_output_lines", default)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def eval_trace(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    """The trace in three panes side by side: the agent's reasoning, its function calls with what
    each returned, and its final answer; a step in one pane belongs to a numbered group, and the
    group is lit in every pane when one of its steps is chosen (``link_steps``)."""
    steps = _options_steps(value, options)
    answer_at = next((i for i in range(len(steps) - 1, -1, -1)
                      if FINAL.search(steps[i]["speaker"]) or FINAL.search(steps[i].get("tool", ""))), None)
    if answer_at is None:
        answer_at = next((i for i in range(len(steps) - 1, -1, -1) if steps[i]["kind"] == "action"), None)
    answer = steps[answer_at]["text"] if answer_at is not None else None
    groups: list[dict[str, Any]] = []

    def current(new: bool = False) -> dict[str, Any]:
        if new or not groups:
            groups.append({"reasoning": [], "calls": []})
        return groups[-1]

    for i, step in enumerate(steps):
        if i == answer_at:
            continue
        if step["kind"] in ("thought", "system", "error"):
            group = current(new=bool(groups and groups[-1]["calls"]))
            group["reasoning"].append({"kind": step["kind"], "text": step["text"]})
        elif step["kind"] == "action":
            name = step.get("tool") or step["text"].split("(", 1)[0].strip()[:60]
            current()["calls"].append({"name": name, "call": step["text"], "results": []})
        else:
            calls = current()["calls"]
            if calls:
                calls[-1]["results"].append(step["text"])
            else:
                calls.append({"name": "", "call": "", "results": [step["text"]]})
    raw_labels = options.get("pane_labels")
    labels = [str(x) for x in raw_labels][:3] if isinstance(raw_labels, list) else []
    labels += list(EVAL_PANES[len(labels):])
    return {"groups": groups, "answer": answer, "panes": labels,
            "numbered": options.get("show_step_numbers", True) is not False,
            "link": options.get("link_steps", True) is not False,
            "max_lines": _lines_limit(options, EVAL_MAX_OUTPUT_LINES)}


def tool_kind(name: str) -> str:
    lowered = name.lower()
    for kind, names in TOOL_KINDS:
        if lowered in names:
            return kind
    return "generic"


def _diff(old: str, new: str) -> list[list[str]]:
    """An edit as the lines it took out and put in (upstream shows the two strings, not a computed diff)."""
    return [["-", line] for line in old.split("\n")] + [["+", line] for line in new.split("\n")]


def _call(raw: Mapping[str, Any]) -> dict[str, Any]:
    name = text_of(raw.get("tool") or raw.get("name") or "tool")
    given = raw.get("input", raw.get("args", raw.get("arguments", raw.get("params"))))
    if isinstance(given, str):
        try:
            parsed = json.loads(given)
            given = parsed if isinstance(parsed, dict) else given
        except ValueError:
            pass
    args = given if isinstance(given, dict) else {}
    output = text_of(raw.get("output", raw.get("result", "")))
    kind = tool_kind(name)
    path = text_of(args.get("file_path") or args.get("path") or args.get("pattern") or "")
    out: dict[str, Any] = {"kind": kind, "tool": name, "file": path, "output": output}
    if kind == "edit" and ("old_string" in args or "new_string" in args):
        out["diff"] = _diff(text_of(args.get("old_string", "")), text_of(args.get("new_string", "")))
    elif kind == "write":
        out["content"] = text_of(args.get("content", ""))
    elif kind == "bash":
        out["command"] = text_of(args.get("command", args.get("cmd", "")))
    elif kind == "generic" or not args:
        out["input"] = text_of(given)
    if kind in ("edit", "write", "bash") and not (out.get("diff") or out.get("content") or out.get("command")):
        out["input"] = text_of(given)
    return out


def coding_turns(value: Any) -> list[dict[str, Any]]:
    """A coding agent's turns as ``{"role", "text", "calls"}``: ``content`` as text or as content
    blocks (text blocks joined, ``tool_use`` blocks read as calls when the turn names none)."""
    turns = value if isinstance(value, list) else [value] if value is not None else []
    out: list[dict[str, Any]] = []
    for raw in turns:
        if isinstance(raw, str):
            out.append({"role": "user", "text": raw, "calls": []})
            continue
        if not isinstance(raw, dict):
            continue
        content = raw.get("content", raw.get("reasoning", raw.get("text", "")))
        calls_raw = raw.get("tool_calls")
        if isinstance(content, list):
            blocks = [b for b in content if isinstance(b, dict)]
            text = "\n".join(text_of(b.get("text")) for b in blocks if b.get("type") == "text")
            if not isinstance(calls_raw, list):
                calls_raw = [{"tool": b.get("name"), "input": b.get("input")} for b in blocks
                             if b.get("type") == "tool_use"]
        else:
            text = text_of(content)
        calls = [_call(c) for c in calls_raw if isinstance(c, dict)] if isinstance(calls_raw, list) else []
        out.append({"role": "user" if str(raw.get("role", "assistant")).lower() in ("user", "human") else "assistant",
                    "text": text, "calls": calls})
    return out


FILE_OPS = {"read": "R", "edit": "E", "write": "W", "search": "S", "bash": "B"}


def coding_trace(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    """Each assistant turn's reasoning and tool calls as what they did: a file read as numbered
    lines, an edit as the lines out and in, a shell command and its output, anything else as its
    input and output; long outputs fold away; a list of the files the agent touched beside it."""
    turns = coding_turns(value)
    numbered = options.get("show_step_numbers", True) is not False
    step = 0
    for turn in turns:
        if turn["role"] == "assistant":
            step += 1
            if numbered:
                turn["number"] = step
            if options.get("show_reasoning", True) is False:
                turn["text"] = ""
    files: list[dict[str, str]] = []
    if options.get("show_file_tree", True) is not False:
        seen: dict[str, str] = {}
        for turn in turns:
            for call in turn["calls"]:
                if call["file"] and call["kind"] in ("read", "edit", "write"):
                    op = FILE_OPS[call["kind"]]
                    seen[call["file"]] = seen.get(call["file"], "") + ("" if op in seen.get(call["file"], "") else op)
        files = [{"path": path, "ops": ops} for path, ops in seen.items()]
    return {"turns": turns, "files": files, "max_lines": _lines_limit(options, MAX_OUTPUT_LINES)}


def discussion(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    """Several agents talking: each turn with its agent (its colour kept from turn to turn), its role
    and whom it addresses; a reply (``reply_to``) set in under the turn it answers; a legend whose
    agents can be hidden and shown again (``show_legend``); the environment's turns folded away
    (``collapse_environment``)."""
    speaker_key, text_key = str(options.get("speaker_key") or "speaker"), str(options.get("text_key") or "text")
    raw_turns = value if isinstance(value, list) else (
        [line for line in value.split("\n") if line.strip()] if isinstance(value, str) else [])
    turns: list[dict[str, Any]] = []
    agents: list[str] = []
    for n, raw in enumerate(raw_turns):
        if isinstance(raw, dict):
            speaker, text = text_of(raw.get(speaker_key, "")), text_of(raw.get(text_key, raw.get("content", "")))
            agent = text_of(raw.get("agent_id") or speaker)
        else:
            speaker, _, text = text_of(raw).partition(": ") if ": " in text_of(raw) else ("", "", text_of(raw))
            agent, raw = speaker, {}
        if agent and agent not in agents:
            agents.append(agent)
        turn: dict[str, Any] = {"speaker": speaker, "text": text, "agent": agent,
                                "colour": agents.index(agent) % 6 if agent else None}
        for key in ("role", "addressee"):
            if raw.get(key) not in (None, "") and (key != "addressee" or options.get("show_addressees", True) is not False):
                turn[key] = text_of(raw[key])
        if raw.get("reply_to") not in (None, "") and options.get("thread_replies", True) is not False:
            turn["reply"] = True
        if options.get("show_turn_numbers") is True:
            turn["number"] = n + 1
        turn["fold"] = (options.get("collapse_environment") is True and not raw.get("agent_id")
                        and speaker.strip().lower() in ("environment", "system"))
        turns.append(turn)
    legend = agents if options.get("show_legend", True) is not False and len(agents) > 1 else []
    return {"turns": turns, "legend": legend}


def segmented(value: Any, text_key: str = "text") -> bool:
    """Whether a chain of thought is upstream's segmented form (``{"index", "text", "type"}`` steps,
    each step one entry) rather than a trace."""
    return (isinstance(value, list) and bool(value) and all(isinstance(s, dict) and text_key in s for s in value)
            and not any("speaker" in s or "step_type" in s for s in value))


def cot_trace(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    """A chain of thought as numbered steps: upstream's segmented form (``{"index", "text",
    "type"}``) or any trace; a step longer than ``clamp_lines`` lines folds after them
    (``collapse_long_steps``)."""
    text_key = str(options.get("text_key") or "text")
    if segmented(value, text_key):
        steps = [{"kind": str(s.get("type") or "thought"), "speaker": "", "text": text_of(s[text_key])} for s in value]
    else:
        steps = _options_steps(value, options)
    clamp = options.get("clamp_lines", 12)
    limit = 0 if options.get("collapse_long_steps", True) is False else (
        clamp if isinstance(clamp, int) and not isinstance(clamp, bool) and clamp > 0 else 12)
    return {"steps": [{"kind": s["kind"], "label": (s["speaker"] or s["kind"].capitalize())
                       if options.get("show_types", True) is not False else "", "text": s["text"]} for s in steps],
            "numbered": options.get("show_step_numbers", True) is not False, "max_lines": limit}


def run_tree(nodes: Any, steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """An item's tree of sub-agent runs (upstream's ``run_tree``: nodes with ``id``, ``parent_id``,
    ``name``, ``run_type``, ``status`` and ``turn_range``) in reading order, each node with its depth
    and the places of the ``steps`` its run and the runs under it took: those whose ``run_id`` is one
    of them, else (a trace naming no runs) those within its ``turn_range``. A node whose parent is not
    in the tree is a root; nodes that are not objects with an id are left out."""
    listed = [n for n in (nodes if isinstance(nodes, list) else []) if isinstance(n, dict) and n.get("id") not in (None, "")]
    known = {str(n["id"]) for n in listed}
    children: dict[str, list[Mapping[str, Any]]] = {}
    roots: list[Mapping[str, Any]] = []
    for n in listed:
        parent = n.get("parent_id")
        (children.setdefault(str(parent), []) if parent is not None and str(parent) in known and str(parent) != str(n["id"])
         else roots).append(n)
    by_run = any(s.get("run_id") for s in steps)
    out: list[dict[str, Any]] = []

    def visit(node: Mapping[str, Any], depth: int, seen: frozenset[str]) -> set[int]:
        node_id = str(node["id"])
        at = len(out)
        out.append({})
        places: set[int] = set()
        for child in children.get(node_id, []):
            if str(child["id"]) not in seen:
                places |= visit(child, depth + 1, seen | {str(child["id"])})
        span = node.get("turn_range")
        lo, hi = (span if isinstance(span, list) and len(span) == 2 and all(isinstance(v, int) for v in span) else (None, None))
        if by_run:
            places |= {i for i, s in enumerate(steps) if str(s.get("run_id", "")) == node_id}
        elif lo is not None and hi is not None:
            places |= {i for i in range(len(steps)) if lo <= i <= hi}
        out[at] = {"id": node_id, "name": text_of(node.get("name") or node.get("run_type") or "run"),
                   "type": text_of(node.get("run_type") or ""), "status": text_of(node.get("status") or ""),
                   "depth": depth, "steps": sorted(places),
                   "range": "" if lo is None or hi is None else f"step {lo}" if lo == hi else f"steps {lo}\u2013{hi}"}
        return places

    for root in roots:
        visit(root, 0, frozenset({str(root["id"])}))
    return out


def trace_text(value: Any, options: Mapping[str, Any]) -> str:
    """A trace as plain text, one step per line (what an export or a model reads of it)."""
    return "\n".join(f"{s['speaker']}: {s['text']}" if s["speaker"] else s["text"] for s in _options_steps(value, options))


_SPEAKERS = frozenset({"speaker_key", "text_key"})
_LOOKS = frozenset({"compact", "step_type_colors"})

for _kind in (
        FieldType("agent_trace", agent_trace,
                  honoured=_SPEAKERS | {"show_step_numbers", "show_summary", "show_timestamps", "collapse_observations",
                                        "show_screenshots", "show_run_tree"},
                  looks=_LOOKS),
        FieldType("eval_trace", eval_trace,
                  honoured=_SPEAKERS | {"pane_labels", "show_step_numbers", "collapse_long_outputs", "max_output_lines",
                                        "link_steps"},
                  looks=frozenset({"compact"})),
        FieldType("coding_trace", coding_trace,
                  honoured=frozenset({"show_file_tree", "collapse_long_outputs", "max_output_lines",
                                      "show_step_numbers", "show_reasoning"}),
                  looks=frozenset({"diff_view", "terminal_theme", "show_tool_badges", "compact"})),
        FieldType("multi_agent_discussion", discussion,
                  honoured=_SPEAKERS | {"show_turn_numbers", "show_legend", "show_addressees", "thread_replies",
                                        "collapse_environment"}),
        FieldType("cot_trace", cot_trace,
                  honoured=_SPEAKERS | {"show_step_numbers", "show_types", "collapse_long_steps", "clamp_lines"},
                  looks=_LOOKS | {"show_rail"})):
    register_field_type(_kind)

