"""Issue 45 (item 3): upstream's reviews of what happens at once, as its agent-traces examples configure
them: ``tool_contention`` (each time two agents' calls hold the same resource, ``calls_key``,
``agent_key``, ``resource_key``, labelled with one of ``contention_labels``) and ``voice_interaction``
(each time a caller, one of ``user_speakers``, and the agent talk at once, labelled with one of
``overlap_labels``, and the call's turn-taking rated 1 to ``rating_scale``). The regions are found as
upstream's pages find them and numbered in the same order; stored as upstream stores them,
``{"contentions": {"0": label}}`` and ``{"overlaps": {...}, "rating": n}``; both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.reviews import contentions, overlaps
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
CONTENTION = {"annotation_type": "tool_contention", "name": "contention", "description": "Classify each contention",
              "calls_key": "calls", "agent_key": "agent", "resource_key": "resource",
              "contention_labels": ["deadlock", "circular_wait", "race_condition", "benign"]}
VOICE = {"annotation_type": "voice_interaction", "name": "turn_taking", "description": "Classify each overlap",
         "turns_key": "turns", "speaker_key": "speaker", "user_speakers": ["user", "caller"],
         "overlap_labels": ["agent_should_respond", "agent_should_resume", "backchannel", "uncertain"], "rating_scale": 5}
CALLS = [{"agent": "OrderAgent", "tool": "read_inventory", "resource": "inventory_db", "start": 0.0, "end": 2.0},
         {"agent": "RestockAgent", "tool": "write_inventory", "resource": "inventory_db", "start": 1.0, "end": 3.5},
         {"agent": "OrderAgent", "tool": "write_inventory", "resource": "inventory_db", "start": 1.5, "end": 3.0},
         {"agent": "RestockAgent", "tool": "send_email", "resource": "smtp", "start": 4.0, "end": 5.0},
         {"agent": "Mailer", "tool": "send_email", "resource": "smtp", "start": 5.0, "end": 6.0}]  # touching is not at once
TURNS = [{"speaker": "user", "start": 0.0, "end": 2.8, "text": "A table for four tomorrow at seven."},
         {"speaker": "agent", "start": 3.0, "end": 6.5, "text": "Inside or on the patio?"},
         {"speaker": "Caller", "start": 6.0, "end": 7.4, "text": "Patio, please."},
         {"speaker": "agent", "start": 7.6, "end": 12.0, "text": "I have seven fifteen, is that okay?"},
         {"speaker": "user", "start": 10.5, "end": 11.2, "text": "Actually-"}]
ITEMS = [{"id": "r1", "text": "Two agents update the inventory; a reservation call", "calls": CALLS, "turns": TURNS},
         {"id": "r2", "text": "Nothing at once", "calls": CALLS[3:4], "turns": TURNS[:2]}]


def _project(root: Path) -> Path:
    return write_project(root, "At once", ITEMS, [CONTENTION, VOICE])


def _label(client: Any, item_id: str, labels: dict[str, Any]) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": True, "labels": labels})


def test_the_regions_are_found_and_numbered_as_upstreams_pages_number_them() -> None:
    found = contentions(CALLS, "agent", "resource")
    assert [(p.name, p.place, p.detail) for p in found] == [
        ("inventory_db", "1.0–2.0 s", "OrderAgent: read_inventory ⟷ RestockAgent: write_inventory"),
        ("inventory_db", "1.5–2.0 s", "OrderAgent: read_inventory ⟷ OrderAgent: write_inventory"),
        ("inventory_db", "1.5–3.0 s", "RestockAgent: write_inventory ⟷ OrderAgent: write_inventory")]
    talk = overlaps(TURNS, "speaker", ["user", "caller"])
    assert [(p.place, p.detail) for p in talk] == [
        ("6.0–6.5 s", "caller: Patio, please.\nagent: Inside or on the patio?"),
        ("10.5–11.2 s", "caller: Actually-\nagent: I have seven fifteen, is that okay?")]
    assert overlaps(TURNS, "speaker", ["nobody"]) == []  # every turn the agent's: nobody talks over anybody


def test_the_keys_are_upstreams_with_upstreams_defaults() -> None:
    report = validate(upstream(annotation_schemes=[CONTENTION, VOICE]), CONFIG)
    assert report.errors == []
    tc, vi = report.config.annotation_schemes
    assert (tc.review_steps, tc.keyed, dict(tc.review_reads)) == ("calls", "contentions", {"agent": "agent", "resource": "resource"})
    assert (vi.review_steps, vi.keyed, vi.quality_scale, dict(vi.review_reads)) == (
        "turns", "overlaps", 5, {"speaker": "speaker", "users": "user,caller"})
    plain = validate(upstream(annotation_schemes=[{"annotation_type": "voice_interaction", "name": "v"}]), CONFIG)
    assert plain.config.annotation_schemes[0].labels == ("agent_should_respond", "agent_should_resume", "backchannel",
                                                         "uncertain")
    assert dict(plain.config.annotation_schemes[0].review_reads)["users"] == "user,human,caller"


def test_labels_are_stored_by_the_regions_numbers_and_a_region_the_item_lacks_is_refused(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        parts = client.get("/api/item/1").get_json()["item"]["review_parts"]
        assert [p["what"] for p in parts["turn_taking"]] == ["Overlap 1", "Overlap 2"]
        sent = {"contention": {"contentions": {"2": "race_condition", "0": "benign", "1": ""}},
                "turn_taking": {"overlaps": {"1": "agent_should_respond"}, "rating": 2}}
        assert _label(client, "r1", sent).status_code == 200
        missing = _label(client, "r1", {"contention": {"contentions": {"3": "deadlock"}}})
        assert missing.get_json()["error"] == "'contention': this item has 3 contentions, numbered 0 to 2; there is no 3"
        none = _label(client, "r2", {"turn_taking": {"overlaps": {"0": "backchannel"}}})
        assert none.get_json()["error"] == "'turn_taking': this item has no overlaps; leave them out"
        rated = _label(client, "r2", {"turn_taking": {"rating": 4}})  # a call nobody talks over is still rated
        assert rated.status_code == 200
        wrong = _label(client, "r1", {"contention": {"contentions": {"0": "livelock"}}})
        assert wrong.get_json()["error"] == (
            "{'contentions': {'0': 'livelock'}} is not an answer to 'contention' (valid: {\"contentions\": {a part's number "
            "as text (\"0\" for the first): one of deadlock, circular_wait, race_condition, benign}})")
    assert stored_answers(path) == {
        ("r1", "contention"): {"contentions": {"0": "benign", "2": "race_condition"}},
        ("r1", "turn_taking"): {"overlaps": {"1": "agent_should_respond"}, "rating": 2},
        ("r2", "turn_taking"): {"rating": 4}}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, "r1", {"contention": {"contentions": {"1": "deadlock"}},
                                     "turn_taking": {"overlaps": {"0": "backchannel"}, "rating": 5}}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":  # upstream's: each answer one JSON text under the scheme's name
        labels = json.loads(source.read_text().splitlines()[0])["labels"]
        assert json.loads(labels["turn_taking"]["turn_taking"]) == {"overlaps": {"0": "backchannel"}, "rating": 5}
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) and len(stored_answers(fresh)) == 2
