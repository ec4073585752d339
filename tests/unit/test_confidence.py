"""Issue 45 (item 3): upstream's confidence rating of another answer, as its
classification/confidence-calibrated example configures it: a point on a scale of ``scale_points``
named by its ``labels`` (stored as the point's number, "1" the least sure), or with ``scale_type:
slider`` a number between ``left_label`` and ``right_label``; ``target_schema`` names the question it
rates (an unknown one is refused with the schemes there are). Both exports import back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
SENTIMENT = {"annotation_type": "radio", "name": "sentiment", "description": "Select the sentiment of the text",
             "labels": ["Positive", "Negative", "Neutral"], "sequential_key_binding": True}
SURE = {"annotation_type": "confidence", "name": "sentiment_confidence", "description": "How confident are you in your label?",
        "target_schema": "sentiment", "scale_type": "likert", "scale_points": 5,
        "labels": ["Guessing", "Somewhat confident", "Fairly confident", "Confident", "Certain"]}
SLIDER = {"annotation_type": "confidence", "name": "sure", "description": "How sure?", "target_schema": "sentiment",
          "scale_type": "slider", "left_label": "Not at all", "right_label": "Completely"}
ITEMS = [{"id": "c1", "text": "I loved it."}, {"id": "c2", "text": "It broke."}]


def _schemes(*schemes: dict[str, Any]) -> Any:
    return validate(upstream(annotation_schemes=[SENTIMENT, *schemes]), CONFIG)


def test_upstreams_confidence_validates_as_a_scale_or_a_slider_about_another_answer() -> None:
    report = _schemes(SURE, SLIDER)
    assert report.errors == []
    sentiment, sure, slider = report.config.annotation_schemes
    assert [o.key for o in sentiment.options] == ["1", "2", "3"]  # the rated question keeps its keys
    assert sure.labels == ("1", "2", "3", "4", "5") and [o.shown for o in sure.options][0] == "1 · Guessing"
    assert [o.key for o in sure.options] == [""] * 5 and sure.rates == "sentiment" and not sure.numeric
    assert sure.accepts("4") and not sure.accepts("6") and not sure.accepts(4)
    assert slider.numeric and (slider.min_value, slider.max_value, slider.min_label, slider.max_label) == (
        0, 100, "Not at all", "Completely")
    assert slider.accepts(73) and not slider.accepts(101)
    # Without labels: upstream's words; more points than words: "Level n".
    plain = _schemes({**SURE, "labels": None, "scale_points": 7}).config.annotation_schemes[1]
    assert [o.shown for o in plain.options][4:] == ["5 · Certain", "6 · Level 6", "7 · Level 7"]
    errors = [i.message for i in _schemes({**SURE, "target_schema": "sentimnet"}).errors]
    assert errors == ["annotation_schemes[1].target_schema: names 'sentimnet', which is not another scheme of this "
                      "config (its schemes: sentiment, sentiment_confidence) (did you mean 'sentiment'?); name the "
                      "question whose answer this confidence rates"]
    errors = [i.message for i in _schemes({**SLIDER, "labels": ["low", "high"]}).errors]
    assert errors == ["annotation_schemes[1].labels: a confidence slider has no points to name; remove labels, and "
                      "name its ends with left_label and right_label"]


def _project(root: Path) -> Path:
    return write_project(root, "Confidence", ITEMS, [SENTIMENT, SURE, SLIDER])


def test_the_page_names_the_question_rated_and_answers_are_stored(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert "Your confidence in your answer to “Select the sentiment of the text”" in page
        assert '<span>4 · Confident</span>' in page and 'class="numeric"' in page
        sent = client.post("/api/label", json={"id": "c1", "go": "stay", "labels": {
            "sentiment": "Positive", "sentiment_confidence": "4", "sure": 80}})
        assert sent.status_code == 200, sent.get_json()
    assert stored_answers(path) == {("c1", "sentiment"): "Positive", ("c1", "sentiment_confidence"): "4", ("c1", "sure"): 80}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert client.post("/api/label", json={"id": "c2", "go": "stay", "labels": {
            "sentiment": "Negative", "sentiment_confidence": "2", "sure": 35}}).status_code == 200
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) == {
        ("c2", "sentiment"): "Negative", ("c2", "sentiment_confidence"): "2", ("c2", "sure"): 35}
