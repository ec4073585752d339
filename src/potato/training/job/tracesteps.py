"""A question asked on each step of a trace, learnt as a step classifier (a process reward model).

Every text trainer classifies an item's text; a step is not an item. So the server writes each
asked step of each trace into the bundle as an item of its own: its id is the trace's id and the
step's joined by :data:`STEP`, its text the step with the trace before it as context, and its
fields name the trace and the step's place. The step answers become plain labels on those items.
Any trainer that learns radio or multiselect answers (sklearn-text, hf-text-classification,
hf-llm-classification with LoRA on 4-bit weights, llm-zero-shot) then learns and predicts steps
without a line of its own, on every backend; the holdout is drawn by trace, so no step of a held-out
trace is trained on, and the worker scores a trace as well as its steps (:func:`first_error_found`).

Remote-safe and pure: standard library only, Python 3.8.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

STEP = "\x1e"
"""Between a trace's id, its steps' source and its step's id in a step item's id: a character no id holds."""
TRACE_FIELD = "trace"
"""A step item's field: the id of the trace it is a step of."""
PLACE_FIELD = "place"
"""A step item's field: its place in the trace (0-based, as the page numbers steps from 1)."""
STEP_FIELD = "step"
"""A step item's field: the step's own id in the trace (what an answer names it by)."""


def step_id(trace_id: str, source: str, turn_id: str) -> str:
    """A step item's id: the trace, what its steps were read from (a field: two questions on two
    fields of one trace may both have a step ``t0``) and the step."""
    return STEP.join((trace_id, source, turn_id))


def split_step_id(item_id: str) -> Optional[Tuple[str, str, str]]:
    """(trace id, source, step id) of a step item's id; None for an item's own id."""
    parts = item_id.split(STEP)
    if len(parts) != 3:
        return None
    return parts[0], parts[1], parts[2]


def step_text(step: str, before: Sequence[str], context_chars: int) -> str:
    """What a step classifier reads for one step: the step first, then the turns before it, the
    nearest first, up to ``context_chars`` characters of them. The step leads because every trainer
    cuts a long text at its end: what is judged must survive the cut, and the turn just before a
    step says more about it than the task at the trace's start."""
    parts = [step]
    used = 0
    for turn in reversed(before):
        if used >= context_chars:
            break
        piece = turn if used + len(turn) <= context_chars else turn[:context_chars - used] + "..."
        parts.append(("Before it:\n" if len(parts) == 1 else "") + piece)
        used += len(piece)
    return "\n\n".join(parts)


def first_error(steps: Iterable[Tuple[int, Any]], mistakes: Sequence[str]) -> Optional[int]:
    """The place of the first step whose label is a mistake; None when no step is one."""
    wrong = [place for place, label in steps if label in mistakes]
    return min(wrong) if wrong else None


def first_error_found(truth: Mapping[str, Mapping[int, Any]], predicted: Mapping[str, Mapping[int, Any]],
                      mistakes: Sequence[str]) -> Tuple[float, int]:
    """How often the model finds a trace's first error exactly (the same step, or no error where the
    trace has none), over the traces of ``truth`` (trace -> place -> label of its labelled steps),
    judged on those labelled steps only; and how many traces that is."""
    traces = [t for t in truth if truth[t]]
    if not traces:
        return 0.0, 0
    hits = 0
    for trace in traces:
        places = truth[trace]
        said = predicted.get(trace, {})
        hits += first_error(places.items(), mistakes) == first_error(
            ((p, said.get(p)) for p in places), mistakes)
    return hits / len(traces), len(traces)


def by_trace(values: Mapping[str, Any], places: Mapping[str, Tuple[str, int]]) -> Dict[str, Dict[int, Any]]:
    """Step items' values (by step item id) regrouped by trace and place; ids not in ``places`` are
    left out (items of their own)."""
    out: Dict[str, Dict[int, Any]] = {}
    for item_id, value in values.items():
        where = places.get(item_id)
        if where is not None:
            out.setdefault(where[0], {})[where[1]] = value
    return out


def from_first_error(places: List[int], first: Optional[int], right: str, wrong: str) -> Dict[int, str]:
    """Every step's label when ``first`` is the first wrong one: right before it, wrong from it on
    (a process reward's first_error mode); all right when there is none."""
    return {place: (wrong if first is not None and place >= first else right) for place in places}
