"""A question asked once per step or turn of a trace (upstream Potato's ``turn_level`` schemes).

An agent trace or a dialogue is read into turns (``potato.display.turns``); a scheme's
``turn_binding`` picks the turns it is asked on (by speaker, agent, kind of step, tool, sub-agent
run or place); its answer is one answer per turn, stored with the turn's place and text so that
what the answer was about is kept with it (a step classifier learns from exactly that). The turns
are the server's reading of the item, never the page's: an answer names a turn by its id, and the
server fills in the rest.

Standard library only and Python 3.8-safe: the job carries these schemes to training hosts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

TURN_TYPES = ("radio", "multiselect", "likert", "slider", "select", "text", "number")
"""The scheme types a turn can be asked (upstream's ``TURN_LEVEL_SUPPORTED_TYPES``)."""
PLACEMENTS = ("inline", "drawer")
"""Where ``turn_binding`` may put a question; a process reward's steps may also be listed in the
question's own box (``list``), as upstream draws them without ``inline_with_trace``."""
USER_SPEAKERS = ("user", "human")
KEPT = ("speaker", "step_type", "agent_id")
"""What a stored turn answer keeps of its turn besides its place and text (upstream keeps these three)."""


class BadTurns(ValueError):
    """An answer to a turn-level question that does not fit the item's turns; the message says why."""


@dataclass(frozen=True)
class Turn:
    """One step or turn of a trace field as the page draws it: ``index`` is its place in the drawn
    list (0-based), ``id`` the trace's own id for it (``turn_id``, ``step_id`` or ``id``) or ``t<index>``."""

    id: str
    index: int
    text: str
    speaker: str = ""
    step_type: str = ""
    agent_id: str = ""
    tool: str = ""
    run_id: str = ""

    def kept(self) -> Dict[str, Any]:
        """What a stored answer keeps of this turn."""
        out: Dict[str, Any] = {"index": self.index, "text": self.text}
        for key in KEPT:
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True)
class TurnBinding:
    """Which turns of which field a scheme is asked on; every filter given must hold (upstream's
    ``turn_binding``); none given: every turn of the field."""

    field: str
    speakers: Tuple[str, ...] = ()
    agents: Tuple[str, ...] = ()
    step_types: Tuple[str, ...] = ()
    tools: Tuple[str, ...] = ()
    runs: Tuple[str, ...] = ()
    turn_range: Optional[Tuple[int, int]] = None
    """First and last index, both included."""
    placement: str = "inline"
    """``inline``: the question under each turn; ``drawer``: behind a button on each turn."""
    label: str = ""
    """What the question is called beside each turn (``turn_label``; else the scheme's description)."""
    steps_text: Optional[str] = None
    """None: the turns are what the page draws for the display field ``field``. Else ``field`` is the
    item's key of a list of steps, each entry one turn, its text under this key (upstream's
    ``steps_key`` and ``step_text_key``)."""
    agent_only: bool = False
    """A user's turn is not asked on (it is the task, not a step the agent took)."""
    speaker_key: Optional[str] = None
    """Where a listed step names who took it (a failure attribution's ``agent_key``), before its
    ``role``, ``speaker`` or ``agent``; None: those three."""

    @property
    def source(self) -> str:
        """What an item's turns for this binding are filed under: the same field read two ways (drawn,
        or entry by entry) gives two lists."""
        if self.steps_text is None:
            return self.field
        who = f", speaker: {self.speaker_key}" if self.speaker_key else ""
        return f"{self.field} (steps, text: {self.steps_text}{who})"

    def matches(self, turn: Turn) -> bool:
        if self.agent_only and turn.speaker.lower() in USER_SPEAKERS:
            return False
        if self.speakers and turn.speaker not in self.speakers:
            return False
        if self.agents and turn.agent_id not in self.agents:
            return False
        if self.step_types and turn.step_type not in self.step_types:
            return False
        if self.tools and turn.tool not in self.tools:
            return False
        if self.runs and turn.run_id not in self.runs:
            return False
        if self.turn_range is not None and not self.turn_range[0] <= turn.index <= self.turn_range[1]:
            return False
        return True

    def bound(self, turns: Sequence[Turn]) -> List[Turn]:
        return [turn for turn in turns if self.matches(turn)]


def answer_of(entry: Any) -> Any:
    """One turn's answer from what was sent or stored: the answer itself, or a stored entry's ``value``."""
    return entry.get("value") if isinstance(entry, dict) and "value" in entry else entry


def is_empty(answer: Any) -> bool:
    return answer is None or answer == "" or answer == []


def well_formed(value: Any, accepts: Callable[[Any], bool]) -> bool:
    """Whether ``value`` is answers by turn id, each one ``accepts`` takes (pure; the turns themselves
    are checked against the item by :func:`stored_turns`)."""
    return (isinstance(value, dict) and all(isinstance(k, str) for k in value)
            and all(is_empty(answer_of(v)) or accepts(answer_of(v)) for v in value.values()))


def stored_turns(value: Mapping[str, Any], turns: Sequence[Turn], binding: TurnBinding,
                 accepts: Callable[[Any], bool], valid: str) -> Dict[str, Dict[str, Any]]:
    """``{turn id: answer}`` (or the stored shape) as it is stored: in the trace's order, each answer
    under ``value`` with its turn's place and text; turns left empty are dropped. A turn may also be
    named ``t<place>`` (as upstream names a rated dialogue turn), and is stored under its own id. :class:`BadTurns`
    names a turn the question is not asked on, or an answer it does not take (``valid``: what it takes)."""
    asked = {turn.id: turn for turn in binding.bound(turns)}
    by_place = {f"t{turn.index}": turn for turn in asked.values()}
    out: List[Tuple[int, str, Dict[str, Any]]] = []
    for turn_id, entry in value.items():
        answer = answer_of(entry)
        if is_empty(answer):
            continue
        turn = asked.get(turn_id) or by_place.get(turn_id)  # a turn with an id of its own, named by its place
        turn_id = turn.id if turn is not None else turn_id
        if turn is None:
            known = ", ".join(list(asked)[:12]) + (", ..." if len(asked) > 12 else "")
            where = f"field '{binding.field}'" if binding.steps_text is None else f"the steps under '{binding.field}'"
            raise BadTurns(f"turn {turn_id!r} is not one this question is asked on in {where} "
                           f"(its turns: {known or 'none on this item'})")
        if not accepts(answer):
            raise BadTurns(f"{short(answer)} is not an answer for turn {turn_id!r} (valid: {valid})")
        out.append((turn.index, turn_id, {"value": answer, **turn.kept()}))
    return {turn_id: entry for _, turn_id, entry in sorted(out, key=lambda x: x[0])}


def short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
