"""Issue 45 (moving upstream's projects over): upstream's ``dynamic_labels``, as its
check-box-dynamic-labels example uses it: label names that are templates (``{{instance_obj.labels[0]}}``)
filled from each item; an item that fills fewer offers fewer. An answer is the labels as the item fills
them, checked against the item; no model learns such a question (its classes change with the item)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.config._schemes import training_types
from potato.dynamic_labels import item_labels, template_problem
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
REPLIES = {"annotation_type": "multiselect", "name": "appropriateness", "description": "Which replies fit?",
           "dynamic_labels": True, "sequential_key_binding": True,
           "labels": [{"name": "{{instance_obj.labels[0]}}"}, {"name": "{{instance_obj.labels[1]}}"},
                      {"name": "{{instance_obj.labels[2]}}"}]}
ITEMS = [{"id": "d1", "text": "Isn't this awesome?!", "labels": ["Sounds great", "Coool", "Nice"]},
         {"id": "d2", "text": "Two only", "labels": ["HAHAHA", "Yes"]}]


def _label(client: Any, item_id: str, value: Any) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "labels": {"appropriateness": value}})


def test_the_templates_are_filled_from_each_item() -> None:
    names = ("{{instance_obj.labels[0]}}", "{{instance_obj.labels[1]}}", "Other: {{ instance_obj.extra }}")
    assert item_labels(names, {"labels": ["a", "b"], "extra": 3}) == ["a", "b", "Other: 3"]
    assert item_labels(names, {"labels": ["a"]}) == ["a"]  # what the item cannot fill is not offered
    assert template_problem("plain") is not None and template_problem("{{instance_obj.x}}") is None
    report = validate(upstream(annotation_schemes=[REPLIES]), CONFIG)
    assert report.errors == [] and report.config.annotation_schemes[0].dynamic
    bad = validate(upstream(annotation_schemes=[{**REPLIES, "labels": ["{{instance_obj.labels[0]}}", "{{ item.x }}"]}]),
                   CONFIG)
    assert [e.message for e in bad.errors] == [
        "annotation_schemes[0].labels[1]: '{{ item.x }}' holds no {{instance_obj.<key>}} or {{instance_obj.<key>[n]}} "
        "to fill from the item"]
    assert training_types([REPLIES, {**REPLIES, "name": "fixed", "dynamic_labels": False}]) == {
        "appropriateness": None, "fixed": "multiselect"}  # a trainer learns fixed classes only


def test_an_answer_is_the_items_own_labels(tmp_path: Path) -> None:
    path = write_project(tmp_path / "project", "Replies", ITEMS, [REPLIES])
    with annotator(path) as client:
        assert client.get("/api/item/2").get_json()["item"]["dynamic_labels"] == {"appropriateness": ["HAHAHA", "Yes"]}
        assert _label(client, "d1", ["Coool", "Nice"]).status_code == 200
        other = _label(client, "d2", ["Coool"])
        assert other.get_json()["error"] == "'appropriateness': this item offers 'HAHAHA', 'Yes'; not 'Coool'"
    assert stored_answers(path) == {("d1", "appropriateness"): ["Coool", "Nice"]}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = write_project(tmp_path / "project", "Replies", ITEMS, [REPLIES])
    with annotator(path) as client:
        assert _label(client, "d2", ["Yes"]).status_code == 200
    source = exported(path, tmp_path, fmt)
    fresh = write_project(tmp_path / "fresh", "Replies", ITEMS, [REPLIES])
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path)
