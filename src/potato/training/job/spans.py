"""Spans of an item's text: what a stored span must be, BIO tags for token classification, spans
back from predicted tags, and the entity-level holdout score.

Remote-safe and pure: standard library only, Python 3.8. Offsets are character offsets into the
item's text exactly as the annotator saw it (Python string indices, so code points), the end
exclusive: ``text[start:end]`` is the span's text.

A project may mark spans on more than one field of an item (a premise and a hypothesis): then a
span names its ``field``, and its offsets count in that field's text. The empty field, which a
stored span leaves out, is the item's own text (``item_properties.text_key``), so the spans of a
project that marks only its text look as they always did.

The score is CoNLL's exact match, as seqeval computes it in its default mode: a predicted span
counts only when its start, end and label all equal those of a true span; precision, recall and F1
per label and micro-averaged over all spans; precision with nothing predicted, or recall with
nothing true, is 0. Tags are read as seqeval reads them too: an ``I-`` tag after ``O`` or after
another label starts a span, as a ``B-`` tag does.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from potato.errors import PotatoError

OUTSIDE = "O"
TOKEN = re.compile(r"\w+|[^\w\s]")
"""Words and single punctuation marks: the tokens of trainers that bring no tokenizer of their own."""

Offsets = Sequence[Tuple[int, int]]
"""Each token's (start, end) in the text; (0, 0) for a token that stands for no text (``[CLS]``)."""


MAIN = ""
"""The field name of the item's own text: a span on it names no field."""

Texts = Mapping[str, str]
"""An item's texts that spans are marked on, by field (:data:`MAIN` is the item's own text)."""


def texts_of(text: Union[str, Texts]) -> Texts:
    """One text is the item's own; a mapping names each field's."""
    return {MAIN: text} if isinstance(text, str) else text


class Span(NamedTuple):
    start: int
    end: int
    label: str
    field: str = MAIN

    def to_json(self, text: Optional[str] = None) -> Dict[str, Any]:
        """The stored form; ``text`` (the span's own field's text) adds the words it covers."""
        out: Dict[str, Any] = {"start": self.start, "end": self.end, "label": self.label}
        if text is not None:
            out["text"] = text[self.start:self.end]
        if self.field:
            out["field"] = self.field
        return out


class ScoredSpan(NamedTuple):
    """A predicted span and how sure the model is of it (0 to 1)."""

    start: int
    end: int
    label: str
    confidence: float
    field: str = MAIN

    @property
    def span(self) -> Span:
        return Span(self.start, self.end, self.label, self.field)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"start": self.start, "end": self.end, "label": self.label,
                               "confidence": round(self.confidence, 6)}
        if self.field:
            out["field"] = self.field
        return out


def by_position(span: Any) -> Tuple[str, int, int, str]:
    """The order spans are kept in: by field (the item's text first), then by start, the longer
    first at one start, then by label."""
    return (span.field, span.start, -span.end, span.label)


class BadSpan(PotatoError, ValueError):
    """A span that does not fit the item's text or the scheme; the message names which and why."""


def check_spans(text: Union[str, Texts], spans: Any, labels: Sequence[str], allow_overlap: bool = False,
                main_name: str = "") -> List[Span]:
    """The spans of one scheme on one item, checked against the item's ``text`` as shown (or its
    texts by field): each a ``{"start", "end", "label"}`` object (``"field"`` where the item has
    several texts; ``"text"``, when sent, must be the text at those offsets), inside its text, with
    one of ``labels``, not twice, and overlapping another in its field only when the scheme allows
    it. A span that names ``main_name`` (the item's text key) is on the item's own text. Sorted by
    position; :class:`BadSpan` names the first span that is wrong."""
    if not isinstance(spans, list):
        raise BadSpan('spans must be a list of {"start": int, "end": int, "label": str} objects')
    texts = texts_of(text)
    out: List[Span] = []
    for number, raw in enumerate(spans, 1):
        out.append(_one_span(texts, raw, labels, number, main_name))
    out.sort(key=by_position)
    for before, after in zip(out, out[1:]):
        if before == after:
            raise BadSpan(f"the span {_show(before, texts)} is there twice")
        if not allow_overlap and after.field == before.field and after.start < before.end:
            raise BadSpan(f"the spans {_show(before, texts)} and {_show(after, texts)} overlap, and this "
                          "scheme does not allow overlapping spans (allow_overlapping: true does)")
    return out


def _field_of(texts: Texts, raw: Dict[Any, Any], where: str, main_name: str) -> str:
    field = raw.get("field", MAIN)
    if field is None or field == main_name:
        field = MAIN
    if isinstance(field, str) and field in texts:
        return field
    named = [name or main_name or "the item's text" for name in texts]
    if field == MAIN:
        raise BadSpan(f'{where} names no field, and this scheme marks spans on {", ".join(named)}: add "field" '
                      "with one of them")
    raise BadSpan(f"{where}: field {field!r} is not one this scheme marks spans on: {', '.join(named)}")


def _one_span(texts: Texts, raw: Any, labels: Sequence[str], number: int, main_name: str) -> Span:
    where = f"span {number}"
    if not isinstance(raw, dict):
        raise BadSpan(f'{where} must be an object {{"start": int, "end": int, "label": str}}')
    field = _field_of(texts, raw, where, main_name)
    text = texts[field]
    if field:
        where = f"{where} (field {field})"
    start, end, label = raw.get("start"), raw.get("end"), raw.get("label")
    for key, value in (("start", start), ("end", end)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadSpan(f"{where}: {key} must be a whole number (a character offset), got {value!r}")
    assert isinstance(start, int) and isinstance(end, int)
    if not 0 <= start < end <= len(text):
        raise BadSpan(f"{where}: {start}-{end} is not a stretch of the {'field' if field else 'item'}'s text, which "
                      f"has {len(text)} characters (0 <= start < end <= length)")
    if label not in labels:
        raise BadSpan(f"{where}: label {label!r} is not one of this scheme's labels: {', '.join(labels)}")
    sent = raw.get("text")
    if sent is not None and sent != text[start:end]:
        raise BadSpan(f"{where}: the text at {start}-{end} is {text[start:end]!r}, not {str(sent)!r}; the "
                      "offsets must count characters of the item's text as shown")
    return Span(start, end, str(label), field)


def _show(span: Span, texts: Texts) -> str:
    where = f" in {span.field}" if span.field else ""
    return f"{span.label} {span.start}-{span.end}{where} ({texts[span.field][span.start:span.end]!r})"


def simple_tokens(text: str) -> List[Tuple[int, int]]:
    """The (start, end) of every word and punctuation mark of ``text``."""
    return [m.span() for m in TOKEN.finditer(text)]


def bio_tags(offsets: Offsets, spans: Iterable[Span]) -> Tuple[List[str], List[Span]]:
    """One tag per token: ``B-<label>`` on a span's first token, ``I-<label>`` on the rest, ``O``
    elsewhere and on tokens that stand for no text. A token belongs to a span when they share a
    character. BIO gives a token one label, so of spans that share a token the earlier (at the same
    start, the longer) is tagged and the other is returned as left out, with any span no token covers."""
    tags = [OUTSIDE] * len(offsets)
    left_out: List[Span] = []
    for span in sorted(spans, key=by_position):
        covered = [i for i, (start, end) in enumerate(offsets)
                   if start < end and start < span.end and span.start < end]
        if not covered or any(tags[i] != OUTSIDE for i in covered):
            left_out.append(span)
            continue
        for n, i in enumerate(covered):
            tags[i] = ("B-" if n == 0 else "I-") + span.label
    return tags, left_out


def spans_from_tags(offsets: Offsets, tags: Sequence[str],
                    confidences: Optional[Sequence[float]] = None) -> List[ScoredSpan]:
    """The spans that predicted ``tags`` mark, each with the mean confidence of its tokens (1.0
    without ``confidences``). Tokens that stand for no text are passed over."""
    found: List[ScoredSpan] = []
    current: Optional[List[Any]] = None  # [start, end, label, confidences]

    def close() -> None:
        if current is not None:
            scores = current[3]
            found.append(ScoredSpan(current[0], current[1], current[2], sum(scores) / len(scores)))

    for i, ((start, end), tag) in enumerate(zip(offsets, tags)):
        if start >= end:
            continue
        score = float(confidences[i]) if confidences is not None else 1.0
        prefix, _, label = tag.partition("-")
        if tag == OUTSIDE or prefix not in ("B", "I") or not label:
            close()
            current = None
        elif prefix == "I" and current is not None and current[2] == label:
            current[1] = end
            current[3].append(score)
        else:
            close()
            current = [start, end, label, [score]]
    close()
    return found


def majority_spans(votes: Sequence[Iterable[Span]]) -> Tuple[Span, ...]:
    """The spans more than half of an item's annotators marked exactly (same start, end and label),
    by position: as for a multiselect scheme's labels, so two annotators who disagree give none."""
    if not votes:
        raise ValueError("majority_spans needs at least one vote")
    counts: Dict[Span, int] = {}
    for vote in votes:
        for span in set(vote):
            counts[span] = counts.get(span, 0) + 1
    return tuple(sorted((s for s, n in counts.items() if n * 2 > len(votes)), key=by_position))


def _prf(hits: int, predicted: int, true: int) -> Dict[str, float]:
    precision = hits / predicted if predicted else 0.0
    recall = hits / true if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "support": true}


def entity_scores(truth: Sequence[Iterable[Span]], predicted: Sequence[Iterable[Span]]) -> Dict[str, Any]:
    """Exact-match precision, recall and F1 of ``predicted`` against ``truth`` (one collection of
    spans per item, in the same order): ``{"micro": {...}, "per_label": {label: {...}}}``, each with
    ``precision``, ``recall``, ``f1`` and ``support`` (the number of true spans)."""
    if len(truth) != len(predicted):
        raise ValueError("truth and predictions differ in length")
    hits: Dict[str, int] = {}
    n_pred: Dict[str, int] = {}
    n_true: Dict[str, int] = {}
    for true_spans, pred_spans in zip(truth, predicted):
        true_set, pred_set = set(true_spans), set(pred_spans)
        for span in true_set:
            n_true[span.label] = n_true.get(span.label, 0) + 1
        for span in pred_set:
            n_pred[span.label] = n_pred.get(span.label, 0) + 1
            if span in true_set:
                hits[span.label] = hits.get(span.label, 0) + 1
    labels = sorted(set(n_true) | set(n_pred))
    per_label = {label: _prf(hits.get(label, 0), n_pred.get(label, 0), n_true.get(label, 0)) for label in labels}
    micro = _prf(sum(hits.values()), sum(n_pred.values()), sum(n_true.values()))
    return {"micro": micro, "per_label": per_label}
