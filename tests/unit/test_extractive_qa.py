"""Issue 45 (item 3): upstream's ``extractive_qa``, as its classification/extractive-qa example
configures it: the item's question (``question_field``) and the answer marked in its passage
(``passage_field``, else the item's text), or no answer where ``allow_unanswerable``. Stored as upstream
stores it, ``{"answer_text", "start", "end", "unanswerable"}``, the words checked against the passage;
both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
QA = {"annotation_type": "extractive_qa", "name": "answer_span", "description": "Mark the answer in the passage",
      "question_field": "question", "passage_field": "passage", "allow_unanswerable": True, "highlight_color": "#FFEB3B"}
PASSAGE = "The Eiffel Tower 🗼 was completed in 1889 for the World's Fair."
ITEMS = [{"id": "q1", "text": "Eiffel", "question": "When was the Eiffel Tower completed?", "passage": PASSAGE},
         {"id": "q2", "text": "Nothing", "question": "Who built the pyramids?", "passage": "Bread is baked."}]


def _label(client: Any, item_id: str, value: Any) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "labels": {"answer_span": value}})


def test_the_keys_are_upstreams() -> None:
    report = validate(upstream(annotation_schemes=[QA]), CONFIG)
    assert report.errors == []
    qa = report.config.annotation_schemes[0]
    assert (qa.qa_fields, qa.allow_unanswerable) == (("question", "passage"), True)
    plain = validate(upstream(annotation_schemes=[{"annotation_type": "extractive_qa", "name": "a"}]), CONFIG)
    assert plain.config.annotation_schemes[0].qa_fields == ("question", "")


def test_an_answer_is_the_passages_own_words_where_it_says(tmp_path: Path) -> None:
    path = write_project(tmp_path / "project", "QA", ITEMS, [QA])
    start = PASSAGE.index("1889")
    start_points = len(PASSAGE[:start])  # the emoji is one character (a code point), as the server counts
    with annotator(path) as client:
        assert client.get("/api/item/1").get_json()["item"]["passages"]["answer_span"] == {
            "question": "When was the Eiffel Tower completed?", "passage": PASSAGE}
        given = {"answer_text": "in 1889", "start": start_points - 3, "end": start_points + 4, "unanswerable": False}
        assert _label(client, "q1", given).status_code == 200
        wrong = _label(client, "q1", {**given, "answer_text": "in 1890"})
        assert wrong.get_json()["error"] == (
            f"'answer_span': characters {start_points - 3} to {start_points + 4} of the passage are 'in 1889', not "
            "'in 1890'; mark the answer in the passage again")
        past = _label(client, "q1", {"answer_text": "x", "start": 200, "end": 201, "unanswerable": False})
        assert "an answer ending at 201 is past its end" in past.get_json()["error"]
        none = {"answer_text": "", "start": -1, "end": -1, "unanswerable": True}
        assert _label(client, "q2", none).status_code == 200
    assert stored_answers(path) == {("q1", "answer_span"): given, ("q2", "answer_span"): none}
    strict = write_project(tmp_path / "strict", "QA", ITEMS, [{**QA, "allow_unanswerable": False}])
    with annotator(strict) as client:
        assert _label(client, "q2", {"answer_text": "", "start": -1, "end": -1, "unanswerable": True}).status_code == 400


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = write_project(tmp_path / "project", "QA", ITEMS, [QA])
    with annotator(path) as client:
        assert _label(client, "q1", {"answer_text": "Eiffel Tower", "start": 4, "end": 16, "unanswerable": False}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":
        labels = json.loads(source.read_text().splitlines()[0])["labels"]
        assert json.loads(labels["answer_span"]["answer_span"])["answer_text"] == "Eiffel Tower"
    fresh = write_project(tmp_path / "fresh", "QA", ITEMS, [QA])
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path)
