"""An item's cards and an annotator's sorting of them into groups (pure): upstream's ``card_sort`` in
its closed mode, the groups the scheme's and the cards the item's list under ``items_field``.

A sorting names cards by their text, as upstream stores it (``{group: [card, ...]}``); it is checked
against the item's cards here, so a card the item lacks, or one put in two groups where a card goes
in one, is refused naming what fits.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence


class BadSort(ValueError):
    """A sorting that does not fit the item's cards; the message says why and what fits."""


def cards_of(value: Any) -> list[str]:
    """The cards of an item's list: each string as it is, an object by its ``text`` (else ``label``,
    ``name``), anything else as its JSON; a card listed twice is one card."""
    out: list[str] = []
    for card in value if isinstance(value, list) else []:
        if isinstance(card, dict):
            card = next((card[k] for k in ("text", "label", "name") if isinstance(card.get(k), str)), json.dumps(card))
        text = card if isinstance(card, str) else json.dumps(card, ensure_ascii=False)
        if text not in out:
            out.append(text)
    return out


def stored_sort(value: Mapping[str, Sequence[str]], groups: Sequence[str], cards: Sequence[str],
                multiple: bool) -> dict[str, list[str]] | None:
    """A sorting as upstream stores it, ``{group: [card, ...]}``, groups in the scheme's order and
    cards in the item's, empty groups left out; None when no card is sorted."""
    placed: dict[str, str] = {}
    for group in groups:  # in the scheme's order, so a card in two groups is named the same way each time
        for card in value.get(group, ()):
            if card not in cards:
                raise BadSort(f"this item's cards are {', '.join(map(repr, cards))}; there is no {card!r}"
                              if cards else "this item has no cards; leave the answer out")
            if card in placed and not multiple and placed[card] != group:
                raise BadSort(f"{card!r} is in {placed[card]!r} and {group!r}; a card goes in one group")
            placed.setdefault(card, group)
    out = {group: [card for card in cards if card in value.get(group, ())] for group in groups}
    return {group: listed for group, listed in out.items() if listed} or None
