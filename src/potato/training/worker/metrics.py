"""The holdout score: accuracy and macro-F1, computed by the worker, not the trainer.

Remote-safe and pure: standard library only, Python 3.8 (no scikit-learn: the score must be the
same whichever trainer ran and whatever is installed). Definitions:

- radio accuracy: share of holdout items whose predicted label is the majority label.
- radio macro-F1: mean over classes of F1 = 2TP / (2TP + FP + FN); the classes are those in the
  truth or the predictions (as scikit-learn's ``f1_score(average="macro")`` with no ``labels``).
- multiselect accuracy: exact match of the label set; macro-F1: mean over labels (those in the
  truth or the predictions) of the per-label binary F1. When neither has any label, F1 is 1.0.
- Brier score: mean of (confidence - correct)^2, where correct is 1 when the predicted label
  (or label set) equals the truth: how well the confidences match the hit rate.
- overall ``holdout_accuracy``: over every scored (item, schema) pair; ``holdout_macro_f1``: the
  mean of the per-schema macro-F1 values.
- span schemes are scored by their spans, not as one answer per item: exact-match precision,
  recall and F1 over all spans (micro) and per label (:func:`potato.training.job.spans.entity_scores`,
  seqeval's definition), as ``<schema>/holdout_precision``, ``holdout_recall``, ``holdout_f1`` and
  ``<schema>/<label>/holdout_f1`` (with ``_precision``, ``_recall``, ``_support``). They count
  towards ``n_holdout`` only, not towards the overall accuracy and macro-F1.
- a pairwise question is scored as one answer (A, B or a tie) per item, and also on the held-out
  pairs annotators did not call a tie: ``<schema>/holdout_decided_accuracy`` (how often the model
  prefers the option people preferred) with ``<schema>/n_holdout_decided``.
- a question asked on each step of a trace (a step classifier) is scored step by step as above
  (each step an item) and, where its answers name a mistake, trace by trace:
  ``<schema>/holdout_first_error_exact`` is the share of held-out traces whose first wrong step
  (among their labelled steps) the model finds exactly, a trace without one counting as found when
  the model calls none of them wrong; ``<schema>/n_holdout_traces`` is how many traces that is.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from potato.training.job.schemes import TIE, Scheme, SchemeType
from potato.training.job.results import Label
from potato.training.job.labels import label_spans
from potato.training.job.spans import entity_scores
from potato.training.job.spec import JobItem
from potato.training.job.tracesteps import PLACE_FIELD, TRACE_FIELD, by_trace, first_error_found


def _f1(tp: int, fp: int, fn: int) -> float:
    denominator = 2 * tp + fp + fn
    return 2.0 * tp / denominator if denominator else 1.0


def accuracy(truth: Sequence[Label], predicted: Sequence[Label]) -> float:
    if len(truth) != len(predicted):
        raise ValueError("truth and predictions differ in length")
    if not truth:
        raise ValueError("accuracy of nothing is undefined")
    return sum(1 for t, p in zip(truth, predicted) if t == p) / len(truth)


def macro_f1(truth: Sequence[str], predicted: Sequence[str]) -> float:
    """Single-label macro-F1 over the classes seen in either sequence."""
    if len(truth) != len(predicted):
        raise ValueError("truth and predictions differ in length")
    tp: Counter = Counter()
    fp: Counter = Counter()
    fn: Counter = Counter()
    for t, p in zip(truth, predicted):
        if t == p:
            tp[t] += 1
        else:
            fp[p] += 1
            fn[t] += 1
    classes = set(truth) | set(predicted)
    if not classes:
        return 1.0
    return sum(_f1(tp[c], fp[c], fn[c]) for c in classes) / len(classes)


def multilabel_macro_f1(truth: Sequence[Iterable[str]], predicted: Sequence[Iterable[str]]) -> float:
    """Mean per-label binary F1 over the labels seen in either side (1.0 when there are none)."""
    if len(truth) != len(predicted):
        raise ValueError("truth and predictions differ in length")
    tp: Counter = Counter()
    fp: Counter = Counter()
    fn: Counter = Counter()
    labels: set[str] = set()
    for t_raw, p_raw in zip(truth, predicted):
        t, p = set(t_raw), set(p_raw)
        labels |= t | p
        for label in t & p:
            tp[label] += 1
        for label in p - t:
            fp[label] += 1
        for label in t - p:
            fn[label] += 1
    if not labels:
        return 1.0
    return sum(_f1(tp[c], fp[c], fn[c]) for c in labels) / len(labels)


def brier(truth: Sequence[Any], predicted: Sequence[tuple[Any, float]]) -> float:
    """Mean squared gap between confidence and being right."""
    if not truth:
        raise ValueError("brier score of nothing is undefined")
    gaps = ((conf - (1.0 if label == t else 0.0)) ** 2 for t, (label, conf) in zip(truth, predicted))
    return sum(gaps) / len(truth)


def _as_tuple(label: Any) -> tuple[str, ...]:
    return tuple(label) if isinstance(label, (tuple, list, frozenset, set)) else (str(label),)


def _span_metrics(schema: str, truth: Sequence[Label], predicted: Sequence[Label]) -> dict[str, float]:
    scores = entity_scores([label_spans(t) for t in truth], [label_spans(p) for p in predicted])
    out = {f"{schema}/holdout_{key}": float(value) for key, value in scores["micro"].items() if key != "support"}
    for label, per in scores["per_label"].items():
        out.update({f"{schema}/{label}/holdout_{key}": float(value) for key, value in per.items()})
    return out


def score_holdout(
    schemas: Sequence[Scheme],
    truth: Mapping[str, Mapping[str, Label]],
    predicted: Mapping[str, Mapping[str, tuple[Any, ...] | None]],
    holdout: Iterable[str],
) -> dict[str, float]:
    """Holdout metrics for ``result.json``: overall and ``<schema>/<metric>`` per schema.

    ``truth`` is item -> schema -> majority label; ``predicted`` item -> schema -> (label,
    confidence). Only holdout items with a label for a schema are scored for it. With no such
    item the result holds ``n_holdout: 0`` and no accuracy.
    """
    holdout_ids = [i for i in holdout if i in truth]
    metrics: dict[str, float] = {}
    hits = 0
    pairs = 0
    f1s = []
    scored_items: set[str] = set()
    for spec in schemas:
        ids = [i for i in holdout_ids if spec.name in truth[i]]
        rows = [(truth[i][spec.name], predicted.get(i, {}).get(spec.name)) for i in ids]
        rows_ok = [(t, p) for t, p in rows if p is not None]
        metrics[f"{spec.name}/n_holdout"] = len(rows_ok)
        if not rows_ok:
            continue
        scored_items.update(i for i, (_, p) in zip(ids, rows) if p is not None)
        if spec.spans:
            metrics.update(_span_metrics(spec.name, [t for t, _ in rows_ok], [p[0] for _, p in rows_ok]))
            continue
        t_labels: list[Any] = [t for t, _ in rows_ok]
        p_labels: list[Any] = [p[0] for _, p in rows_ok]
        if spec.multiselect:  # a label set: order does not matter
            t_labels = [frozenset(_as_tuple(t)) for t in t_labels]
            p_labels = [frozenset(_as_tuple(p)) for p in p_labels]
        acc = accuracy(t_labels, p_labels)
        if spec.multiselect:
            f1 = multilabel_macro_f1(t_labels, p_labels)
        else:
            f1 = macro_f1([str(t) for t in t_labels], [str(p) for p in p_labels])
        metrics[f"{spec.name}/holdout_accuracy"] = acc
        if spec.annotation_type is SchemeType.PAIRWISE:
            decided = [(t, p) for t, p in zip(t_labels, p_labels) if t != TIE]
            metrics[f"{spec.name}/n_holdout_decided"] = len(decided)
            if decided:
                metrics[f"{spec.name}/holdout_decided_accuracy"] = sum(t == p for t, p in decided) / len(decided)
        metrics[f"{spec.name}/holdout_macro_f1"] = f1
        metrics[f"{spec.name}/holdout_brier"] = brier(
            t_labels, [(label, p[1]) for label, (_, p) in zip(p_labels, rows_ok)])
        hits += sum(1 for t, p in zip(t_labels, p_labels) if t == p)
        pairs += len(rows_ok)
        f1s.append(f1)
    metrics["n_holdout"] = len(scored_items)
    if pairs:
        metrics["holdout_accuracy"] = hits / pairs
        metrics["holdout_macro_f1"] = sum(f1s) / len(f1s)
    return metrics


def trace_scores(
    schemas: Sequence[Scheme],
    items: Sequence[JobItem],
    truth: Mapping[str, Mapping[str, Label]],
    predicted: Mapping[str, Mapping[str, tuple[Any, ...] | None]],
    holdout: Iterable[str],
) -> dict[str, float]:
    """Each step question's score by trace: whether the model finds a held-out trace's first error."""
    held = set(holdout)
    places = {item.id: (str(item.fields[TRACE_FIELD]), int(item.fields.get(PLACE_FIELD, 0))) for item in items
              if TRACE_FIELD in item.fields and item.id in held}
    metrics: dict[str, float] = {}
    for spec in schemas:
        if not (spec.per_step and spec.wrong_labels):
            continue
        told = {i: truth[i][spec.name] for i in places if spec.name in truth.get(i, {})}
        said = {i: p[0] for i in told for p in [predicted.get(i, {}).get(spec.name)] if p is not None}
        share, traces = first_error_found(by_trace(told, places), by_trace(said, places), spec.wrong_labels)
        metrics[f"{spec.name}/n_holdout_traces"] = traces
        if traces:
            metrics[f"{spec.name}/holdout_first_error_exact"] = share
    return metrics
