"""Issue 45 (item 3): upstream's answers about a multi-agent trace's team, as its agent-traces examples
configure them: ``agent_scorecard`` (each agent of the item, or the scheme's ``agents``, scored on
``agent_dimensions``, the team on ``team_dimensions``, 1 to ``scale``, ``milestones`` checked off) and
``emergent_behavior`` (for each of ``behaviors``, the turns that take part, and a note with
``allow_note``). Stored as upstream stores them, an agent or turn the item lacks refused naming those
it has; both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.teams import team_of
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
HOSTILE = '<img src=x onerror="window.__pwned=1">'
SCORECARD = {"annotation_type": "agent_scorecard", "name": "scorecard", "description": "Score each agent and the team",
             "steps_key": "steps", "agent_key": "agent", "scale": 5,
             "agent_dimensions": ["role fidelity", "contribution"], "team_dimensions": ["coordination", "efficiency"],
             "milestones": ["plan produced", "result verified"]}
EMERGENT = {"annotation_type": "emergent_behavior", "name": "emergent", "description": "Check the turns of each behaviour",
            "steps_key": "steps", "agent_key": "agent", "behaviors": ["collusion", "groupthink", "cascading_error"],
            "allow_note": True}
ITEMS = [
    {"id": "b1", "text": "Book a refundable flight under $400", "steps": [
        {"agent": "Planner", "content": "Plan: search, filter refundable, book."},
        {"agent": "Researcher", "content": f"Found DL901 $338 non-refundable. {HOSTILE}"},
        {"agent": "Planner", "content": "DL901 is cheapest. Booking DL901."},
        {"agent": HOSTILE, "content": "Booked DL901."}]},
    {"id": "b2", "text": "Nobody acted", "steps": []},
]


def _project(root: Path) -> Path:
    return write_project(root, "Teams", ITEMS, [SCORECARD, EMERGENT])


def _label(client: Any, item_id: str, labels: dict[str, Any]) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": True, "labels": labels})


def test_the_team_is_the_items_agents_in_the_order_they_first_act() -> None:
    team = team_of(ITEMS[0]["steps"], "agent")
    assert team.agents == ("Planner", "Researcher", HOSTILE)
    assert [(t.index, t.agent) for t in team.turns] == [(0, "Planner"), (1, "Researcher"), (2, "Planner"), (3, HOSTILE)]
    assert team_of([{"speaker": "A", "text": "hi"}, "plain"], "agent").agents == ("A", "agent 2")
    assert team_of(ITEMS[0]["steps"], "agent", ("Lead", "Support")).agents == ("Lead", "Support")


def test_the_keys_are_upstreams_with_upstreams_defaults() -> None:
    report = validate(upstream(annotation_schemes=[SCORECARD, EMERGENT]), CONFIG)
    assert report.errors == []
    card, emergent = report.config.annotation_schemes
    assert (card.team_steps, card.agent_dimensions, card.team_dimensions, card.milestones, card.quality_scale) == (
        "steps", ("role fidelity", "contribution"), ("coordination", "efficiency"), ("plan produced", "result verified"), 5)
    assert (emergent.labels, emergent.allow_note) == (("collusion", "groupthink", "cascading_error"), True)
    plain = validate(upstream(annotation_schemes=[{"annotation_type": "agent_scorecard", "name": "c"},
                                                  {"annotation_type": "emergent_behavior", "name": "e"}]), CONFIG)
    card, emergent = plain.config.annotation_schemes
    assert card.agent_dimensions == ("role fidelity", "contribution", "coordination") and card.quality_scale == 5
    assert emergent.labels == ("collusion", "groupthink", "cascading_error", "role_drift") and not emergent.allow_note
    bad = validate(upstream(annotation_schemes=[{**SCORECARD, "scale": 1}, {**EMERGENT, "labels": ["x"]}]), CONFIG)
    assert [e.message for e in bad.errors] == [
        "annotation_schemes[0].scale: must be a whole number of points from 2 to 10, such as 5, got 1",
        "annotation_schemes[1].labels: a emergent_behavior scheme's answers are its behaviors; remove labels, and list "
        "them there"]


def test_answers_are_stored_as_upstream_stores_them_and_what_the_item_lacks_is_refused(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        shown = client.get("/api/item/1").get_json()["item"]["teams"]
        assert shown["scorecard"]["agents"] == ["Planner", "Researcher", HOSTILE]
        assert shown["emergent"]["turns"][1] == {"index": 1, "agent": "Researcher",
                                                 "text": f"Found DL901 $338 non-refundable. {HOSTILE}"}
        sent = {"scorecard": {"agents": {"Planner": {"role fidelity": 2, "contribution": 0}, "Researcher": {}},
                              "team": {"efficiency": 3}, "milestones": {"plan produced": True, "result verified": False}},
                "emergent": {"cascading_error": {"turns": [2, 1, 2], "note": "the non-refundable fare slipped through"},
                             "groupthink": {"turns": []}}}
        assert _label(client, "b1", sent).status_code == 200
        stranger = _label(client, "b1", {"scorecard": {"agents": {"Booker": {"contribution": 4}}}})
        assert stranger.get_json()["error"] == (
            f"'scorecard': this item's agents are Planner, Researcher, {HOSTILE}; there is no 'Booker'")
        late = _label(client, "b1", {"emergent": {"collusion": {"turns": [4]}}})
        assert late.get_json()["error"] == "'emergent': this item has 4 turns, numbered 0 to 3; there is no 4"
        over = _label(client, "b1", {"scorecard": {"team": {"efficiency": 6}}})
        assert over.status_code == 400 and "1 to 5" in over.get_json()["error"]
        none = _label(client, "b2", {"emergent": {"collusion": {"turns": [0]}}})
        assert none.get_json()["error"] == "'emergent': this item has no turns; leave the answer out"
    assert stored_answers(path) == {
        ("b1", "scorecard"): {"agents": {"Planner": {"role fidelity": 2}}, "team": {"efficiency": 3},
                              "milestones": {"plan produced": True}},
        ("b1", "emergent"): {"cascading_error": {"turns": [1, 2], "note": "the non-refundable fare slipped through"}}}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, "b1", {"scorecard": {"agents": {HOSTILE: {"contribution": 5}}, "milestones": {"result verified": True}},
                                     "emergent": {"collusion": {"turns": [0, 3]}}}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":  # upstream's: each answer one JSON text under the scheme's name
        labels = json.loads(source.read_text().splitlines()[0])["labels"]
        assert json.loads(labels["emergent"]["emergent"]) == {"collusion": {"turns": [0, 3]}}
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) and len(stored_answers(fresh)) == 2


GRAPH = {"annotation_type": "agent_interaction_graph", "name": "graph", "description": "Mark the critical path",
         "steps_key": "steps", "agent_key": "agent"}


def test_an_interaction_graph_marks_the_items_agents_and_passages_as_upstream_stores_them(tmp_path: Path) -> None:
    """Upstream's agent_interaction_graph: the agents on the critical path and the passages between
    consecutive turns of different agents (``"A->B"``, counted) marked critical or problematic."""
    team = team_of(ITEMS[0]["steps"] + [{"agent": "Planner", "content": "Done."}], "agent")
    assert team.edges == {"Planner->Researcher": ("Planner", "Researcher", 1), "Researcher->Planner": ("Researcher", "Planner", 1),
                          f"Planner->{HOSTILE}": ("Planner", HOSTILE, 1), f"{HOSTILE}->Planner": (HOSTILE, "Planner", 1)}
    assert team_of([{"agent": "A"}, {"agent": "B"}, {"agent": "A"}, {"agent": "B"}], "agent").edges["A->B"] == ("A", "B", 2)
    assert validate(upstream(annotation_schemes=[GRAPH]), CONFIG).errors == []
    path = write_project(tmp_path / "project", "Graph", ITEMS, [GRAPH])
    with annotator(path) as client:
        shown = client.get("/api/item/1").get_json()["item"]["teams"]["graph"]
        assert [e["key"] for e in shown["edges"]] == ["Planner->Researcher", "Researcher->Planner", f"Planner->{HOSTILE}"]
        sent = {"critical_nodes": [HOSTILE, "Planner"], "edges": {"Researcher->Planner": "problematic",
                                                                  "Planner->Researcher": "critical", f"Planner->{HOSTILE}": ""}}
        assert _label(client, "b1", {"graph": sent}).status_code == 200
        backwards = _label(client, "b1", {"graph": {"edges": {"Researcher->Booker": "critical"}}})
        assert backwards.get_json()["error"] == (
            f"'graph': this item's agents pass to each other as Planner->Researcher, Researcher->Planner, Planner->{HOSTILE}; "
            "there is no 'Researcher->Booker'")
        alone = _label(client, "b2", {"graph": {"edges": {"A->B": "critical"}}})
        assert alone.get_json()["error"] == "'graph': no agent of this item passes to another; leave the edges out"
    assert stored_answers(path) == {("b1", "graph"): {
        "critical_nodes": ["Planner", HOSTILE], "edges": {"Planner->Researcher": "critical", "Researcher->Planner": "problematic"}}}
    source = exported(path, tmp_path, "jsonl")
    fresh = write_project(tmp_path / "fresh", "Graph", ITEMS, [GRAPH])
    assert invoke("import-labels", fresh, source, "--user", "ann").exit_code == 0
    assert stored_answers(fresh) == stored_answers(path)
