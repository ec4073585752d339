"""Issue 45 (item 3): two of upstream's scales, as its classification examples configure them.

- A visual analogue scale (``vas``): a line from ``left_label`` to ``right_label`` with no marks,
  ``min_value`` 0 to ``max_value`` 100 in tenths (``precision`` 1), its number shown only with
  ``show_value``. The answer is a number, stored once the scale is moved; upstream's export names it
  by the scheme.
- A semantic differential (``semantic_differential``): a row per pair of opposite words, each rated
  on ``scale_points`` points from the left word to the right one, stored as ``{"Good__Bad": "3"}``.

Both exports import back as the same stored answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from potato.config import validate
from tests.harness.labelstore import (annotator, exported, invoke as _run, stored_answers as _stored,
                                     write_project)
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
PAIN = {"annotation_type": "vas", "name": "pain_level", "description": "Rate the pain level described in this text",
        "left_label": "No pain", "right_label": "Worst pain imaginable", "min_value": 0, "max_value": 100,
        "show_value": True}
ITEMS = [{"id": "v1", "text": "A dull ache."}, {"id": "v2", "text": "It hurts <b>badly</b>."}]


def _report(schemes: list[dict[str, Any]]) -> Any:
    return validate(upstream(annotation_schemes=schemes), CONFIG)


def _project(root: Path, schemes: list[dict[str, Any]] = [PAIN]) -> Path:  # noqa: B006 - never changed
    return write_project(root, "Pain", ITEMS, schemes)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        yield path, client


def _label(client: Any, item_id: str, value: Any) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": True, "labels": {"pain_level": value}})


def test_upstreams_vas_validates_as_a_scale_without_marks() -> None:
    report = _report([PAIN])
    assert report.errors == []
    vas = report.config.annotation_schemes[0]
    assert (vas.min_value, vas.max_value, vas.step, vas.show_value, vas.starting_value) == (0, 100, 0.1, True, 50)
    assert (vas.min_label, vas.max_label, vas.training_type) == ("No pain", "Worst pain imaginable", None)
    plain = _report([{"annotation_type": "vas", "name": "v", "precision": 2}]).config.annotation_schemes[0]
    assert (plain.min_value, plain.max_value, plain.step, plain.show_value) == (0, 100, 0.01, False)
    errors = [i.message for i in _report([{**PAIN, "max_value": 0}]).errors]
    assert errors == ["annotation_schemes[0].max_value: must be greater than min_value (0), got 0"]
    errors = [i.message for i in _report([{**PAIN, "labels": ["a"]}]).errors]
    assert errors == ["annotation_schemes[0].labels: a vas scheme takes no labels (annotators pick a number); remove "
                      "labels, or use annotation_type: radio or likert"]
    errors = [i.message for i in _report([{**PAIN, "left_label": "x", "annotation_type": "slider"}]).errors]
    assert errors[0] == ("annotation_schemes[0].left_label: applies to vas, confidence and range_slider schemes only; "
                         "remove it from this slider scheme")


def test_the_page_draws_the_line_with_its_ends_and_stores_a_number_on_it(project: tuple[Path, Any]) -> None:
    path, client = project
    page = client.get("/annotate").get_data(as_text=True)
    assert 'data-type="slider"' in page and 'class="numeric vas"' in page
    assert '<span>No pain</span>' in page and '<span>Worst pain imaginable</span>' in page
    assert 'step="0.1"' in page and 'aria-label="Rate the pain level described in this text (from No pain to Worst pain imaginable)"' in page
    assert _label(client, "v1", 73.4).status_code == 200
    assert _stored(path) == {("v1", "pain_level"): 73.4}
    assert _label(client, "v1", 73.45).get_json()["error"] == (
        "73.45 is not an answer to 'pain_level' (valid: a number from 0 to 100 in steps of 0.1)")
    assert _label(client, "v1", 101).status_code == 400 and _label(client, "v1", "high").status_code == 400


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(project: tuple[Path, Any], tmp_path: Path,
                                                             fmt: str) -> None:
    path, client = project
    assert _label(client, "v1", 73.4).status_code == 200 and _label(client, "v2", 100).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":  # upstream's page names the answer by the scheme
        rows = [json.loads(line) for line in source.read_text().splitlines()]
        assert {row["instance_id"]: row["labels"] for row in rows} == {
            "v1": {"pain_level": {"pain_level": "73.4"}}, "v2": {"pain_level": {"pain_level": "100"}}}
    fresh = _project(tmp_path / "fresh")
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)


SD = {"annotation_type": "semantic_differential", "name": "word_connotation", "description": "Rate the word",
      "scale_points": 7, "pairs": [["Good", "Bad"], ["Strong", "Weak"]]}


def test_upstreams_semantic_differential_validates_as_a_row_per_pair() -> None:
    report = _report([SD])
    assert report.errors == []
    sd = report.config.annotation_schemes[0]
    assert sd.dimension_names == ("Good__Bad", "Strong__Weak") and sd.bipolar
    assert [(d.shown, d.tooltip) for d in sd.dimensions] == [("Good", "Bad"), ("Strong", "Weak")]
    assert sd.labels == ("1", "2", "3", "4", "5", "6", "7") and sd.training_type is None
    assert _report([{**SD, "scale_points": 5}]).config.annotation_schemes[0].labels == ("1", "2", "3", "4", "5")

    def errors(scheme: dict[str, Any]) -> list[str]:
        return [i.message for i in _report([scheme]).errors]

    assert errors({**SD, "pairs": [["Good"]]}) == [
        "annotation_schemes[0].pairs[0]: must be two words, the left pole and the right, e.g. pairs: [[Good, Bad], "
        "[Strong, Weak]]; got a list of 1 item(s)"]
    assert errors({**SD, "pairs": [["Good", "Bad"], ["Good", "Bad"]]}) == [
        "annotation_schemes[0].pairs[1]: 'Good' and 'Bad' are paired twice; list each pair only once"]
    assert errors({k: v for k, v in SD.items() if k != "pairs"}) == [
        "annotation_schemes[0].pairs: missing; a semantic_differential scheme lists pairs of opposite words, e.g. "
        "pairs: [[Good, Bad], [Strong, Weak]]"]


def test_each_pair_takes_a_point_and_both_exports_import_back(tmp_path: Path) -> None:
    path = _project(tmp_path / "project", [SD])
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'class="dimension bipolar" data-dim="Good__Bad"' in page and '<span class="pole">Weak</span>' in page
        sent = client.post("/api/label", json={"id": "v1", "go": "stay", "labels": {
            "word_connotation": {"Good__Bad": "2", "Strong__Weak": "7"}}})
        assert sent.status_code == 200, sent.get_json()
        refused = client.post("/api/label", json={"id": "v2", "go": "stay", "labels": {"word_connotation": {"Good__Bad": "8"}}})
        assert refused.get_json()["error"] == (
            "{'Good__Bad': '8'} is not an answer to 'word_connotation' (valid: an object of ratings by pair "
            "(Good__Bad, Strong__Weak), each one of: 1, 2, 3, 4, 5, 6, 7)")
    assert _run("export", path, "--upstream-format", "jsonl", "-o", tmp_path / "up").exit_code == 0
    rows = [json.loads(line) for line in (tmp_path / "up" / "annotations.jsonl").read_text().splitlines()]
    assert rows[0]["labels"] == {"word_connotation": {"Good__Bad": "2", "Strong__Weak": "7"}}
    fresh = _project(tmp_path / "fresh", [SD])
    assert _run("import-labels", fresh, tmp_path / "up" / "annotations.jsonl", "--user", "ann").exit_code == 0
    assert _stored(fresh) == _stored(path) == {("v1", "word_connotation"): {"Good__Bad": "2", "Strong__Weak": "7"}}


SOFT = {"annotation_type": "soft_label", "name": "sentiment_dist", "description": "Distribute probability",
        "labels": ["Positive", "Neutral", "Negative"], "total": 100, "min_per_label": 0, "show_distribution_chart": True}


def test_upstreams_soft_label_validates_as_shares_of_a_total() -> None:
    report = _report([SOFT])
    assert report.errors == []
    soft = report.config.annotation_schemes[0]
    assert (soft.labels, soft.total, soft.min_value, soft.show_value) == (("Positive", "Neutral", "Negative"), 100, 0, True)
    assert [o.key for o in soft.options] == ["", "", ""]  # a share is moved, not picked by a key
    assert soft.accepts({"Positive": 60, "Neutral": 30, "Negative": 10})
    assert soft.accepts({"Positive": 33.3, "Neutral": 33.3, "Negative": 33.4})
    assert not soft.accepts({"Positive": 60, "Neutral": 30, "Negative": 20})  # 110
    assert not soft.accepts({"Positive": 70, "Neutral": 30})  # a label left out
    assert not soft.accepts({"Positive": 110, "Neutral": 0, "Negative": -10})
    assert soft.valid_answer() == ("an object of shares by label (Positive, Neutral, Negative), each at least 0, "
                                   "together 100")
    errors = [i.message for i in _report([{**SOFT, "min_per_label": 40}]).errors]
    assert errors == ["annotation_schemes[0].min_per_label: 40 for each of 3 labels is more than total (100); lower "
                      "min_per_label or raise total"]


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_shares_are_stored_exported_and_imported_back(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project", [SOFT])
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-type="soft"' in page and 'class="soft" data-total="100" data-least="0"' in page
        shares = {"Positive": 60, "Neutral": 30, "Negative": 10}
        assert client.post("/api/label", json={"id": "v1", "go": "stay", "labels": {"sentiment_dist": shares}}).status_code == 200
        refused = client.post("/api/label", json={"id": "v2", "go": "stay", "labels": {"sentiment_dist": {"Positive": 100}}})
        assert refused.get_json()["error"] == (
            "{'Positive': 100} is not an answer to 'sentiment_dist' (valid: an object of shares by label (Positive, "
            "Neutral, Negative), each at least 0, together 100)")
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh", [SOFT])
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path) == {("v1", "sentiment_dist"): {"Positive": 60, "Neutral": 30, "Negative": 10}}


def test_a_share_of_nothing_is_kept_so_the_answer_still_adds_up_and_imports_back(tmp_path: Path) -> None:
    """A label given 0 was dropped on storing: the stored shares then lacked a label, and their own
    export was refused on import."""
    path = _project(tmp_path / "project", [SOFT])
    shares = {"Positive": 100, "Neutral": 0, "Negative": 0}
    with annotator(path) as client:
        assert client.post("/api/label", json={"id": "v1", "go": "stay", "labels": {"sentiment_dist": shares}}).status_code == 200
    fresh = _project(tmp_path / "fresh", [SOFT])
    assert _run("import-labels", fresh, exported(path, tmp_path, "jsonl"), "--user", "ann").exit_code == 0
    assert _stored(fresh) == _stored(path) == {("v1", "sentiment_dist"): shares}
