"""Issue 45 (item 3): upstream's trajectory correction (``trajectory_edit``), as its agent-traces
examples configure it: each of ``editable_fields`` of each step of the item's list under ``steps_key``
rewritten in a box that starts with it, and with ``edit_final_answer`` the final answer too. Stored as
upstream stores it (each field edited with whether it changed, both distances and a reason; the
final answer; how many changed and their characters changed together), all counted by the server;
an edit of a step or field the item lacks is refused; ``require_reason_on_edit`` asks a reason for
each change before the item is done; both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.edits import edit_distance, trajectory_originals
from potato.errors import LabelImportError
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
CORRECTION = {"annotation_type": "trajectory_edit", "name": "corrected_trajectory",
              "description": "Fix any wrong steps, then correct the final answer", "steps_key": "steps",
              "step_text_key": "action", "editable_fields": ["action"], "show_diff": True, "show_edit_distance": True,
              "allow_reset": True, "edit_final_answer": True, "final_answer_key": "final_answer"}
HOSTILE = '<img src=x onerror="window.__pwned=1">'
ITEMS = [
    {"id": "traj_001", "task_description": "Find the weather in San Francisco.", "steps": [
        {"thought": "I should look up the current weather.", "action": "web_search(queyr='San Francisco weather')"},
        {"thought": f"Open the first result. {HOSTILE}", "action": "open_url(results[0])"},
        {"thought": "Read the temperature.", "action": {"tool": "extract_text", "selector": ".temp"}}],
     "final_answer": "It is sunny."},
    # plan-review's shape: the steps' words under text, no final answer
    {"id": "plan_001", "task_description": "Migrate the users table.", "steps": [
        {"speaker": "Agent (Plan)", "text": "Step 1: Take a full mysqldump.", "step_type": "thought"},
        {"speaker": "Agent (Plan)", "text": "Step 2: Drop the users table in MySQL.", "step_type": "thought"}]},
]
FIXED = "web_search(query='San Francisco weather')"


def _project(root: Path, scheme: dict[str, Any] = CORRECTION) -> Path:
    return write_project(root, "Corrections", ITEMS, [scheme], text_key="task_description")


def _label(client: Any, item_id: str, value: Any, partial: bool = True) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": partial,
                                           "labels": {"corrected_trajectory": value}})


def _step(n: int, original: str, edited: str, reason: str = "") -> dict[str, Any]:
    return {"step_index": n, "field": "action", "original_text": original, "edited_text": edited,
            "edited": original != edited, "edit_distance_chars": edit_distance(original, edited),
            "edit_distance_words": edit_distance(original.split(), edited.split()), "reason": reason}


def test_upstreams_trajectory_edit_validates_as_boxes_for_the_steps_fields() -> None:
    report = validate(upstream(annotation_schemes=[CORRECTION]), CONFIG)
    assert report.errors == []
    scheme = report.config.annotation_schemes[0]
    assert (scheme.edit_steps, scheme.editable_fields, scheme.final_answer_key, scheme.reason_on_edit) == (
        "steps", ("action",), "final_answer", False)
    plan = validate(upstream(annotation_schemes=[{"annotation_type": "trajectory_edit", "name": "p", "steps_key": "steps",
                                                  "step_text_key": "text", "editable_fields": ["text"]}]), CONFIG)
    assert plan.errors == [] and plan.config.annotation_schemes[0].final_answer_key is None  # without edit_final_answer
    assert scheme.accepts({"steps": [{"step_index": 0, "field": "action", "edited_text": FIXED}]})
    assert scheme.accepts({"final_answer": {"edited_text": "It is 18 degrees."}})
    for bad in ({}, {"steps": []}, {"steps": [{"step_index": 0, "field": "thought", "edited_text": "x"}]},
                {"steps": [{"step_index": -1, "field": "action", "edited_text": "x"}]},
                {"steps": [{"step_index": 0, "field": "action"}]}, {"final_answer": "x"}):
        assert not scheme.accepts(bad), bad
    originals = trajectory_originals(ITEMS[0], "steps", "action", ("action",), "final_answer")
    assert originals.steps[2] == (2, "action", '{"tool":"extract_text","selector":".temp"}')  # as upstream's page writes it
    assert originals.thoughts[1] == (1, f"Open the first result. {HOSTILE}") and originals.final_answer == "It is sunny."


def test_the_server_counts_every_edit_and_refuses_a_step_the_item_lacks(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-type="trajedit"' in page and "Total edit distance" in page
        shown = client.get("/api/item/1").get_json()["item"]["edit_sources"]["corrected_trajectory"]
        assert [s["step"] for s in shown["steps"]] == [0, 1, 2] and shown["final_answer"] == "It is sunny."
        assert shown["thoughts"]["0"] == "I should look up the current weather."
        sent = {"steps": [{"step_index": 0, "field": "action", "edited_text": FIXED, "edit_distance_chars": 0},
                          {"step_index": 1, "field": "action", "edited_text": "open_url(results[0])"}],
                "final_answer": {"edited_text": "It is 18 degrees and sunny."}, "n_steps_edited": 0}
        assert _label(client, "traj_001", sent).status_code == 200
        refused = _label(client, "plan_001", {"steps": [{"step_index": 0, "field": "action", "edited_text": "x"}]})
        assert refused.get_json()["error"] == (
            "'corrected_trajectory': step 1 has no 'action' to edit (this item's steps are edited in: nothing)")
        refused = _label(client, "plan_001", {"final_answer": {"edited_text": "x"}})
        assert refused.get_json()["error"] == (
            "'corrected_trajectory': this item has no final answer to edit; leave final_answer out")
    final = {"original_text": "It is sunny.", "edited_text": "It is 18 degrees and sunny.", "edited": True,
             "edit_distance_chars": edit_distance("It is sunny.", "It is 18 degrees and sunny."), "edit_distance_words": 3}
    expected = {"steps": [_step(0, "web_search(queyr='San Francisco weather')", FIXED),
                          _step(1, "open_url(results[0])", "open_url(results[0])")],
                "final_answer": final, "n_steps_edited": 2, "total_edit_distance": 2 + final["edit_distance_chars"]}
    assert stored_answers(path) == {("traj_001", "corrected_trajectory"): expected}
    assert expected["steps"][0]["edit_distance_chars"] == 2  # "queyr" -> "query"


def test_a_reason_is_asked_for_each_change_before_the_item_is_done(tmp_path: Path) -> None:
    path = _project(tmp_path / "project", {**CORRECTION, "require_reason_on_edit": True})
    with annotator(path) as client:
        assert 'class="edit-reason"' in client.get("/annotate").get_data(as_text=True)
        edit = {"steps": [{"step_index": 0, "field": "action", "edited_text": FIXED, "reason": ""}]}
        assert _label(client, "traj_001", edit).status_code == 200  # kept as it is typed
        done = _label(client, "traj_001", edit, partial=False)
        assert done.status_code == 400 and done.get_json()["error"] == (
            "'corrected_trajectory' needs a reason for each edit (step 1's action has none)")
        edit["steps"][0]["reason"] = "typo in the keyword"
        assert _label(client, "traj_001", edit, partial=False).status_code == 200
    assert stored_answers(path)[("traj_001", "corrected_trajectory")]["steps"][0]["reason"] == "typo in the keyword"


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, "traj_001", {"steps": [{"step_index": 0, "field": "action", "edited_text": FIXED}],
                                           "final_answer": None}).status_code == 200
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path)
    assert stored_answers(fresh)[("traj_001", "corrected_trajectory")]["steps"][0]["edited_text"] == FIXED


def test_an_import_editing_another_original_is_refused(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    source = tmp_path / "labels.jsonl"
    source.write_text(json.dumps({"id": "traj_001", "schema": "corrected_trajectory", "label": {"steps": [
        {"step_index": 1, "field": "action", "original_text": "open_url(results[1])", "edited_text": "x"}]}}) + "\n",
        encoding="utf-8")
    with pytest.raises(LabelImportError) as refused:
        invoke("import-labels", path, source, "--user", "ann")
    assert "it edits 'open_url(results[1])', but this item's text to edit is 'open_url(results[0])'" in str(refused.value)
    assert stored_answers(path) == {}
