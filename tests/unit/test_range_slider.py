"""Issue 45 (item 3): upstream's ``range_slider``, as its classification/range-slider example configures
it: two thumbs from ``min_value`` to ``max_value`` in steps of ``step``, between ``left_label`` and
``right_label``, starting at ``default_low`` and ``default_high`` (a quarter in from each end). Stored
as ``{"range_low", "range_high"}``; upstream's export holds both as text, and both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
FORMALITY = {"annotation_type": "range_slider", "name": "formality_range", "description": "What range of formality fits?",
             "min_value": 0, "max_value": 100, "step": 5, "left_label": "Very informal", "right_label": "Very formal",
             "show_values": True}
ITEMS = [{"id": "f1", "text": "Hey, got a sec?"}, {"id": "f2", "text": "Dear Sir or Madam"}]


def _label(client: Any, value: Any) -> Any:
    return client.post("/api/label", json={"id": "f1", "go": "stay", "labels": {"formality_range": value}})


def test_the_keys_are_upstreams_with_upstreams_defaults() -> None:
    report = validate(upstream(annotation_schemes=[FORMALITY]), CONFIG)
    assert report.errors == []
    scale = report.config.annotation_schemes[0]
    assert (scale.min_value, scale.max_value, scale.step, scale.range_start, scale.min_label, scale.max_label) == (
        0, 100, 5, (25, 75), "Very informal", "Very formal")
    bad = validate(upstream(annotation_schemes=[{**FORMALITY, "default_low": 80, "default_high": 20},
                                                {**FORMALITY, "name": "b", "max_value": 0}]), CONFIG)
    assert [e.message for e in bad.errors] == [
        "annotation_schemes[0].default_low: the thumbs must start within 0 to 100, the low one not above the high one; "
        "got 80 and 20",
        "annotation_schemes[1].max_value: must be greater than min_value (0), got 0"]


def test_a_range_is_stored_with_its_low_end_not_above_its_high_end(tmp_path: Path) -> None:
    path = write_project(tmp_path / "project", "Formality", ITEMS, [FORMALITY])
    with annotator(path) as client:
        assert _label(client, {"range_low": 20, "range_high": 45}).status_code == 200
        for wrong in ({"range_low": 60, "range_high": 40}, {"range_low": 20, "range_high": 105},
                      {"range_low": 22, "range_high": 40}, {"range_low": 20}, [20, 40]):
            refused = _label(client, wrong)
            assert refused.status_code == 400 and refused.get_json()["error"].endswith(
                "(valid: {\"range_low\": a number, \"range_high\": a number not below it}, each from 0 to 100 in steps of 5)")
    assert stored_answers(path) == {("f1", "formality_range"): {"range_low": 20, "range_high": 45}}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = write_project(tmp_path / "project", "Formality", ITEMS, [FORMALITY])
    with annotator(path) as client:
        assert _label(client, {"range_low": 35, "range_high": 35}).status_code == 200  # a point is a range too
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":  # upstream's: both ends, as text
        assert json.loads(source.read_text().splitlines()[0])["labels"]["formality_range"] == {
            "range_low": "35", "range_high": "35"}
    fresh = write_project(tmp_path / "fresh", "Formality", ITEMS, [FORMALITY])
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path)
