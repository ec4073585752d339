"""Issue 45 (item 3): upstream's failure attribution, as its agent-traces examples configure it.

Once per item, the annotator names the agent that caused a multi-agent system's failure, the
decisive step and why; the agents and steps offered are the item's own (its list under
``steps_key``, each step's agent under ``agent_key``, else its speaker), or the scheme's ``agents``.
Stored as upstream stores it, ``{"responsible_agent", "decisive_step", "reason"}`` (the step by its
place, 0 for the first); an agent or step the item does not have is refused with the ones it has.
Upstream's export names the answer by the scheme, as JSON text; both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.errors import LabelImportError
from potato.upstream_export import our_value, upstream_labels
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
HOSTILE = '<img src=x onerror="window.__pwned=1">'
ATTRIBUTION = {"annotation_type": "failure_attribution", "name": "attribution",
               "description": "If it failed: which agent, which step, and why?", "steps_key": "steps", "agent_key": "agent"}
ITEMS = [
    {"id": "booking", "task": "Book a refundable flight under $400.", "steps": [
        {"agent": "Planner", "content": "Delegating search to the Researcher."},
        {"agent": "Researcher", "content": "Found UA482 $612 refundable; DL901 $338 non-refundable."},
        {"agent": "Planner", "content": f"DL901 is the cheapest. Booking DL901. {HOSTILE}"},
        {"agent": "Booking", "content": "Booked DL901."}]},
    # safety-escalation's shape: no agent_key on the steps, each named by its speaker and its text under text
    {"id": "logs", "task": "Free disk space.", "steps": [
        {"speaker": "Agent (Thought)", "text": "Remove rotated logs.", "step_type": "thought"},
        {"speaker": "Agent (Action)", "text": "shell(command=\"rm -rf /var/lib/postgresql/wal_archive/*\")"},
        {"speaker": "Environment", "text": "Removed 7.3 GB."}]},
]
ANSWER = {"responsible_agent": "Planner", "decisive_step": 2, "reason": "Ignored the refundable constraint."}


def _project(root: Path, scheme: dict[str, Any] = ATTRIBUTION) -> Path:
    return write_project(root, "Attribution", ITEMS, [
        {"annotation_type": "radio", "name": "outcome", "description": "Did the system succeed?",
         "labels": ["success", "failure"]}, scheme], text_key="task",
        instance_display={"fields": [{"key": "task", "type": "text"},
                                     {"key": "steps", "type": "agent_trace",
                                      "display_options": {"speaker_key": "agent", "text_key": "content"}}]})


def _label(client: Any, item_id: str, value: Any) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": True, "labels": {"attribution": value}})


def test_upstreams_failure_attribution_validates_as_a_question_naming_a_step() -> None:
    report = validate(upstream(annotation_schemes=[ATTRIBUTION]), CONFIG)
    assert report.errors == []
    scheme = report.config.annotation_schemes[0]
    assert scheme.names_step is not None and scheme.names_step.field == "steps" and scheme.training_type is None
    assert scheme.accepts(ANSWER) and scheme.accepts({"reason": "no idea who"})
    assert scheme.accepts({"responsible_agent": "", "decisive_step": 0, "reason": ""})  # the first step
    for bad in ({}, {"responsible_agent": "", "decisive_step": None, "reason": ""}, {"decisive_step": -1},
                {"decisive_step": True}, {"decisive_step": "2"}, {"agent": "Planner"}, "Planner"):
        assert not scheme.accepts(bad), bad
    wrong = [i.message for i in validate(upstream(annotation_schemes=[{**ATTRIBUTION, "labels": ["a", "b"]}]),
                                         CONFIG).errors]
    assert wrong and all("labels" in m for m in wrong)
    listed = validate(upstream(annotation_schemes=[{**ATTRIBUTION, "agents": ["Planner", "Booking"]}]), CONFIG)
    assert listed.errors == [] and listed.config.annotation_schemes[0].agents == ("Planner", "Booking")
    elsewhere = validate(upstream(annotation_schemes=[{"annotation_type": "radio", "name": "r", "labels": ["a", "b"],
                                                       "agent_key": "agent"}]), CONFIG)
    assert [i.message for i in elsewhere.errors] == [
        "annotation_schemes[0].agent_key: applies to failure_attribution, handoff_review, agent_scorecard, "
        "emergent_behavior, tool_contention and agent_interaction_graph schemes only; remove it from this radio scheme"]


def test_the_item_offers_its_own_agents_and_steps_and_refuses_others(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-type="attribution"' in page and "Decisive error step" in page
        first = client.get("/api/item/1").get_json()["item"]
        assert first["step_choices"]["attribution"] == {
            "agents": ["Planner", "Researcher", "Booking"],
            "steps": [{"index": 0, "caption": "1. [Planner] Delegating search to the Researcher."},
                      {"index": 1, "caption": "2. [Researcher] Found UA482 $612 refundable; DL901 $338 non-refundable."},
                      {"index": 2, "caption": f"3. [Planner] DL901 is the cheapest. Booking DL901. {HOSTILE}"[:79] + "…"},
                      {"index": 3, "caption": "4. [Booking] Booked DL901."}]}
        second = client.get("/api/item/2").get_json()["item"]["step_choices"]["attribution"]
        assert second["agents"] == ["Agent (Thought)", "Agent (Action)", "Environment"]
        assert [s["caption"][:20] for s in second["steps"]] == ["1. [Agent (Thought)]", "2. [Agent (Action)] ",
                                                                 "3. [Environment] Rem"]

        assert _label(client, "booking", ANSWER).status_code == 200
        refused = _label(client, "logs", {"responsible_agent": "Planner"})
        assert refused.status_code == 400 and refused.get_json()["error"] == (
            "'attribution': no agent 'Planner' took a step of this item (its agents: Agent (Thought), Agent (Action), "
            "Environment)")
        refused = _label(client, "logs", {"decisive_step": 3})
        assert refused.get_json()["error"] == (
            "'attribution': this item has 3 steps, numbered 0 to 2; there is no step 3")
        assert _label(client, "logs", {"decisive_step": 1}).status_code == 200
        assert _label(client, "logs", {"responsible_agent": "", "decisive_step": None, "reason": ""}).status_code == 200
    # Stored whole, as upstream stores it; emptied, the answer is gone.
    assert stored_answers(path) == {("booking", "attribution"): ANSWER}


def test_the_agents_a_scheme_lists_are_the_ones_offered(tmp_path: Path) -> None:
    path = _project(tmp_path / "project", {**ATTRIBUTION, "agents": ["Planner", "Verifier"]})
    with annotator(path) as client:
        assert client.get("/api/item/1").get_json()["item"]["step_choices"]["attribution"]["agents"] == ["Planner", "Verifier"]
        assert _label(client, "booking", {"responsible_agent": "Verifier"}).status_code == 200
        assert _label(client, "booking", {"responsible_agent": "Researcher"}).status_code == 400


def test_upstreams_export_names_it_by_the_scheme_as_json_text() -> None:
    scheme = validate(upstream(annotation_schemes=[ATTRIBUTION]), CONFIG).config.annotation_schemes[0]
    shown = upstream_labels(scheme, ANSWER)
    assert list(shown) == ["attribution"] and json.loads(shown["attribution"]) == ANSWER
    assert our_value(scheme, shown) == ANSWER


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, "booking", ANSWER).status_code == 200
        assert _label(client, "logs", {"responsible_agent": "Agent (Action)", "decisive_step": 1}).status_code == 200
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) == {
        ("booking", "attribution"): ANSWER,
        ("logs", "attribution"): {"responsible_agent": "Agent (Action)", "decisive_step": 1, "reason": ""}}


def test_an_import_naming_a_step_the_item_lacks_is_refused_with_the_steps_it_has(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    source = tmp_path / "labels.jsonl"
    source.write_text(json.dumps({"id": "logs", "schema": "attribution", "label": {"decisive_step": 7}}) + "\n",
                      encoding="utf-8")
    with pytest.raises(LabelImportError) as refused:
        invoke("import-labels", path, source, "--user", "ann")
    assert "'attribution' on item 'logs': this item has 3 steps, numbered 0 to 2; there is no step 7" in str(refused.value)
    assert stored_answers(path) == {}
