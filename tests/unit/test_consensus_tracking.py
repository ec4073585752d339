"""Issue 45 (item 3): upstream's ``consensus_tracking`` scheme, as its multi-agent-discussion,
negotiation-review and debate-judging examples configure it: each turn of the item's list under
``turns_key`` tagged with one of ``acts``; an act of ``linked_acts`` may name the turn it answers.
Stored per turn (``"proposal"`` or ``{"act": "agreement", "ref": "t0"}``) with the turn's place and
text; upstream's export holds one JSON list of tags by the turns' places, and reads back.
"""

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
TALK = [{"speaker": "buyer", "agent_id": "buyer", "text": "We need 500 GPU-hours at $2."},
        {"speaker": "seller", "agent_id": "seller", "text": "List price is $3.50; I can do $3."},
        {"speaker": "buyer", "agent_id": "buyer", "text": "Deal at $3."}]
MOVES = {"annotation_type": "consensus_tracking", "name": "moves", "description": "Tag the negotiation moves",
         "turns_key": "conversation", "acts": ["offer", "counter_offer", "accept", "reject"],
         "linked_acts": ["counter_offer", "accept", "reject"]}
FIELDS = [{"key": "conversation", "type": "multi_agent_discussion", "label": "Negotiation"}]


def _project(root: Path) -> Path:
    return write_project(root, "Deals", [{"id": "n1", "text": "GPU deal", "conversation": TALK}], [MOVES],
                         instance_display={"fields": FIELDS})


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        yield path, client


def _label(client: Any, value: Any) -> Any:
    return client.post("/api/label", json={"id": "n1", "go": "stay", "labels": {"moves": value}})


def test_acts_are_asked_on_each_turn_beside_the_discussion() -> None:
    report = validate(upstream(annotation_schemes=[MOVES], instance_display={"fields": FIELDS}), CONFIG)
    assert report.errors == []
    moves = report.config.annotation_schemes[0]
    assert moves.labels == ("offer", "counter_offer", "accept", "reject")
    assert moves.linked_labels == ("counter_offer", "accept", "reject")
    assert (moves.turns.field, moves.turns.placement) == ("conversation", "inline")
    # Upstream's defaults; with no field drawing the turns one by one, they are listed under the question.
    plain = validate(upstream(annotation_schemes=[{"annotation_type": "consensus_tracking", "name": "acts"}]), CONFIG)
    assert plain.errors == []
    acts = plain.config.annotation_schemes[0]
    assert acts.labels == ("proposal", "agreement", "disagreement", "decision", "concession")
    assert acts.turns.placement == "list"
    bad = validate(upstream(annotation_schemes=[{**MOVES, "linked_acts": ["agree"]}], instance_display={"fields": FIELDS}),
                   CONFIG)
    assert [i.message for i in bad.errors] == [
        "annotation_schemes[0].linked_acts: names 'agree', which is not one of the acts (offer, counter_offer, accept, "
        "reject); list only acts"]


def test_an_act_and_the_turn_it_answers_are_stored_per_turn(project: tuple[Path, Any]) -> None:
    path, client = project
    assert "data-linked='[\"counter_offer\", \"accept\", \"reject\"]'" in client.get("/annotate").get_data(as_text=True)
    saved = _label(client, {"t0": "offer", "t1": {"act": "counter_offer", "ref": "t0"}, "t2": {"act": "accept"}})
    assert saved.status_code == 200, saved.get_json()
    stored = _stored(path)[("n1", "moves")]
    assert stored["t1"] == {"value": {"act": "counter_offer", "ref": "t0"}, "index": 1,
                            "text": "List price is $3.50; I can do $3.", "speaker": "seller", "agent_id": "seller"}
    assert stored["t2"]["value"] == {"act": "accept"}
    itself = _label(client, {"t1": {"act": "accept", "ref": "t1"}})
    assert itself.get_json()["error"] == ("'moves': turn 't1' refers to 't1', which is not another turn of this item "
                                          "(its turns: t0, t1, t2)")
    unlinked = _label(client, {"t0": {"act": "offer", "ref": "t1"}})
    assert unlinked.get_json()["error"].startswith("'moves': {'act': 'offer', 'ref': 't1'} is not an answer for turn 't0'")
    assert _stored(path)[("n1", "moves")] == stored


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_upstreams_list_of_tags_and_ours_import_back(project: tuple[Path, Any], tmp_path: Path, fmt: str) -> None:
    path, client = project
    assert _label(client, {"t0": "offer", "t1": {"act": "counter_offer", "ref": "t0"}, "t2": "accept"}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":
        tags = json.loads(json.loads(source.read_text().splitlines()[0])["labels"]["moves"]["moves"])
        assert tags == [{"turn": 0, "act": "offer", "agent_id": "buyer"},
                        {"turn": 1, "act": "counter_offer", "agent_id": "seller", "ref": 0},
                        {"turn": 2, "act": "accept", "agent_id": "buyer"}]
    fresh = _project(tmp_path / "fresh")
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)


CONTEXT = {"annotation_type": "context_attribution", "name": "memory_use", "description": "How did the agent use its context?",
           "turns_key": "conversation"}
DINNER = [{"speaker": "User", "text": "Vegetarian, and nothing after 8pm."},
          {"speaker": "Assistant", "text": "Got it: vegetarian, seated by 8pm."},
          {"speaker": "Assistant", "text": "I recommend Luna at 9:15; you said you prefer late dinners."}]


def test_context_attribution_tags_each_turn_with_upstreams_acts_and_the_turn_it_draws_on(tmp_path: Path) -> None:
    """Upstream's context_attribution is a consensus tracker with acts of its own: how each turn used
    what was said before, an invented or a correctly used context naming the turn in question."""
    report = validate(upstream(annotation_schemes=[CONTEXT]), CONFIG)
    assert report.errors == []
    memory = report.config.annotation_schemes[0]
    assert memory.labels == ("used_context_correctly", "hallucinated_context", "ignored_context")
    assert memory.linked_labels == ("used_context_correctly", "hallucinated_context")
    assert "ask for the earlier turn" in memory.turns.label
    path = write_project(tmp_path / "project", "Memory", [{"id": "c1", "text": "dinner", "conversation": DINNER}], [CONTEXT])
    with annotator(path) as client:
        saved = client.post("/api/label", json={"id": "c1", "go": "stay", "labels": {"memory_use": {
            "t1": {"act": "used_context_correctly", "ref": "t0"}, "t2": {"act": "hallucinated_context", "ref": "t0"}}}})
        assert saved.status_code == 200, saved.get_json()
        alone = client.post("/api/label", json={"id": "c1", "go": "stay", "labels": {"memory_use": {
            "t2": {"act": "ignored_context", "ref": "t0"}}}})
        assert "is not an answer for turn 't2'" in alone.get_json()["error"]
    source = exported(path, tmp_path, "jsonl")
    tags = json.loads(json.loads(source.read_text().splitlines()[0])["labels"]["memory_use"]["memory_use"])
    assert tags == [{"turn": 1, "act": "used_context_correctly", "agent_id": "Assistant", "ref": 0},
                    {"turn": 2, "act": "hallucinated_context", "agent_id": "Assistant", "ref": 0}]
    fresh = write_project(tmp_path / "fresh", "Memory", [{"id": "c1", "text": "dinner", "conversation": DINNER}], [CONTEXT])
    assert _run("import-labels", fresh, source, "--user", "ann").exit_code == 0
    assert _stored(fresh) == _stored(path)
