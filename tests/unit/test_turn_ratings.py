"""Issue 45 (item 2): a dialogue field's ``per_turn_ratings`` (upstream's agent-trace-evaluation and
dialogue-qa examples): each turn of the named speakers rated on one or more scales of points, each
scale a question of its own asked beside those turns. Upstream stores a scale's ratings as one JSON
text ``{turn's place: point}`` under ``_data``; both exports import back as the same stored answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from potato.config import validate
from tests.conftest import ADMIN_KEY
from tests.harness.labelstore import annotator, invoke as _run, stored_answers as _stored
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder

TRACE = [{"speaker": "User", "text": "Book a table for two."},
         {"speaker": "Agent (Action)", "text": "search_restaurants(party=2)"},
         {"speaker": "Environment", "text": "3 found."},
         {"speaker": "Agent (Action)", "text": "book(id=7)", "turn_id": "booking"}]
RATINGS = {"speakers": ["Agent (Action)"], "schemes": [
    {"schema_name": "action_correctness", "scheme": {"type": "likert", "size": 3, "labels": ["Wrong", "Right"]}},
    {"schema_name": "reasoning_quality", "scheme": {"type": "likert", "size": 5, "labels": ["Poor", "Excellent"]}}]}
SUCCESS = {"annotation_type": "radio", "name": "task_success", "labels": ["success", "failure"]}


def _fields(ratings: Any = RATINGS) -> list[dict[str, Any]]:
    return [{"key": "task", "type": "text"},
            {"key": "conversation", "type": "dialogue", "display_options": {"per_turn_ratings": ratings}}]


def _project(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    items = [{"id": "d1", "task": "Dinner", "conversation": TRACE}, {"id": "d2", "task": "Lunch", "conversation": TRACE[:2]}]
    (root / "data" / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    config = {"annotation_task_name": "Ratings", "task_dir": ".", "data_files": ["data/items.jsonl"],
              "item_properties": {"id_key": "id", "text_key": "task"}, "output_annotation_dir": "annotation_output",
              "admin_api_key": ADMIN_KEY, "annotation_schemes": [SUCCESS], "instance_display": {"fields": _fields()}}
    path = root / "config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    path.chmod(0o600)
    return path


def _errors(ratings: Any, schemes: list[dict[str, Any]] | None = None) -> list[str]:
    report = validate(upstream(annotation_schemes=schemes or [SUCCESS], instance_display={"fields": _fields(ratings)}),
                      CONFIG)
    return [issue.message for issue in report.errors]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        yield path, client


def test_each_scale_is_a_question_asked_on_the_named_speakers_turns() -> None:
    report = validate(upstream(annotation_schemes=[SUCCESS], instance_display={"fields": _fields()}), CONFIG)
    assert report.errors == []
    schemes = {s.name: s for s in report.config.annotation_schemes}
    assert list(schemes) == ["task_success", "action_correctness", "reasoning_quality"]
    scale = schemes["action_correctness"]
    assert (scale.description, scale.labels, scale.min_label, scale.max_label) == (
        "Action Correctness", ("1", "2", "3"), "Wrong", "Right")
    assert (scale.turns.field, scale.turns.speakers) == ("conversation", ("Agent (Action)",))
    assert (scale.training_type, scale.learnt_by_step, scale.step_mistakes) == ("radio", True, ())
    # dialogue-qa's form: one scale, named by schema_name beside it.
    one = validate(upstream(annotation_schemes=[SUCCESS], instance_display={"fields": _fields(
        {"speakers": ["Agent"], "schema_name": "turn_quality", "scheme": {"type": "likert", "size": 5}})}), CONFIG)
    assert [s.name for s in one.config.annotation_schemes] == ["task_success", "turn_quality"]


def test_a_wrong_rating_says_what_is_wrong_and_how_to_fix_it() -> None:
    at = "instance_display.fields[1].display_options.per_turn_ratings"
    assert _errors({"speakers": ["Agent"]}) == [
        f"{at}: names no scale; give scheme (and schema_name) or schemes, e.g. {{speakers: [Agent], schema_name: "
        "turn_quality, scheme: {type: likert, size: 5, labels: [Poor, Excellent]}}"]
    assert _errors({"schema_name": "task_success", "scheme": {"type": "likert"}}) == [
        f"{at}.schema_name: 'task_success' is already the name of a question; give each scale its own schema_name"]
    assert _errors({"schemes": [{"schema_name": "q", "scheme": {"type": "radio"}}]}) == [
        f"{at}.schemes[0].scheme.type: 'radio' is not a valid per_turn_ratings scale type; valid choices: likert"]
    assert _errors({"scheme": {"type": "likert", "size": 1}}) == [
        f"{at}.scheme.size: must be a whole number from 2 to 20, got 1"]


def test_ratings_are_stored_per_turn_and_exported_and_imported_as_upstream_does(
        project: tuple[Path, Any], tmp_path: Path) -> None:
    path, client = project
    slots = client.get("/api/item/1").get_json()["item"]["turn_slots"]
    assert [t["id"] for t in slots["action_correctness"]["turns"]] == ["t1", "booking"]
    saved = client.post("/api/label", json={"id": "d1", "go": "stay", "labels": {
        "action_correctness": {"t1": "3", "booking": "1"}, "reasoning_quality": {"booking": "4"},
        "task_success": "failure"}})
    assert saved.status_code == 200, saved.get_json()
    assert client.post("/api/label", json={"id": "d2", "go": "stay", "labels": {
        "action_correctness": {"t1": "2"}}}).status_code == 200
    stored = _stored(path)
    assert stored[("d1", "action_correctness")]["booking"] == {"value": "1", "index": 3, "text": "book(id=7)",
                                                               "speaker": "Agent (Action)"}
    assert _run("export", path, "--upstream-format", "jsonl", "-o", tmp_path / "up").exit_code == 0
    rows = [json.loads(line) for line in (tmp_path / "up" / "annotations.jsonl").read_text().splitlines()]
    labels = {row["instance_id"]: row["labels"] for row in rows}
    assert json.loads(labels["d1"]["action_correctness"]["_data"]) == {"1": 3, "3": 1}
    assert json.loads(labels["d1"]["reasoning_quality"]["_data"]) == {"3": 4}
    for source in (tmp_path / "up" / "annotations.jsonl", tmp_path / "ours.jsonl"):
        if source.name == "ours.jsonl":
            assert _run("export", path, "-o", source).exit_code == 0
        fresh = _project(tmp_path / f"fresh-{source.stem}")
        result = _run("import-labels", fresh, source, "--user", "ann")
        assert result.exit_code == 0, result.output
        assert _stored(fresh) == stored
