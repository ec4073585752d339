"""Text an annotator rewrites (upstream's ``text_edit`` post-editing, and its ``trajectory_edit``
correcting the steps of an agent's trace): the record stored for an edit, with its edit distances
counted here, never taken from the page (pure).

Upstream's page counts the distances in the browser and stores what it counted. Here the page sends
the edited text; the server reads the original from the item and counts both distances itself, so a
stored record always says what was changed, whatever sent it (a page, an import, a script).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Hashable, Mapping, Optional, Sequence, Tuple

from potato.training.job.turns import short


class BadEdit(ValueError):
    """An edit that does not fit its item; the message says why and what fits."""


def edit_distance(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Levenshtein distance (insertions, deletions, substitutions) between two sequences of characters
    or words. Hyyrö's bit-parallel form of Myers' algorithm: one pass over ``b`` with ``len(a)``-bit
    integers, so a long text (a page of post-editing) is counted in milliseconds, not the seconds the
    cell-by-cell table takes in Python."""
    if not a or not b:
        return len(a) + len(b)
    m = len(a)
    masks: dict[Hashable, int] = {}
    for i, symbol in enumerate(a):
        masks[symbol] = masks.get(symbol, 0) | (1 << i)
    full, top = (1 << m) - 1, 1 << (m - 1)
    plus, minus, score = full, 0, m
    for symbol in b:
        eq = masks.get(symbol, 0)
        xv = eq | minus
        xh = (((eq & plus) + plus) ^ plus) | eq
        up = minus | (~(xh | plus) & full)
        down = plus & xh
        if up & top:
            score += 1
        elif down & top:
            score -= 1
        up = ((up << 1) | 1) & full
        down = (down << 1) & full
        plus = (down | ~(xv | up)) & full
        minus = up & xv
    return score


def words(text: str) -> list[str]:
    """The words the word distance counts: the text split at whitespace, as upstream's page splits it."""
    return text.split()


def edit_record(original: str, edited: str) -> dict[str, Any]:
    """The stored record of ``original`` rewritten as ``edited``, both distances counted."""
    return {"edited_text": edited, "original_text": original,
            "edit_distance_chars": edit_distance(original, edited),
            "edit_distance_words": edit_distance(words(original), words(edited))}


def stored_edit(value: Mapping[str, Any], original: str) -> dict[str, Any]:
    """An edit of the item's ``original`` as it is stored; :class:`BadEdit` when it names another original
    (an export of an item whose text has changed since: the edit was of a text this item no longer has)."""
    sent = value.get("original_text")
    if sent is not None and sent != original:
        raise BadEdit(f"it edits {short(sent)}, but this item's text to edit is {short(original)}; "
                      "edit the item's text as it is now")
    return edit_record(original, str(value["edited_text"]))


@dataclass(frozen=True)
class Originals:
    """What an item gives an edit scheme to rewrite: its text (a text edit), or the fields of its steps
    and its final answer (a trajectory edit), as the page shows them and the server checks edits against."""

    text: str = ""
    steps: Tuple[Tuple[int, str, str], ...] = ()
    """Each editable field of each step: (the step's place, the field, its text)."""
    final_answer: Optional[str] = None
    """The item's final answer where it is edited too; None: not edited, or the item has none."""
    thoughts: Tuple[Tuple[int, str], ...] = ()
    """A step's thought shown above its editors (where the thought itself is not edited)."""
    trajectory: bool = False
    """A trajectory edit's (steps and final answer), not a text edit's (text)."""

    def shown(self) -> dict[str, Any]:
        """What the page gets: the text, or the steps' fields to edit, their thoughts and the final answer."""
        if not self.trajectory:
            return {"text": self.text}
        return {"steps": [{"step": step, "field": field, "original": text} for step, field, text in self.steps],
                "thoughts": {str(step): text for step, text in self.thoughts}, "final_answer": self.final_answer}


def _field_text(value: Any) -> str:
    """A step's field as the page edits it: its text, else compact JSON (as upstream's page writes it)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def trajectory_originals(data: Mapping[str, Any], steps_key: str, text_key: str, fields: Sequence[str],
                         final_key: Optional[str]) -> Originals:
    """The fields a trajectory edit rewrites on an item: each of ``fields`` a step has (a step that is
    a plain string is its ``text_key``), and the final answer under ``final_key`` where it is edited
    and the item has one."""
    steps = data.get(steps_key)
    found: list[Tuple[int, str, str]] = []
    thoughts: list[Tuple[int, str]] = []
    for n, step in enumerate(steps if isinstance(steps, list) else []):
        for name in fields:
            if isinstance(step, str) and name == text_key:
                found.append((n, name, step))
            elif isinstance(step, dict) and name in step:
                found.append((n, name, _field_text(step[name])))
        if isinstance(step, dict) and step.get("thought") and "thought" not in fields:
            thoughts.append((n, _field_text(step["thought"])))
    final = data.get(final_key) if final_key else None
    return Originals(steps=tuple(found), thoughts=tuple(thoughts), trajectory=True,
                     final_answer=None if final is None else _field_text(final))


def stored_trajectory_edit(value: Mapping[str, Any], originals: Originals) -> dict[str, Any]:
    """A trajectory edit as upstream stores it, counted here from the item's originals: each field
    rewritten (in step order, with whether it changed, both distances and the reason given), the final
    answer, how many were changed and their characters changed together. :class:`BadEdit` names a
    step or field the item does not have, or an original that is not the item's."""
    known = {(step, field): text for step, field, text in originals.steps}
    entries: dict[Tuple[int, str], dict[str, Any]] = {}
    for entry in value.get("steps") or []:
        place = (entry["step_index"], entry["field"])
        if place not in known:
            fields = sorted({field for _, field, _ in originals.steps})
            raise BadEdit(f"step {place[0] + 1} has no {place[1]!r} to edit (this item's steps are edited in: "
                          f"{', '.join(fields) or 'nothing'})")
        if place in entries:
            raise BadEdit(f"step {place[0] + 1}'s {place[1]!r} is edited twice; send it once")
        record = stored_edit(entry, known[place])
        entries[place] = {"step_index": place[0], "field": place[1], "original_text": record["original_text"],
                          "edited_text": record["edited_text"], "edited": record["edited_text"] != record["original_text"],
                          "edit_distance_chars": record["edit_distance_chars"],
                          "edit_distance_words": record["edit_distance_words"], "reason": entry.get("reason") or ""}
    final: Optional[dict[str, Any]] = None
    if value.get("final_answer") is not None:
        if originals.final_answer is None:
            raise BadEdit("this item has no final answer to edit; leave final_answer out")
        record = stored_edit(value["final_answer"], originals.final_answer)
        final = {"original_text": record["original_text"], "edited_text": record["edited_text"],
                 "edited": record["edited_text"] != record["original_text"],
                 "edit_distance_chars": record["edit_distance_chars"], "edit_distance_words": record["edit_distance_words"]}
    changed = [e for e in entries.values() if e["edited"]] + ([final] if final and final["edited"] else [])
    return {"steps": [entries[place] for place in sorted(entries)], "final_answer": final,
            "n_steps_edited": len(changed), "total_edit_distance": sum(e["edit_distance_chars"] for e in changed)}


def stored_any_edit(scheme: Any, value: Mapping[str, Any], originals: Originals) -> dict[str, Any]:
    """An edit stored for its scheme (a :class:`potato.training.job.schemes.Scheme` with ``edit_source``
    or ``edit_steps``): a text edit or a trajectory edit."""
    if scheme.edit_steps is not None:
        return stored_trajectory_edit(value, originals)
    return stored_edit(value, originals.text)


def unexplained(record: Mapping[str, Any]) -> list[str]:
    """The edits of a trajectory edit that change a field and give no reason ("step 2's action")."""
    return [f"step {e['step_index'] + 1}'s {e['field']}" for e in record.get("steps", [])
            if e.get("edited") and not str(e.get("reason", "")).strip()]
