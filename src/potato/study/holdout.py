"""The control group of AI help (``ai_support.assist_holdout``), the pure part: who is in it, and how
the two groups' labels compare.

AI help sways labels: annotators shown a model's pick agree with it more often, whether or not it is
right. A random share of annotators (the control group) sees no help at all; comparing the groups on
the same questions says how much. Three figures per group, each a proportion with how many cases it
stands on and a 95% Wilson interval:

- agreement with the AI: labels equal to one of the options the help shows (or would have shown,
  for the control group) on that item;
- agreement with reference answers: labels equal to the answer imported for that item (``potato
  import-labels``: an expert's, a gold set's);
- agreement between annotators: pairs of the group's annotators on the same item who gave the same
  answer (pairs on one item are not independent: the interval is narrower than it should be).

Single-choice questions only (radio): a pick is one option, so agreeing is plain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

HELPED = "helped"
CONTROL = "control"
GROUPS = (HELPED, CONTROL)
Z95 = 1.959963984540054


def draw(share: float, uniform: float) -> str:
    """The group of a new annotator, from a uniform number in [0, 1): control with chance ``share``."""
    return CONTROL if uniform < share else HELPED


@dataclass(frozen=True)
class Proportion:
    """``agree`` of ``cases``, with its 95% Wilson interval (sound for small counts and near 0 or 1)."""

    agree: int
    cases: int

    @property
    def rate(self) -> float | None:
        return self.agree / self.cases if self.cases else None

    @property
    def interval(self) -> tuple[float, float] | None:
        if not self.cases:
            return None
        n, p = self.cases, self.agree / self.cases
        centre = (p + Z95 ** 2 / (2 * n)) / (1 + Z95 ** 2 / n)
        half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / (1 + Z95 ** 2 / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def to_json(self) -> dict[str, Any]:
        low_high = self.interval
        return {"agree": self.agree, "cases": self.cases,
                "rate": None if self.rate is None else round(self.rate, 4),
                "ci95": None if low_high is None else [round(low_high[0], 4), round(low_high[1], 4)]}


@dataclass
class GroupFigures:
    annotators: set[str] = field(default_factory=set)
    labels: int = 0
    with_ai: Proportion = Proportion(0, 0)
    with_reference: Proportion = Proportion(0, 0)
    between: Proportion = Proportion(0, 0)

    def to_json(self) -> dict[str, Any]:
        return {"annotators": len(self.annotators), "labels": self.labels, "with_ai": self.with_ai.to_json(),
                "with_reference": self.with_reference.to_json(), "between_annotators": self.between.to_json()}


Answer = tuple[str, str, str, Any]
"""(user, item_id, schema, value) of one human label."""


def compare(answers: Iterable[Answer], groups: Mapping[str, str], picks: Mapping[tuple[str, str], Iterable[str]],
            reference: Mapping[tuple[str, str], Any], schemas: Iterable[str]) -> dict[str, GroupFigures]:
    """Each group's figures over ``schemas`` (single-choice): ``picks`` are the options the help shows
    per (item, schema), ``reference`` the imported answer per (item, schema). Annotators with no
    group (signed in before the holdout was set) are left out."""
    wanted = set(schemas)
    out = {group: GroupFigures() for group in GROUPS}
    ai = {group: [0, 0] for group in GROUPS}
    ref = {group: [0, 0] for group in GROUPS}
    by_item: dict[tuple[str, str, str], dict[str, int]] = {}
    for user, item_id, schema, value in answers:
        group = groups.get(user)
        if group not in out or schema not in wanted or not isinstance(value, str):
            continue
        figures = out[group]
        figures.annotators.add(user)
        figures.labels += 1
        pick = picks.get((item_id, schema))
        if pick is not None:
            ai[group][0] += value in set(pick)
            ai[group][1] += 1
        if (item_id, schema) in reference:
            ref[group][0] += value == reference[(item_id, schema)]
            ref[group][1] += 1
        counts = by_item.setdefault((group, item_id, schema), {})
        counts[value] = counts.get(value, 0) + 1
    pairs = {group: [0, 0] for group in GROUPS}
    for (group, _, _), counts in by_item.items():
        n = sum(counts.values())
        pairs[group][0] += sum(c * (c - 1) // 2 for c in counts.values())
        pairs[group][1] += n * (n - 1) // 2
    for group, figures in out.items():
        figures.with_ai = Proportion(*ai[group])
        figures.with_reference = Proportion(*ref[group])
        figures.between = Proportion(*pairs[group])
    return out


def agreed_reference(imported: Iterable[tuple[str, str, Any]]) -> dict[tuple[str, str], Any]:
    """The reference answer per (item, schema) from imported labels; where imports disagree, none."""
    seen: dict[tuple[str, str], Any] = {}
    split: set[tuple[str, str]] = set()
    for item_id, schema, value in imported:
        key = (item_id, schema)
        if key in seen and seen[key] != value:
            split.add(key)
        seen.setdefault(key, value)
    return {key: value for key, value in seen.items() if key not in split and isinstance(value, str)}
