"""Spans on two fields of an item (a premise and a hypothesis, both ``span_target``), as the span-field
tests under gunicorn and in the browser write them: the fields, the items and their true spans by field."""

from __future__ import annotations

from typing import Any, Dict, List

from tests.harness.spans import PEOPLE, PLACES

FIELDS = [{"key": "premise", "type": "text", "label": "Premise", "span_target": True},
          {"key": "hypothesis", "type": "text", "label": "Hypothesis", "span_target": True}]


def pairs(n: int = 40) -> List[Dict[str, Any]]:
    """``<person> flew to <place> on Monday.`` and ``<place> is where <person> went.``"""
    return [{"id": f"p{i:03d}", "premise": f"{PEOPLE[i % len(PEOPLE)]} flew to {PLACES[i % len(PLACES)]} on Monday.",
             "hypothesis": f"{PLACES[i % len(PLACES)]} is where {PEOPLE[i % len(PEOPLE)]} went."} for i in range(n)]


def at(text: str, word: str, label: str, field: str = "") -> Dict[str, Any]:
    start = text.index(word)
    return {"start": start, "end": start + len(word), "label": label, "text": word, **({"field": field} if field else {})}


def truth(item: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Stored order: the item's own text (the premise) first, then the hypothesis, each by position."""
    premise, hypothesis = item["premise"], item["hypothesis"]
    person, place = premise.split(" ")[0], premise.split(" ")[3]
    return [at(premise, person, "PER"), at(premise, place, "LOC"),
            at(hypothesis, place, "LOC", "hypothesis"), at(hypothesis, person, "PER", "hypothesis")]
