"""Text an annotator rewrites (upstream's ``text_edit`` post-editing): the record stored for an edit,
with its edit distances counted here, never taken from the page (pure).

Upstream's page counts the distances in the browser and stores what it counted. Here the page sends
the edited text; the server reads the original from the item and counts both distances itself, so a
stored record always says what was changed, whatever sent it (a page, an import, a script).
"""

from __future__ import annotations

from typing import Any, Hashable, Mapping, Sequence

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
        raise BadEdit(f"it edits {_quoted(sent)}, but this item's text to edit is {_quoted(original)}; "
                      "edit the item's text as it is now")
    return edit_record(original, str(value["edited_text"]))


def _quoted(text: Any) -> str:
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."
