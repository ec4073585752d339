"""Issue 45 (item 3): upstream's ``multirate`` scheme, as its rag-evaluation and agent-comparison
examples configure it: each of its ``options`` (a row: a retrieved document, an agent's dimension)
rated with one of its ``labels``, stored as ``{option: label}``; required, every row needs its
rating. Upstream's export names each rating by its option, and reads back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from potato.config import validate
from tests.harness.labelstore import annotator, invoke as _run, stored_answers as _stored, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
RELEVANCE = {"annotation_type": "multirate", "name": "retrieval_relevance",
             "description": "Rate the relevance of each retrieved document", "options": [
                 {"name": "doc_1", "label": "Document 1"}, {"name": "doc_2", "label": "Document 2",
                                                            "tooltip": "The second hit"}, "doc_3"],
             "labels": ["Irrelevant", "Somewhat", "Relevant"], "label_requirement": {"required": True},
             "arrangement": "vertical"}


def _project(root: Path) -> Path:
    items = [{"id": "q1", "text": "Who wrote Dune?"}, {"id": "q2", "text": "When was it published?"}]
    return write_project(root, "RAG", items, [RELEVANCE])


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        yield path, client


def test_each_option_is_a_row_rated_with_one_of_the_labels() -> None:
    report = validate(upstream(annotation_schemes=[RELEVANCE]), CONFIG)
    assert report.errors == []
    assert [w.message for w in report.warnings if "arrangement" in w.path] == [
        "annotation_schemes[0].arrangement: 'arrangement' is a Potato feature this server does not support: the order "
        "of a multirate scheme's rows in columns; remove it or run that project on upstream Potato"]
    scheme = report.config.annotation_schemes[0]
    assert [(d.name, d.shown, d.tooltip) for d in scheme.dimensions] == [
        ("doc_1", "Document 1", ""), ("doc_2", "Document 2", "The second hit"), ("doc_3", "doc_3", "")]
    assert scheme.labels == ("Irrelevant", "Somewhat", "Relevant") and scheme.training_type is None
    assert [o.key for o in scheme.options] == ["", "", ""]  # a key could not say which row it rates
    errors = [i.message for i in validate(upstream(annotation_schemes=[{**RELEVANCE, "options": []}]), CONFIG).errors]
    assert errors == ["annotation_schemes[0].options: missing; a multirate scheme lists what is rated, e.g. options: "
                      "[Document 1, Document 2], or [{name: doc_1, label: Document 1}]"]


def test_ratings_are_stored_by_row_and_a_required_one_needs_every_row(project: tuple[Path, Any]) -> None:
    path, client = project
    page = client.get("/annotate").get_data(as_text=True)
    assert 'data-type="rows"' in page and 'data-dim="doc_2"' in page and 'Document 2</strong> <span class="muted">The second hit' in page
    partial = client.post("/api/label", json={"id": "q1", "go": "stay", "partial": True,
                                              "labels": {"retrieval_relevance": {"doc_1": "Relevant"}}})
    assert partial.status_code == 200
    done = client.post("/api/label", json={"id": "q1", "go": "stay", "labels": {"retrieval_relevance": {
        "doc_1": "Relevant", "doc_3": "Irrelevant"}}})
    assert done.get_json()["error"] == ("'retrieval_relevance' needs an answer on every row (doc_2 still open): it "
                                        "is required")
    wrong = client.post("/api/label", json={"id": "q1", "go": "stay", "labels": {"retrieval_relevance": {"doc_9": "Relevant"}}})
    assert wrong.get_json()["error"] == (
        "{'doc_9': 'Relevant'} is not an answer to 'retrieval_relevance' (valid: an object of ratings by option (doc_1, "
        "doc_2, doc_3), each one of: Irrelevant, Somewhat, Relevant)")
    assert _stored(path) == {("q1", "retrieval_relevance"): {"doc_1": "Relevant"}}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_upstreams_layout_names_each_rating_by_its_option_and_reads_back(project: tuple[Path, Any], tmp_path: Path,
                                                                        fmt: str) -> None:
    path, client = project
    rows = {"doc_1": "Relevant", "doc_2": "Somewhat", "doc_3": "Irrelevant"}
    assert client.post("/api/label", json={"id": "q2", "go": "stay", "labels": {"retrieval_relevance": rows}}
                       ).status_code == 200
    assert _run("export", path, "--upstream-format", fmt, "-o", tmp_path / "up").exit_code == 0
    source = tmp_path / "up" / f"annotations.{fmt}"
    if fmt == "jsonl":
        assert json.loads(source.read_text().splitlines()[0])["labels"] == {"retrieval_relevance": rows}
    fresh = _project(tmp_path / "fresh")
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)


RUBRIC = {"annotation_type": "rubric_eval", "name": "response_quality", "description": "Evaluate the response",
          "scale_points": 5, "scale_labels": ["Poor", "Below Average", "Average", "Good", "Excellent"],
          "criteria": [{"name": "accuracy", "description": "Are the claims correct?"},
                       {"name": "clarity", "description": "Is it easy to follow?"}], "show_overall": True}


def test_a_rubrics_criteria_are_rows_rated_from_one_to_its_points(tmp_path: Path) -> None:
    """Upstream's rubric_eval (its rubric-eval, plan-review and debate-judging examples): each criterion
    rated 1 to scale_points, stored and exported as {criterion: point}."""
    report = validate(upstream(annotation_schemes=[RUBRIC]), CONFIG)
    assert report.errors == []
    rubric = report.config.annotation_schemes[0]
    assert [d.name for d in rubric.dimensions] == ["accuracy", "clarity", "overall"]
    assert [o.shown for o in rubric.options] == ["1 Poor", "2 Below Average", "3 Average", "4 Good", "5 Excellent"]
    assert rubric.labels == ("1", "2", "3", "4", "5")
    three = validate(upstream(annotation_schemes=[{**RUBRIC, "scale_points": 3, "scale_labels": ["Low", "High"]}]), CONFIG)
    assert [i.message for i in three.errors] == [
        "annotation_schemes[0].scale_labels: names 2 points for a scale of 3 (scale_points); give one label per point"]
    assert rubric.valid_answer() == ("an object of ratings by criterion (accuracy, clarity, overall), each one of: "
                                     "1, 2, 3, 4, 5")
    path = _project(tmp_path / "project")
    config = json.loads(path.read_text())
    path.write_text(json.dumps({**config, "annotation_schemes": [RUBRIC]}), encoding="utf-8")
    with annotator(path) as client:
        assert "accuracy</strong> <span class=\"muted\">Are the claims correct?" in client.get("/annotate").get_data(
            as_text=True)
        assert client.post("/api/label", json={"id": "q1", "go": "stay", "labels": {"response_quality": {
            "accuracy": "4", "clarity": "2", "overall": "3"}}}).status_code == 200
    assert _run("export", path, "--upstream-format", "jsonl", "-o", tmp_path / "up").exit_code == 0
    row = json.loads((tmp_path / "up" / "annotations.jsonl").read_text().splitlines()[0])
    assert row["labels"] == {"response_quality": {"accuracy": "4", "clarity": "2", "overall": "3"}}
