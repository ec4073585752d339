"""Issue 45 (item 2): a question asked on each step or turn of a trace (upstream's ``turn_level`` and
``turn_binding``), as upstream's agent-trace examples configure it.

The turns are the server's reading of the item (the ones the page draws, in the same order); an
answer names turns by id and is stored with each turn's place and text. Upstream's export holds the
answers as one JSON text under the label name ``_data``; both exports import back into a fresh project
as the same stored answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from potato.cli import cli
from potato.display.turns import turns_of
from potato.server.annotate import check_answers
from tests.harness.labelstore import (annotator, exported, invoke as _run, stored_answers as _stored,
                                     write_project)
from potato.config import validate
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder

# The shapes of upstream's per-turn-binding and negotiation-review examples.
TRACE = [{"speaker": "User", "text": "What share of Iceland lives in Reykjavik?"},
         {"speaker": "Assistant", "text": "I'll look up both figures.", "step_type": "thought"},
         {"speaker": "Agent (Action)", "text": "search(query=\"Reykjavik population\")"},
         {"speaker": "Environment", "text": "About 139,000."},
         {"speaker": "Agent (Action)", "text": "calculator(expression=\"139000 / 387000\")"},
         {"speaker": "Assistant", "text": "About 36%.", "turn_id": "final"}]
TALK = [{"speaker": "buyer", "text": "We need 500 GPU-hours.", "agent_id": "buyer", "turn_id": "n1-t0"},
        {"speaker": "seller", "text": "List price is $3.50.", "agent_id": "seller", "turn_id": "n1-t1"}]
SCHEMES = [
    {"annotation_type": "multiselect", "name": "turn_errors", "description": "Errors in this turn",
     "labels": ["hallucination", "contradiction"], "turn_level": True,
     "turn_binding": {"field": "conversation", "speakers": ["Assistant"]}},
    {"annotation_type": "likert", "name": "action_quality", "description": "Action quality", "size": 5,
     "min_label": "Poor", "max_label": "Excellent", "turn_level": True,
     "turn_binding": {"field": "conversation", "step_types": ["action"]}},
    {"annotation_type": "radio", "name": "tool_verdict", "description": "Tool call verdict",
     "labels": ["correct", "wrong_tool"], "turn_level": True,
     "turn_binding": {"field": "conversation", "tools": ["search"], "placement": "drawer"}},
    {"annotation_type": "number", "name": "cost", "description": "Cost in cents", "turn_level": True,
     "turn_label": "Cost", "turn_binding": {"field": "conversation", "turn_range": [4, 5]}},
    {"annotation_type": "radio", "name": "task_success", "description": "Did it succeed?",
     "labels": ["success", "failure"]},
]
ITEMS = [{"id": "tr1", "text": "Iceland", "conversation": TRACE},
         {"id": "tr2", "text": "Bikes", "conversation": TRACE[:4]}]


def _project(root: Path) -> Path:
    return write_project(root, "Turns", ITEMS, SCHEMES, output="annotation_output", instance_display={"fields": [
        {"key": "text", "type": "text", "label": "Task"}, {"key": "conversation", "type": "agent_trace", "label": "Trace"}]})


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        yield path, client


# -- the turns of a field --------------------------------------------------------------------------

def test_turns_are_the_drawn_steps_with_the_traces_own_ids_where_they_name_one_turn() -> None:
    turns = turns_of("agent_trace", TRACE, {})
    assert [t.id for t in turns] == ["t0", "t1", "t2", "t3", "t4", "final"]
    assert [(t.speaker, t.step_type, t.tool) for t in turns[1:3]] == [("Assistant", "thought", ""),
                                                                       ("Agent (Action)", "action", "search")]
    # A ReAct turn is three steps sharing its ids: they cannot name one step, so places do.
    react = turns_of("agent_trace", [{"turn_id": "x", "thought": "Plan.", "action": "go()", "result": "ok"}], {})
    assert [(t.id, t.step_type, t.text) for t in react] == [("t0", "thought", "Plan."), ("t1", "action", "go()"),
                                                            ("t2", "observation", "ok")]
    talk = turns_of("multi_agent_discussion", TALK, {})
    assert [(t.id, t.agent_id, t.text) for t in talk] == [("n1-t0", "buyer", "We need 500 GPU-hours."),
                                                          ("n1-t1", "seller", "List price is $3.50.")]
    cot = turns_of("cot_trace", [{"index": 0, "text": "Add.", "type": "calculation"},
                                 {"index": 1, "text": "Check.", "type": "verification"}], {})
    assert [(t.id, t.step_type, t.text) for t in cot] == [("t0", "calculation", "Add."), ("t1", "verification", "Check.")]
    said = turns_of("dialogue", ["Ann: Hi", "Bob: Hello"], {})
    assert [(t.id, t.speaker, t.text) for t in said] == [("t0", "Ann", "Hi"), ("t1", "Bob", "Hello")]
    assert turns_of("text", "plain", {}) == [] and turns_of("agent_trace", None, {}) == []


# -- the config ------------------------------------------------------------------------------------

def _errors(schemes: list[dict[str, Any]], fields: list[dict[str, Any]] | None = None) -> list[str]:
    display = {"fields": fields or [{"key": "conversation", "type": "agent_trace"}]}
    return [issue.message for issue in _report(annotation_schemes=schemes, instance_display=display).errors]


def _report(**keys: Any) -> Any:
    return validate(upstream(**keys), CONFIG)


def test_upstreams_turn_level_schemes_validate_and_bind_their_field() -> None:
    report = _report(annotation_schemes=SCHEMES, instance_display={
        "fields": [{"key": "conversation", "type": "agent_trace"}]})
    assert report.errors == []
    schemes = {s.name: s for s in report.config.annotation_schemes}
    assert schemes["tool_verdict"].turns.placement == "drawer" and schemes["tool_verdict"].turns.tools == ("search",)
    assert schemes["cost"].turns.label == "Cost" and schemes["turn_errors"].turns.label == "Errors in this turn"
    assert schemes["task_success"].turns is None
    # Asked on many turns at once, a key could not say which: the item-level question gets 1 and 2.
    assert [o.key for o in schemes["turn_errors"].options] == ["", ""]
    assert [o.key for o in schemes["task_success"].options] == ["1", "2"]
    # One answer per turn is learnt turn by turn (a step classifier), as the kind of answer it is.
    assert (schemes["turn_errors"].training_type, schemes["turn_errors"].learnt_by_step) == ("multiselect", True)
    unnamed = _report(annotation_schemes=[{**SCHEMES[0], "turn_binding": {"speakers": ["Assistant"]}}],
                       instance_display={"fields": [{"key": "t", "type": "text"}, {"key": "c", "type": "dialogue"}]})
    assert unnamed.errors == [] and unnamed.config.annotation_schemes[0].turns.field == "c"


def test_a_wrong_binding_says_what_is_wrong_and_how_to_fix_it() -> None:
    radio = {"annotation_type": "radio", "name": "q", "labels": ["a", "b"]}
    assert _errors([{**radio, "turn_binding": {"field": "conversation"}}]) == [
        "annotation_schemes[0].turn_binding: applies only with turn_level: true; add turn_level: true to ask this "
        "question on each turn, or remove it"]
    assert _errors([{"annotation_type": "span", "name": "s", "labels": ["x"], "turn_level": True}]) == [
        "annotation_schemes[0].turn_level: a span question cannot be asked per turn; turn_level takes radio, "
        "multiselect, likert, slider, select, text, number schemes"]
    assert _errors([{**radio, "turn_level": True, "turn_binding": {"field": "conversation", "speaker": ["A"]}}]) == [
        "annotation_schemes[0].turn_binding.speaker: unknown key for turn_binding (did you mean 'speakers'?). Valid "
        "keys: field, speakers, agents, step_types, tools, runs, turn_range, placement"]
    assert _errors([{**radio, "turn_level": True, "turn_binding": {"field": "conversation", "turn_range": [3, 1]}}]) == [
        "annotation_schemes[0].turn_binding.turn_range: must be [first, last], two turn numbers counted from 0 with "
        "first <= last, e.g. [0, 4]; got [3, 1]"]
    assert _errors([{**radio, "turn_level": True, "turn_binding": {"field": "notes"}}],
                   [{"key": "notes", "type": "text"}, {"key": "conversation", "type": "agent_trace"}]) == [
        "annotation_schemes[0].turn_binding.field: names 'notes', a text field, which has no turns; name a field of "
        "type agent_trace, multi_agent_discussion, cot_trace, dialogue"]
    assert _errors([{**radio, "turn_level": True, "turn_binding": {"field": "convo"}}]) == [
        "annotation_schemes[0].turn_binding.field: names 'convo', which is not a field under instance_display.fields "
        "(conversation); name the field that shows the trace (of type agent_trace, multi_agent_discussion, "
        "cot_trace, dialogue)"]
    assert _errors([{**radio, "turn_level": True}], [{"key": "a", "type": "agent_trace"},
                                                      {"key": "b", "type": "dialogue"}]) == [
        "annotation_schemes[0].turn_binding.field: missing; name the instance_display field whose turns this "
        "question is asked on: one of a, b"]
    assert _errors([{**radio, "turn_level": True, "has_free_response": True}]) == [
        "annotation_schemes[0].has_free_response: a question asked on each turn has no free-text box of its own; "
        "remove has_free_response, or add a text question with turn_level: true"]


# -- answers ---------------------------------------------------------------------------------------

def test_an_answer_per_turn_is_stored_with_the_turns_place_and_text(project: tuple[Path, Any]) -> None:
    path, client = project
    page = client.get("/annotate").get_data(as_text=True)
    assert page.count('data-type="turns"') == 4 and 'data-placement="drawer"' in page
    first = client.get("/api/item/1").get_json()["item"]
    assert first["turn_slots"]["tool_verdict"] == {"field": "conversation", "at": 1, "turns": [
        {"id": "t2", "index": 2, "caption": "Agent (Action): search(query=\"Reykjavik population\")"}]}
    assert [t["id"] for t in first["turn_slots"]["turn_errors"]["turns"]] == ["t1", "final"]
    saved = client.post("/api/label", json={"id": "tr1", "go": "stay", "labels": {
        "turn_errors": {"final": ["hallucination"], "t1": []}, "action_quality": {"t4": "2", "t2": "5"},
        "cost": {"t4": 3}, "task_success": "success"}})
    assert saved.status_code == 200, saved.get_json()
    stored = _stored(path)
    assert stored[("tr1", "turn_errors")] == {"final": {"value": ["hallucination"], "index": 5, "text": "About 36%.",
                                                         "speaker": "Assistant", "step_type": "observation"}}
    assert list(stored[("tr1", "action_quality")]) == ["t2", "t4"]  # in the trace's order
    assert stored[("tr1", "action_quality")]["t4"] == {
        "value": "2", "index": 4, "text": "calculator(expression=\"139000 / 387000\")", "speaker": "Agent (Action)",
        "step_type": "action"}
    assert stored[("tr1", "cost")]["t4"]["value"] == 3 and stored[("tr1", "task_success")] == "success"
    # The page gets back what is stored, and clearing every turn clears the answer.
    assert saved.get_json()["item"]["labels"]["cost"] == stored[("tr1", "cost")]
    assert client.post("/api/label", json={"id": "tr1", "go": "stay", "labels": {"cost": {}}}).status_code == 200
    assert ("tr1", "cost") not in _stored(path)


def test_an_answer_for_a_turn_not_asked_or_out_of_scale_is_refused_and_nothing_is_lost(
        project: tuple[Path, Any]) -> None:
    path, client = project
    assert client.post("/api/label", json={"id": "tr1", "go": "stay",
                                           "labels": {"action_quality": {"t2": "4"}}}).status_code == 200
    wrong_turn = client.post("/api/label", json={"id": "tr1", "go": "stay", "labels": {
        "action_quality": {"t2": "4", "t3": "1"}}})
    assert wrong_turn.status_code == 400
    assert wrong_turn.get_json()["error"] == ("'action_quality': turn 't3' is not one this question is asked on in "
                                              "field 'conversation' (its turns: t2, t4)")
    off_scale = client.post("/api/label", json={"id": "tr1", "go": "stay", "labels": {"action_quality": {"t2": "9"}}})
    assert off_scale.get_json()["error"] == "'action_quality': '9' is not an answer for turn 't2' (valid: 1, 2, 3, 4, 5)"
    flat = client.post("/api/label", json={"id": "tr1", "go": "stay", "labels": {"action_quality": "4"}})
    assert flat.get_json()["error"].startswith("'action_quality': '4' is not answers by turn id (valid: an object of "
                                               "answers by turn id, each 1, 2, 3, 4, 5)")
    assert _stored(path)[("tr1", "action_quality")]["t2"]["value"] == "4"


def test_check_answers_without_the_items_turns_refuses_rather_than_guesses() -> None:
    report = _report(annotation_schemes=SCHEMES, instance_display={
        "fields": [{"key": "conversation", "type": "agent_trace"}]})
    _, _, problems = check_answers(report.config, {"turn_errors": {"t1": ["hallucination"]}})
    assert problems == ["'turn_errors': turn 't1' is not one this question is asked on in field 'conversation' "
                        "(its turns: none on this item)"]


# -- export and import -----------------------------------------------------------------------------

def _annotate(client: Any) -> None:
    for item_id, labels in (("tr1", {"turn_errors": {"t1": ["contradiction"], "final": ["hallucination"]},
                                     "action_quality": {"t2": "5"}, "tool_verdict": {"t2": "wrong_tool"},
                                     "cost": {"t4": 2.5, "final": 0}}),
                            ("tr2", {"action_quality": {"t2": "1"}, "task_success": "failure"})):
        assert client.post("/api/label", json={"id": item_id, "go": "stay", "labels": labels}).status_code == 200


def test_upstreams_layout_holds_every_turns_answer_as_one_json_text(project: tuple[Path, Any], tmp_path: Path) -> None:
    path, client = project
    _annotate(client)
    assert _run("export", path, "--upstream-format", "jsonl", "-o", tmp_path / "up").exit_code == 0
    rows = [json.loads(line) for line in (tmp_path / "up" / "annotations.jsonl").read_text().splitlines()]
    labels = {row["instance_id"]: row["labels"] for row in rows}
    assert set(labels["tr1"]["turn_errors"]) == {"_data"}
    assert json.loads(labels["tr1"]["turn_errors"]["_data"]) == {"v": 1, "schema_type": "multiselect", "turns": {
        "t1": {"values": ["contradiction"], "speaker": "Assistant", "step_type": "thought"},
        "final": {"values": ["hallucination"], "speaker": "Assistant", "step_type": "observation"}}}
    # As upstream's page writes them: a likert point as its number, a number as text.
    assert json.loads(labels["tr1"]["action_quality"]["_data"])["turns"]["t2"]["value"] == 5
    assert json.loads(labels["tr1"]["cost"]["_data"])["turns"]["t4"]["value"] == "2.5"
    assert labels["tr2"]["task_success"] == {"failure": "failure"}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv", "tsv"])
def test_both_exports_import_back_as_the_same_stored_answers(project: tuple[Path, Any], tmp_path: Path,
                                                             fmt: str) -> None:
    path, client = project
    _annotate(client)
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh")
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)


def test_an_import_naming_a_turn_the_item_lacks_names_line_turn_and_the_turns_it_has(
        project: tuple[Path, Any], tmp_path: Path) -> None:
    path, _ = project
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "tr2", "schema": "turn_errors", "label": {"final": ["hallucination"]}}) + "\n")
    result = CliRunner().invoke(cli, ["import-labels", str(path), str(bad), "--user", "gold"])
    assert result.exit_code == 1
    assert (f"{bad}:1: 'turn_errors' on item 'tr2': turn 'final' is not one this question is asked on in field "
            "'conversation' (its turns: t1)") in str(result.exception)
    assert _stored(path) == {}
