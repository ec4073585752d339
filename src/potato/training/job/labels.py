"""From annotators' labels to one training target per item and schema: the majority vote.

Remote-safe and pure (no I/O): standard library only, Python 3.8.

- radio: the label most annotators chose; a tie goes to the label that sorts first, so the
  same labels always give the same target.
- multiselect: a label is on when more than half of the item's annotators (for that schema)
  chose it; the target may be the empty set.
- span: a span is in the target when more than half of the item's annotators marked it exactly
  (the same start, end and label); the target may hold no span (nothing to mark in the item).
- An annotator who answered twice counts once, with their last answer (file order).
- An item without a label for a schema is not a training example for that schema.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Dict, Iterable, Mapping, Sequence

from potato.training.job.spec import JobItem, LabelRow
from potato.training.job.schemes import Scheme
from potato.training.job.results import Label
from potato.training.job.spans import Span, majority_spans

Targets = Dict[str, Dict[str, Label]]
"""item id -> schema name -> majority label."""


@dataclass(frozen=True)
class Example:
    """A labelled item: its text (and fields) and the majority label per schema it has labels for."""

    item: JobItem
    targets: Mapping[str, Label]

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def text(self) -> str:
        return self.item.text


def majority_label(votes: Sequence[str]) -> str:
    """The most frequent label; ties go to the label that sorts first (pure)."""
    if not votes:
        raise ValueError("majority_label needs at least one vote")
    counts = Counter(votes)
    best = max(counts.values())
    return min(label for label, n in counts.items() if n == best)


def majority_set(votes: Sequence[tuple[str, ...]], order: Sequence[str] = ()) -> tuple[str, ...]:
    """Labels chosen by more than half of the annotators, in ``order`` then sorted (pure)."""
    if not votes:
        raise ValueError("majority_set needs at least one vote")
    counts = Counter(label for vote in votes for label in set(vote))
    chosen = {label for label, n in counts.items() if n * 2 > len(votes)}
    return order_labels(chosen, order)


def order_labels(labels: Iterable[str], order: Sequence[str]) -> tuple[str, ...]:
    """``labels`` in the scheme's order, labels the scheme does not list after them, sorted."""
    wanted = set(labels)
    known = [label for label in order if label in wanted]
    return tuple(known + sorted(wanted - set(order)))


def aggregate(rows: Iterable[LabelRow], schemas: Sequence[Scheme]) -> Targets:
    """Majority target per (item, schema) from every annotator's rows (pure)."""
    by_name = {s.name: s for s in schemas}
    # (item, schema) -> user -> last answer; OrderedDict keeps the items in first-seen order.
    answers: OrderedDict[tuple[str, str], dict[str, Label]] = OrderedDict()
    for row in rows:
        if row.schema in by_name:
            answers.setdefault((row.item_id, row.schema), {})[row.user] = row.label
    targets: Targets = OrderedDict()
    for (item_id, schema), per_user in answers.items():
        votes = list(per_user.values())
        spec = by_name[schema]
        target: Label
        if spec.spans:
            target = majority_spans([label_spans(v) for v in votes])
        elif spec.multiselect:
            target = majority_set([tuple(x for x in v if isinstance(x, str)) if isinstance(v, tuple) else (v,)
                                   for v in votes], spec.labels)
        else:
            target = majority_label([v for v in votes if isinstance(v, str)])
        targets.setdefault(item_id, {})[schema] = target
    return targets


def class_labels(spec: Scheme, targets: Targets) -> tuple[str, ...]:
    """The labels a model for ``spec`` chooses from: the scheme's labels, then any others seen, sorted."""
    seen: set[str] = set()
    for per_schema in targets.values():
        value = per_schema.get(spec.name)
        if value is None:
            continue
        seen.update(label_names(value))
    return tuple(spec.labels) + tuple(sorted(seen - set(spec.labels)))


def label_names(value: Label) -> tuple[str, ...]:
    """The label names in one target: the label, the chosen labels, or each span's label."""
    if isinstance(value, tuple):
        return tuple(x if isinstance(x, str) else x.label for x in value)
    return (value,)


def label_spans(value: Label) -> list[Span]:
    """A span scheme's target or prediction as plain spans (a prediction's confidences dropped); no
    span for an answer of another kind."""
    if not isinstance(value, tuple):
        return []
    return [Span(x.start, x.end, x.label, x.field) for x in value if not isinstance(x, str)]


def unknown_labels(spec: Scheme, targets: Targets) -> list[str]:
    """Labels in the targets that the scheme does not list (the worker warns about them)."""
    return [label for label in class_labels(spec, targets) if label not in spec.labels]


def examples_for(items: Sequence[JobItem], targets: Targets, ids: Iterable[str]) -> list[Example]:
    """Examples for the items in ``ids`` that have at least one target, in item order."""
    wanted = set(ids)
    return [Example(item, targets[item.id]) for item in items if item.id in wanted and item.id in targets]
