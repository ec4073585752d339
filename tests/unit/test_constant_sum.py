"""Issue 45 (item 3): upstream's constant sum, as its classification/constant-sum example configures
it: ``total_points`` (100) spread over the labels in whole points, each at least ``min_per_item``.
Points are kept as they are given (a page saves each box as it is filled); the item is done once they
add up to the total. Stored as ``{label: points}``; upstream's export holds each label's points under
its name; both exports import back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
POINTS = {"annotation_type": "constant_sum", "name": "topic_relevance",
          "description": "Allocate 100 points across topics by relevance to the text (must sum to 100)",
          "labels": ["Politics", "Technology", "Sports", "Entertainment"], "total_points": 100, "min_per_item": 0,
          "input_type": "number"}
ITEMS = [{"id": "cs1", "text": "The senate debated a bill on chip exports."}, {"id": "cs2", "text": "The match ended 2-1."}]
FULL = {"Politics": 60, "Technology": 40, "Sports": 0, "Entertainment": 0}


def test_upstreams_constant_sum_validates_as_points_over_the_labels() -> None:
    report = validate(upstream(annotation_schemes=[POINTS]), CONFIG)
    assert report.errors == []
    scheme = report.config.annotation_schemes[0]
    assert (scheme.total, scheme.min_value, scheme.points_by_slider) == (100, 0, False)
    assert scheme.accepts(FULL) and scheme.accepts({"Politics": 60}) and scheme.incomplete(FULL) == ""
    assert scheme.incomplete({"Politics": 60}) == "points for every label adding up to 100 (60 given so far)"
    for bad in ({}, {"Politics": 101}, {"Politics": 60, "Technology": 50}, {"Politics": 59.5}, {"Politics": -1},
                {"Weather": 10}, {"Politics": True}):
        assert not scheme.accepts(bad), bad
    slider = validate(upstream(annotation_schemes=[{**POINTS, "input_type": "slider"}]), CONFIG).config.annotation_schemes[0]
    assert slider.points_by_slider
    errors = [i.message for i in validate(upstream(annotation_schemes=[{**POINTS, "min_per_item": 30}]), CONFIG).errors]
    assert errors == ["annotation_schemes[0].min_per_item: 30 for each of 4 labels is more than total_points (100); "
                      "lower min_per_item or raise total_points"]
    assert [i.message for i in validate(upstream(annotation_schemes=[{**POINTS, "input_type": "dial"}]), CONFIG).errors]


def _project(root: Path) -> Path:
    return write_project(root, "Points", ITEMS, [POINTS])


def _label(client: Any, value: Any, partial: bool) -> Any:
    return client.post("/api/label", json={"id": "cs1", "go": "stay", "partial": partial,
                                           "labels": {"topic_relevance": value}})


def test_points_are_kept_as_given_and_the_item_is_done_once_they_add_up(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-type="constant_sum"' in page and page.count('type="number" data-label=') == 4
        assert _label(client, {"Politics": 60}, partial=True).status_code == 200
        refused = _label(client, {"Politics": 60}, partial=False)
        assert refused.status_code == 400 and refused.get_json()["error"] == (
            "'topic_relevance' needs points for every label adding up to 100 (60 given so far)")
        assert _label(client, {"Politics": 60, "Technology": 50}, partial=True).get_json()["error"].startswith(
            "{'Politics': 60, 'Technology': 50} is not an answer to 'topic_relevance' (valid: an object of whole "
            "points by label")
        assert _label(client, FULL, partial=False).status_code == 200
    assert stored_answers(path) == {("cs1", "topic_relevance"): FULL}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, FULL, partial=False).status_code == 200
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) == {("cs1", "topic_relevance"): FULL}
