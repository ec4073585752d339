"""Issue 45 (item 1): upstream's ``show_run_tree`` on an agent trace, as its sub-agent-tree example
uses it: the item's ``run_tree`` (nodes with ``id``, ``parent_id``, ``name``, ``run_type``, ``status``,
``turn_range``) drawn beside the trace, each run naming the steps it and the runs under it took (by
the steps' ``run_id``, else by its ``turn_range``), so that choosing one shows only those."""

from __future__ import annotations

from pathlib import Path

from potato.config import validate
from potato.display.traces import run_tree, trace_steps
from tests.harness.labelstore import annotator, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
HOSTILE = '<img src=x onerror="window.__pwned=1">'
CONVERSATION = [
    {"speaker": "Agent (Thought)", "text": "Delegate research, then write.", "run_id": "run-orchestrator"},
    {"speaker": "Agent (Thought)", "text": "Researching the market.", "run_id": "run-researcher"},
    {"speaker": "Agent (Action)", "text": "search(query=\"e-cargo bikes\")", "run_id": "run-search"},
    {"speaker": "Environment", "text": "$1.4B, 13% CAGR.", "run_id": "run-search"},
    {"speaker": "Agent (Thought)", "text": "Research complete.", "run_id": "run-researcher"},
    {"speaker": "Agent", "text": "The market reached $1.4B.", "run_id": "run-writer"}]
RUNS = [{"id": "run-orchestrator", "parent_id": None, "name": "orchestrator", "run_type": "chain", "status": "success",
         "turn_range": [0, 5]},
        {"id": "run-researcher", "parent_id": "run-orchestrator", "name": "researcher", "run_type": "chain",
         "status": "success", "turn_range": [1, 4]},
        {"id": "run-search", "parent_id": "run-researcher", "name": HOSTILE, "run_type": "tool", "status": "error",
         "turn_range": [2, 3]},
        {"id": "run-writer", "parent_id": "run-orchestrator", "name": "writer", "run_type": "chain", "turn_range": [5, 5]}]
FIELDS = [{"key": "conversation", "type": "agent_trace", "label": "Agent Trace",
           "display_options": {"show_step_numbers": True, "show_run_tree": True}}]
DELEGATION = {"annotation_type": "likert", "name": "delegation_quality", "description": "Sub-agent delegation quality",
              "min_label": "Poor", "max_label": "Excellent", "size": 5, "turn_level": True,
              "turn_binding": {"field": "conversation", "runs": ["run-researcher", "run-writer"]}}
ITEMS = [{"id": "tree-1", "text": "Write a market summary", "conversation": CONVERSATION, "run_tree": RUNS},
         {"id": "flat-1", "text": "No sub-agents", "conversation": CONVERSATION[:2]}]


def test_each_run_names_the_steps_it_and_the_runs_under_it_took() -> None:
    tree = run_tree(RUNS, trace_steps(CONVERSATION))
    assert [(n["name"], n["depth"], n["steps"], n["range"]) for n in tree] == [
        ("orchestrator", 0, [0, 1, 2, 3, 4, 5], "steps 0–5"), ("researcher", 1, [1, 2, 3, 4], "steps 1–4"),
        (HOSTILE, 2, [2, 3], "steps 2–3"), ("writer", 1, [5], "step 5")]
    # A trace naming no runs is split by the runs' turn ranges; a parent missing from the tree makes a root;
    # a node without an id, or its own parent, cannot hide the rest.
    plain = [{"speaker": s["speaker"], "text": s["text"]} for s in CONVERSATION]
    assert [n["steps"] for n in run_tree(RUNS, trace_steps(plain))] == [[0, 1, 2, 3, 4, 5], [1, 2, 3, 4], [2, 3], [5]]
    odd = run_tree([{"id": "a", "parent_id": "gone"}, {"name": "no id"}, {"id": "b", "parent_id": "b"}, "x"], [])
    assert [(n["id"], n["depth"]) for n in odd] == [("a", 0), ("b", 0)]


def test_the_tree_comes_with_the_trace_unless_it_is_turned_off(tmp_path: Path) -> None:
    assert validate(upstream(annotation_schemes=[DELEGATION], instance_display={"fields": FIELDS}), CONFIG).errors == []
    path = write_project(tmp_path / "on", "Runs", ITEMS, [DELEGATION], instance_display={"fields": FIELDS})
    with annotator(path) as client:
        field = client.get("/api/item/1").get_json()["item"]["fields"][0]
        assert [n["id"] for n in field["run_tree"]] == ["run-orchestrator", "run-researcher", "run-search", "run-writer"]
        assert "run_tree" not in client.get("/api/item/2").get_json()["item"]["fields"][0]
    off = [{**FIELDS[0], "display_options": {"show_run_tree": False}}]
    path = write_project(tmp_path / "off", "Runs", ITEMS, [DELEGATION], instance_display={"fields": off})
    with annotator(path) as client:
        assert "run_tree" not in client.get("/api/item/1").get_json()["item"]["fields"][0]
