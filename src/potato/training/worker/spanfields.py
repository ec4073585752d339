"""Span schemes that mark more than one field of an item (a premise and a hypothesis, a dialogue):
trained and predicted one text at a time.

A span trainer reads ``item.text`` and tags its tokens; it knows nothing of fields. So an item whose
spans lie in several fields is cut into pieces, one per field, each a plain item whose text is that
field's and whose spans are those of that field; the trainer learns from and predicts the pieces,
and each piece's predicted spans go back to their item with their field named. A model so learns
what a span looks like in any of the fields, as an annotator does, and every span trainer (light
or transformer) does this without a line of its own.

Remote-safe and pure: standard library only, Python 3.8.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from potato.training.job.spec import JobItem
from potato.training.job.labels import Example, label_spans
from potato.training.job.results import Label
from potato.training.job.schemes import Scheme
from potato.training.job.spans import MAIN, Span
from potato.training.trainers.base import Prediction

PIECE = "\x1f"
"""Between an item's id and its field in a piece's id: a character no id or field name holds."""


def marks_fields(schemas: Sequence[Scheme]) -> bool:
    """Whether a span scheme of ``schemas`` marks anything but the item's own text."""
    return any(s.spans and tuple(s.span_fields) != (MAIN,) for s in schemas)


def fields_of(schemas: Sequence[Scheme]) -> Tuple[str, ...]:
    """The fields the span schemes mark, each once, in the schemes' order; the item's own text first
    where a scheme of another kind (radio, multiselect) is trained with them: it learns the item's text."""
    out: List[str] = [] if all(s.spans for s in schemas) else [MAIN]
    for spec in schemas:
        for name in spec.span_fields if spec.spans else ():
            if name not in out:
                out.append(name)
    return tuple(out)


def piece(item: JobItem, field: str) -> JobItem:
    """``item`` as one of its fields: a plain item whose text is that field's (empty where it has none)."""
    return JobItem(item.id + PIECE + field, item.span_texts.get(field, ""), item.fields)


def split_items(items: Sequence[JobItem], fields: Sequence[str]) -> List[JobItem]:
    """Every item's pieces, the item's fields in ``fields`` order, item after item."""
    return [piece(item, name) for item in items for name in fields]


def split_examples(examples: Sequence[Example], schemas: Sequence[Scheme]) -> List[Example]:
    """The labelled pieces: for each field, each scheme that marks it with its spans there (none
    marked there is a target too: nothing to mark in that field); the item's own text keeps the
    targets of the schemes that are not span schemes."""
    out: List[Example] = []
    for example in examples:
        for name in fields_of(schemas):
            targets: Dict[str, Label] = {
                spec.name: tuple(Span(s.start, s.end, s.label) for s in label_spans(example.targets[spec.name])
                                 if s.field == name)
                for spec in schemas if spec.spans and spec.name in example.targets and name in spec.span_fields
            }
            if name == MAIN:
                targets.update({spec.name: example.targets[spec.name] for spec in schemas
                                if not spec.spans and spec.name in example.targets})
            if targets:
                out.append(Example(piece(example.item, name), targets))
    return out


def join_predictions(items: Sequence[JobItem], fields: Sequence[str], schemas: Sequence[Scheme],
                     pieces: Sequence[Dict[str, Optional[Prediction]]]) -> List[Dict[str, Optional[Prediction]]]:
    """Each item's prediction from its pieces' (in :func:`split_items` order): a scheme's spans in
    every field it marks, each span naming its field, and the mean of the pieces' confidences; a
    scheme of another kind, the prediction for the item's own text. A piece the trainer gave nothing
    for leaves the item without a prediction for that scheme."""
    if len(pieces) != len(items) * len(fields):
        raise ValueError(f"the trainer returned {len(pieces)} predictions for {len(items) * len(fields)} texts")
    out: List[Dict[str, Optional[Prediction]]] = []
    for i, _ in enumerate(items):
        per: Dict[str, Optional[Prediction]] = {}
        for spec in schemas:
            if not spec.spans:
                per[spec.name] = pieces[i * len(fields) + fields.index(MAIN)].get(spec.name)
                continue
            spans: List[Any] = []
            confidences: List[float] = []
            for j, name in enumerate(fields):
                if name not in spec.span_fields:
                    continue
                found = pieces[i * len(fields) + j].get(spec.name)
                if found is None:
                    confidences = []
                    break
                spans.extend(tuple(s)[:4] + (name,) for s in found[0])
                confidences.append(float(found[1]))
            per[spec.name] = Prediction(tuple(spans), sum(confidences) / len(confidences)) if confidences else None
        out.append(per)
    return out
