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
