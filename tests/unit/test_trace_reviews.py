"""Issue 45 (item 3): upstream's reviews of a trace's parts, as its agent-traces examples configure
them: each tool call judged (``tool_call_review``: a verdict of ``verdict_options`` and notes), each
handoff between agents flagged and rated (``handoff_review``: ``flags`` and a quality 1 to
``quality_scale``). Stored as upstream stores them, a list of the parts given an answer, each with what
the part is written from the item; a part the item lacks is refused; both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.errors import LabelImportError
from potato.reviews import handoffs, tool_calls
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
HOSTILE = '<img src=x onerror="window.__pwned=1">'
TOOLS = {"annotation_type": "tool_call_review", "name": "tool_review",
         "description": "Judge each tool call: right tool? correct arguments?", "steps_key": "steps"}
HANDOFFS = {"annotation_type": "handoff_review", "name": "handoffs",
            "description": "For each handoff: flag any misalignment and rate the quality.", "steps_key": "steps",
            "agent_key": "agent", "flags": ["info_loss", "dropped_constraint", "garbling", "goal_drift"], "quality_scale": 5}
ITEMS = [
    {"id": "t1", "task": "Find weather in NYC and book a table", "steps": [
        {"agent": "Planner", "content": "I'll check the weather.",
         "tool_calls": [{"name": "get_weather", "args": {"city": "New York", "units": "metric"}}]},
        {"agent": "Tool", "content": "22C, sunny"},
        {"agent": "Planner", "content": f"Now book a table. {HOSTILE}",
         "tool_calls": [{"name": "book_table", "args": {"restaurant": "", "time": "7pm"}},
                        {"name": HOSTILE, "arguments": HOSTILE}]},
        {"agent": "Booker", "content": "Error: restaurant required", "tool": "notify", "args": {"to": "user"}}]},
    {"id": "t2", "task": "Say hello", "steps": [{"agent": "Planner", "content": "Hello."}]},
]


def _project(root: Path, *schemes: dict[str, Any]) -> Path:
    return write_project(root, "Reviews", ITEMS, list(schemes or (TOOLS, HANDOFFS)), text_key="task")


def _label(client: Any, item_id: str, labels: dict[str, Any]) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": True, "labels": labels})


def test_the_parts_are_read_from_the_steps_as_upstreams_pages_read_them() -> None:
    calls = tool_calls(ITEMS[0]["steps"])
    assert [(c.index, c.step, dict(c.names)["tool"]) for c in calls] == [
        (0, 0, "get_weather"), (1, 2, "book_table"), (2, 2, HOSTILE), (3, 3, "notify")]
    assert json.loads(calls[0].detail) == {"city": "New York", "units": "metric"} and calls[2].detail == HOSTILE
    assert [dict(h.names) | {"step": h.step} for h in handoffs(ITEMS[0]["steps"], "agent")] == [
        {"from": "Planner", "to": "Tool", "step": 1}, {"from": "Tool", "to": "Planner", "step": 2},
        {"from": "Planner", "to": "Booker", "step": 3}]
    assert [dict(h.names) for h in handoffs([{"speaker": "A"}, "plain", {"role": "A"}], "agent")] == [
        {"from": "A", "to": "agent 2"}, {"from": "agent 2", "to": "A"}]  # a step naming no agent is one of its own


def test_upstreams_reviews_validate_with_their_words() -> None:
    report = validate(upstream(annotation_schemes=[TOOLS, HANDOFFS]), CONFIG)
    assert report.errors == []
    tools, hands = report.config.annotation_schemes
    assert tools.labels == ("correct", "wrong_tool", "wrong_args") and tools.review_steps == "steps"
    assert hands.labels == ("info_loss", "dropped_constraint", "garbling", "goal_drift") and hands.quality_scale == 5
    assert [o.key for o in tools.options] == ["", "", ""] and tools.training_type is None
    assert tools.accepts([{"index": 0, "verdict": "wrong_args", "notes": "city is fine"}])
    assert hands.accepts([{"index": 1, "flags": ["info_loss"], "quality": 2}])
    for bad in ([], [{"index": 0, "verdict": "maybe"}], [{"index": -1, "verdict": "correct"}],
                [{"index": 0, "verdict": "correct"}, {"index": 0, "notes": "twice"}], {"index": 0}):
        assert not tools.accepts(bad), bad
    for bad in ([{"index": 0, "quality": 6}], [{"index": 0, "flags": ["rude"]}], [{"index": 0, "quality": True}]):
        assert not hands.accepts(bad), bad
    wrong = [i.message for i in validate(upstream(annotation_schemes=[{**TOOLS, "flags": ["x"]}]), CONFIG).errors]
    assert wrong == ["annotation_schemes[0].flags: applies to handoff_review schemes only; remove it from this "
                     "tool_call_review scheme"]


def test_each_part_is_stored_with_what_it_is_and_a_part_the_item_lacks_is_refused(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-type="review"' in page and 'data-part="verdict" value="wrong_tool"' in page
        parts = client.get("/api/item/1").get_json()["item"]["review_parts"]
        assert [p["tool"] for p in parts["tool_review"]] == ["get_weather", "book_table", HOSTILE, "notify"]
        assert parts["handoffs"][2] == {"index": 2, "step": 3, "from": "Planner", "to": "Booker", "detail": "",
                                        "name": "Planner → Booker", "place": "step 4", "what": "Handoff 3 (Planner → Booker)",
                                        "image": "", "caption": "", "marker": None}
        # What names a part is written from the item, whatever was sent; parts left blank are left out.
        sent = {"tool_review": [{"index": 1, "tool": "something else", "verdict": "wrong_args", "notes": "no restaurant"},
                                {"index": 0, "verdict": "", "notes": ""}],
                "handoffs": [{"index": 2, "flags": ["dropped_constraint"], "quality": 2}, {"index": 0, "quality": 4}]}
        assert _label(client, "t1", sent).status_code == 200
        refused = _label(client, "t1", {"tool_review": [{"index": 4, "verdict": "correct"}]})
        assert refused.get_json()["error"] == (
            "'tool_review': this item has 4 to review, numbered 0 to 3; there is no 4")
        refused = _label(client, "t2", {"handoffs": [{"index": 0, "quality": 3}]})
        assert refused.get_json()["error"] == "'handoffs': this item has nothing to review here; leave the answer out"
    assert stored_answers(path) == {
        ("t1", "tool_review"): [{"index": 1, "step": 2, "tool": "book_table", "verdict": "wrong_args", "notes": "no restaurant"}],
        ("t1", "handoffs"): [{"index": 0, "step": 1, "from": "Planner", "to": "Tool", "quality": 4},
                             {"index": 2, "step": 3, "from": "Planner", "to": "Booker", "flags": ["dropped_constraint"],
                              "quality": 2}]}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, "t1", {"tool_review": [{"index": 3, "verdict": "correct", "notes": "fine"}],
                                     "handoffs": [{"index": 1, "flags": ["garbling", "goal_drift"]}]}).status_code == 200
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) and len(stored_answers(fresh)) == 2


def test_an_import_naming_a_call_the_item_lacks_is_refused(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    source = tmp_path / "labels.jsonl"
    source.write_text(json.dumps({"id": "t2", "schema": "tool_review", "label": [{"index": 0, "verdict": "correct"}]}) + "\n",
                      encoding="utf-8")
    with pytest.raises(LabelImportError) as refused:
        invoke("import-labels", path, source, "--user", "ann")
    assert "'tool_review' on item 't2': this item has nothing to review here" in str(refused.value)
