"""Data the trainers' worker tests train on, shared between their modules: synthetic reviews for the tiny
BERT (``DATA``) and sentences with their people and places marked (``sentences``)."""

from __future__ import annotations

import random
from typing import Any

from tests.unit.training.tinybert import synthetic_reviews

N = 400
DATA = synthetic_reviews(N)

ENTITIES = {"name": "names", "annotation_type": "span", "labels": ["PER", "LOC"]}
PEOPLE = ["Ada", "Grace", "Alan", "Linus", "Barbara", "Dennis", "Margaret", "Ken"]
PLACES = ["London", "Paris", "Berlin", "Oslo", "Madrid", "Vienna", "Prague", "Dublin"]
VERBS = ["met", "called", "visited", "thanked", "emailed"]


def sentences(n: int, seed: int = 0) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(id, text, spans): "<PER> <verb> <PER> in <LOC>." with the spans' offsets."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b = rng.sample(PEOPLE, 2)
        verb, place = rng.choice(VERBS), rng.choice(PLACES)
        text = f"{a} {verb} {b} in {place} on day {i}."
        spans = [{"start": 0, "end": len(a), "label": "PER"}]
        at = len(a) + len(verb) + 2
        spans.append({"start": at, "end": at + len(b), "label": "PER"})
        at = text.index(f" in {place}") + 4
        spans.append({"start": at, "end": at + len(place), "label": "LOC"})
        out.append((f"s{i:03d}", text, spans))
    return out
