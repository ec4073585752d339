"""C5 writeback rules: schemas, min_confidence, include_unlabeled; humans never overwritten."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Set, Tuple

from potato.config.schema import Writeback
from potato.server.training.writeback import WritebackStats, select


def _rows() -> Iterator[Dict[str, Any]]:
    yield {"item_id": "a", "schema": "sentiment", "label": "positive", "confidence": 0.9}
    yield {"item_id": "b", "schema": "sentiment", "label": "negative", "confidence": 0.5}
    yield {"item_id": "c", "schema": "sentiment", "label": "negative", "confidence": 0.95}
    yield {"item_id": "a", "schema": "aspects", "label": ["price"], "confidence": 0.99}
    yield {"item_id": "zzz", "schema": "sentiment", "label": "positive", "confidence": 0.99}
    yield {"item_id": "a", "schema": "sentiment"}


def _select(wb: Writeback, labelled: Set[Tuple[str, str]]) -> Tuple[List[Tuple[str, str, str, float]], WritebackStats]:
    stats = WritebackStats()
    rows = list(select(_rows(), wb, {"sentiment", "aspects"}, {"a", "b", "c"}, labelled, stats))
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
    from potato.config.schema import Scheme, SchemeType

    schemes = {"sentiment": Scheme(SchemeType.RADIO, "sentiment", labels=("positive", "negative")),
               "aspects": Scheme(SchemeType.MULTISELECT, "aspects", labels=("price", "quality"))}
    rows = [{"item_id": "a", "schema": "sentiment", "label": "<script>", "confidence": 0.9},
            {"item_id": "b", "schema": "sentiment", "label": "negative", "confidence": float("nan")},
            {"item_id": "c", "schema": "sentiment", "label": "negative", "confidence": 1.5},
            {"item_id": "a", "schema": "aspects", "label": ["price", "colour"], "confidence": 0.9},
            {"item_id": "b", "schema": "aspects", "label": ["quality"], "confidence": 0.9}]
    stats = WritebackStats()
    kept = list(select(iter(rows), Writeback(schemas=("sentiment", "aspects"), include_unlabeled=True),
                       {"sentiment", "aspects"}, {"a", "b", "c"}, set(), stats, schemes))
    assert [(r[0], r[1]) for r in kept] == [("b", "aspects")] and stats.invalid == 4
