"""C5 writeback rules: schemas, min_confidence, include_unlabeled; humans never overwritten."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Set, Tuple

from potato.config.schema import Writeback
from potato.server.training.runs.writeback import WritebackStats, select


def _rows() -> Iterator[Dict[str, Any]]:
    yield {"item_id": "a", "schema": "sentiment", "label": "positive", "confidence": 0.9}
    yield {"item_id": "b", "schema": "sentiment", "label": "negative", "confidence": 0.5}
    yield {"item_id": "c", "schema": "sentiment", "label": "negative", "confidence": 0.95}
    yield {"item_id": "a", "schema": "aspects", "label": ["price"], "confidence": 0.99}
    yield {"item_id": "zzz", "schema": "sentiment", "label": "positive", "confidence": 0.99}
    yield {"item_id": "a", "schema": "sentiment"}


def _select(wb: Writeback, labelled: Set[Tuple[str, str]]) -> Tuple[List[Tuple[str, str, str, float]], WritebackStats]:
    stats = WritebackStats()
    rows = list(select(_rows(), wb, {"sentiment", "aspects"}, dict.fromkeys("abc", ""), labelled, stats))
    return rows, stats


def test_min_confidence_and_schemas() -> None:
    rows, stats = _select(Writeback(schemas=("sentiment",), include_unlabeled=True, min_confidence=0.6), set())
    assert [(r[0], r[1]) for r in rows] == [("a", "sentiment"), ("c", "sentiment")]
    assert stats.below_confidence == 1 and stats.invalid == 1 and stats.written == 2


def test_include_unlabeled_false_keeps_labelled_items_only() -> None:
    rows, stats = _select(Writeback(schemas=("sentiment", "aspects"), include_unlabeled=False), {("c", "sentiment")})
    assert [(r[0], r[1]) for r in rows] == [("c", "sentiment")]
    assert stats.skipped_unlabelled == 3


def test_a_label_the_scheme_lacks_or_a_bad_confidence_is_never_a_suggestion() -> None:
    from potato.training.job.schemes import Scheme, SchemeType

    schemes = {"sentiment": Scheme(SchemeType.RADIO, "sentiment", labels=("positive", "negative")),
               "aspects": Scheme(SchemeType.MULTISELECT, "aspects", labels=("price", "quality"))}
    rows = [{"item_id": "a", "schema": "sentiment", "label": "<script>", "confidence": 0.9},
            {"item_id": "b", "schema": "sentiment", "label": "negative", "confidence": float("nan")},
            {"item_id": "c", "schema": "sentiment", "label": "negative", "confidence": 1.5},
            {"item_id": "a", "schema": "aspects", "label": ["price", "colour"], "confidence": 0.9},
            {"item_id": "b", "schema": "aspects", "label": ["quality"], "confidence": 0.9}]
    stats = WritebackStats()
    kept = list(select(iter(rows), Writeback(schemas=("sentiment", "aspects"), include_unlabeled=True),
                       {"sentiment", "aspects"}, dict.fromkeys("abc", ""), set(), stats, schemes))
    assert [(r[0], r[1]) for r in kept] == [("b", "aspects")] and stats.invalid == 4


def test_span_predictions_are_suggested_span_by_span_over_min_confidence() -> None:
    """Issue 23: a span prediction keeps its spans of at least min_confidence, each with its confidence;
    spans that do not fit the item's text, or lack a confidence, make the row invalid."""
    from potato.training.job.schemes import Scheme, SchemeType

    schemes = {"names": Scheme(SchemeType.SPAN, "names", labels=("PER", "ORG"))}
    texts = {"a": "Ada met Bob at Acme.", "b": "Nobody here.", "c": "Cy", "d": "Dee"}
    rows = [{"item_id": "a", "schema": "names", "confidence": 0.8, "label": [
                {"start": 15, "end": 19, "label": "ORG", "confidence": 0.4},
                {"start": 0, "end": 3, "label": "PER", "confidence": 0.97},
                {"start": 8, "end": 11, "label": "PER", "confidence": 0.61}]},
            {"item_id": "b", "schema": "names", "label": [], "confidence": 0.9},
            {"item_id": "c", "schema": "names", "confidence": 0.9, "label": [
                {"start": 0, "end": 2, "label": "PER", "confidence": 0.3}]},
            {"item_id": "d", "schema": "names", "confidence": 0.9, "label": [
                {"start": 0, "end": 30, "label": "PER", "confidence": 0.9}]},
            {"item_id": "d", "schema": "names", "confidence": 0.9, "label": [
                {"start": 0, "end": 3, "label": "PER"}]}]
    stats = WritebackStats()
    kept = list(select(iter(rows), Writeback(schemas=("names",), include_unlabeled=True, min_confidence=0.6),
                       {"names"}, texts, set(), stats, schemes))
    assert [(r[0], json.loads(r[2])) for r in kept] == [
        ("a", [{"start": 0, "end": 3, "label": "PER", "confidence": 0.97},
               {"start": 8, "end": 11, "label": "PER", "confidence": 0.61}]),
        ("b", [])]  # the model is sure nothing is to be marked
    assert (stats.written, stats.below_confidence, stats.invalid) == (2, 1, 2)


def test_span_predictions_on_several_fields_are_checked_and_suggested_in_their_field() -> None:
    """Issue 36: a span naming its field is checked against that field's text and kept with it."""
    from potato.training.job.schemes import Scheme, SchemeType

    schemes = {"names": Scheme(SchemeType.SPAN, "names", labels=("PER",), span_fields=("", "hypothesis"),
                               text_key="premise")}
    texts = {"a": {"": "Ada flew.", "hypothesis": "It was Ada."}, "b": {"": "Bo.", "hypothesis": "Bo"}}
    rows = [{"item_id": "a", "schema": "names", "confidence": 0.8, "label": [
                {"start": 7, "end": 10, "label": "PER", "confidence": 0.9, "field": "hypothesis"},
                {"start": 0, "end": 3, "label": "PER", "confidence": 0.7, "field": "premise"}]},
            {"item_id": "b", "schema": "names", "confidence": 0.9, "label": [
                {"start": 0, "end": 3, "label": "PER", "confidence": 0.9, "field": "hypothesis"}]}]
    stats = WritebackStats()
    kept = list(select(iter(rows), Writeback(schemas=("names",), include_unlabeled=True, min_confidence=0.5),
                       {"names"}, texts, set(), stats, schemes))
    assert [(r[0], json.loads(r[2])) for r in kept] == [
        ("a", [{"start": 0, "end": 3, "label": "PER", "confidence": 0.7},
               {"start": 7, "end": 10, "label": "PER", "field": "hypothesis", "confidence": 0.9}])]
    assert stats.invalid == 1  # past the end of b's hypothesis


def test_the_score_beside_a_span_schemas_suggestions_is_its_span_f1() -> None:
    from potato.training.job.schemes import Scheme, SchemeType
    from potato.server.training.runs.writeback import schema_score

    metrics = {"holdout_accuracy": 0.9, "names/holdout_f1": 0.72}
    assert schema_score(metrics, Scheme(SchemeType.SPAN, "names", labels=("PER",))) == 0.72
    assert schema_score(metrics, Scheme(SchemeType.RADIO, "s", labels=("a", "b"))) == 0.9
    assert schema_score({}, Scheme(SchemeType.SPAN, "names", labels=("PER",))) is None


def test_a_trainer_that_learns_nothing_suggests_on_every_item_whatever_include_unlabeled() -> None:
    """Issue 34: llm-zero-shot's predictions for every item become suggestions, unlabelled ones too,
    with include_unlabeled false; a trainer that learns from labels still keeps to labelled items."""
    from potato.server.training.runs.writeback import learns_from_labels

    assert not learns_from_labels("llm-zero-shot") and learns_from_labels("noop")
    assert learns_from_labels("no-such-trainer")  # unknown: the usual rule
    wb = Writeback(schemas=("sentiment", "aspects"), include_unlabeled=False)
    stats = WritebackStats()
    rows = list(select(_rows(), wb, {"sentiment", "aspects"}, dict.fromkeys("abc", ""), set(), stats,
                       every_item=not learns_from_labels("llm-zero-shot")))
    assert [(r[0], r[1]) for r in rows] == [("a", "sentiment"), ("b", "sentiment"), ("c", "sentiment"),
                                            ("a", "aspects")]
    assert stats.skipped_unlabelled == 0 and stats.written == 4
