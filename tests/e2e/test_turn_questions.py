"""Issue 45 (item 2) in a real browser, under gunicorn: questions asked on each step of an agent's
trace (upstream's turn_level), walked with the keyboard at 390 and 1280 px. Each question sits under
the steps it is asked on (a tool's verdict in a drawer); an answer is stored as it is picked, with
the step's place and text; it is there again after a reload and after going to the next item and back.
Every string of the trace is hostile markup, and nothing of it runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become, stored_labels
from tests.harness.pages import focused, sign_in
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
SCHEMES = [
    {"annotation_type": "likert", "name": "action_quality", "description": "Action quality", "size": 5,
     "min_label": "Poor", "max_label": "Excellent", "turn_level": True,
     "turn_binding": {"field": "conversation", "step_types": ["action"]}},
    {"annotation_type": "multiselect", "name": "turn_errors", "description": "Errors in this turn",
     "labels": ["hallucination", "contradiction"], "turn_level": True,
     "turn_binding": {"field": "conversation", "speakers": ["Assistant"]}},
    {"annotation_type": "radio", "name": "tool_verdict", "description": "Tool call verdict",
     "labels": ["correct", "wrong_tool"], "turn_level": True,
     "turn_binding": {"field": "conversation", "tools": ["search"], "placement": "drawer"}},
    {"annotation_type": "radio", "name": "task_success", "description": "Did the agent succeed?",
     "labels": ["success", "failure"]},
]


def item(n: int) -> dict[str, Any]:
    return {"id": f"tr{n}", "text": f"Task {n}", "conversation": [
        {"speaker": "User", "text": f"How many people live in Reykjavik? {HOSTILE}"},
        {"speaker": "Assistant", "text": f"I'll look it up. {HOSTILE}", "step_type": "thought"},
        {"speaker": "Agent (Action)", "text": f"search(query=\"{HOSTILE}\")"},
        {"speaker": "Environment", "text": f"About 139,000. {HOSTILE}"},
        {"speaker": "Agent (Action)", "text": "calculator(expression=\"139000 / 387000\")"},
        {"speaker": "Assistant", "text": f"About 36%. {HOSTILE}"}]}


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    path = make_project(n_items=2, annotation_schemes=SCHEMES, instance_display={"fields": [
        {"key": "text", "type": "text", "label": "Task"},
        {"key": "conversation", "type": "agent_trace", "label": "Trace"}]})
    (path.parent / "data" / "reviews.json").write_text(json.dumps([item(0), item(1)]), encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


def stored(server: ServerProcess, expected: dict[tuple[str, str], Any], within: float = 15.0) -> None:
    """The stored per-turn answers (turn id -> value) reach ``expected``: each is saved as it is picked."""
    answers_become(server.url, "ana", expected, within, by_turn=True)


def checked(page: Any) -> list[list[str]]:
    """Each turn slot's picks, in page order: [schema, turn, picks...]."""
    return page.eval_on_selector_all(".turn-slot", """l => l.map(s => [s.dataset.schema, s.dataset.turn,
        ...[...s.querySelectorAll('input:checked')].map(i => i.value)])""")


@pytest.mark.parametrize("width", [390, 1280])
def test_a_question_per_step_is_answered_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text))
    sign_in(page, server, "ana", width, first="tr0")

    # Each question sits under the steps it is asked on: actions, the assistant's turns, the search call.
    slots = page.eval_on_selector_all(".agent-trace .trace-step", """l => l.map(s =>
        [...s.querySelectorAll('.turn-slot')].map(t => t.dataset.schema))""")
    assert slots == [[], ["turn_errors"], ["action_quality", "tool_verdict"], [], ["action_quality"], ["turn_errors"]]
    assert page.inner_text("fieldset[data-schema=action_quality] .turn-progress") == "0 of 2 turns answered"
    # The item-level question keeps its keys; the per-step ones have none (a key could not say which step).
    assert page.eval_on_selector_all("input[data-key]", "l => l.map(i => i.value)") == ["success", "failure"]

    # The keyboard: to the third step, into its question, down the scale to 4.
    page.focus(".agent-trace .trace-step")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Step 3 of 6"
    page.keyboard.press("Tab")
    assert focused(page) == "Action quality (turn 3): 1"
    page.keyboard.press("Space")
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    assert focused(page) == "Action quality (turn 3): 4"
    stored(server, {("tr0", "action_quality"): {"t2": "4"}})
    assert page.inner_text("fieldset[data-schema=action_quality] .turn-progress") == "1 of 2 turns answered"
    # The search call's verdict is in a drawer: Tab to it, Enter opens it, Space picks.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "\u270e Tool call verdict"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")  # from correct to wrong_tool
    assert focused(page) == "Tool call verdict (turn 3): wrong_tool"
    # The last turn's errors, with the mouse; the item-level question by its key.
    page.click(".trace-step[data-step-index='5'] .turn-slot label:has-text('hallucination')")
    page.keyboard.press("2")
    stored(server, {("tr0", "action_quality"): {"t2": "4"}, ("tr0", "tool_verdict"): {"t2": "wrong_tool"},
                    ("tr0", "turn_errors"): {"t5": ["hallucination"]}, ("tr0", "task_success"): "failure"})
    row = [r for r in stored_labels(server.url, "ana") if r["schema"] == "turn_errors"][0]
    assert row["label"]["t5"]["text"] == f"About 36%. {HOSTILE}" and row["label"]["t5"]["index"] == 5
    expected = [["action_quality", "t2", "4"], ["tool_verdict", "t2", "wrong_tool"], ["action_quality", "t4"],
                ["turn_errors", "t1"], ["turn_errors", "t5", "hallucination"]]
    assert sorted(checked(page)) == sorted(expected)

    # The next item asks afresh; back, and after a reload, every answer is where it was given.
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('tr1')")
    assert all(len(slot) == 2 for slot in checked(page))
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('tr0')")
    assert sorted(checked(page)) == sorted(expected)
    page.reload()
    page.wait_for_selector("#item-id:text('tr0')")
    assert sorted(checked(page)) == sorted(expected)
    assert page.inner_text("fieldset[data-schema=turn_errors] .turn-progress") == "1 of 2 turns answered"

    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('#item-text script, #item-text img').length") == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console


RATED = [{"speaker": "User", "text": f"Book a table. {HOSTILE}"},
         {"speaker": "Agent (Action)", "text": f"search_restaurants(q=\"{HOSTILE}\")"},
         {"speaker": "Environment", "text": "3 found."},
         {"speaker": "Agent (Action)", "text": "book(id=7)"}]


@pytest.fixture
def rated(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    """Upstream's agent-trace-evaluation shape: a dialogue whose text spans mark, and two scales rating
    each action turn (per_turn_ratings)."""
    ratings = {"speakers": ["Agent (Action)"], "schemes": [
        {"schema_name": "action_correctness", "scheme": {"type": "likert", "size": 3, "labels": ["Wrong", "Right"]}},
        {"schema_name": "reasoning_quality", "scheme": {"type": "likert", "size": 5, "labels": ["Poor", "Excellent"]}}]}
    path = make_project(n_items=1, annotation_schemes=[
        {"annotation_type": "span", "name": "errors", "labels": ["hallucination"]},
        {"annotation_type": "radio", "name": "task_success", "labels": ["success", "failure"]}],
        instance_display={"fields": [{"key": "conversation", "type": "dialogue", "label": "Agent Trace",
                                      "span_target": True, "display_options": {"per_turn_ratings": ratings}}]})
    (path.parent / "data" / "reviews.json").write_text(
        json.dumps([{"id": "d0", "text": "Dinner", "conversation": RATED}]), encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_dialogues_per_turn_ratings_are_scales_on_the_named_speakers_turns(rated: ServerProcess, page: Any,
                                                                             width: int) -> None:
    sign_in(page, rated, "ana", width, first="d0")
    scale = "fieldset[data-schema=action_correctness]"
    # Spans mark the dialogue's text, so the scales sit in their own boxes, each turn named there.
    assert page.inner_text(f"{scale} legend") == "Action Correctness"
    captions = page.eval_on_selector_all(f"{scale} .turn-caption", "l => l.map(e => e.textContent)")
    assert captions[1] == "Turn 4: Agent (Action): book(id=7)"
    assert captions[0].startswith('Turn 2: Agent (Action): search_restaurants(q="<img src=x') and captions[0].endswith("…")
    assert page.inner_text(f"{scale} .turn-progress") == "0 of 2 turns answered"
    page.focus(f"{scale} .turn-slot[data-turn=t3] input[value='1']")
    assert focused(page) == "Action Correctness (turn 4): 1"
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.click("fieldset[data-schema=reasoning_quality] .turn-slot[data-turn=t1] label:has-text('5')")
    stored(rated, {("d0", "action_correctness"): {"t3": "2"}, ("d0", "reasoning_quality"): {"t1": "5"}})
    page.reload()
    page.wait_for_selector("#item-id:text('d0')")
    assert ["action_correctness", "t3", "2"] in checked(page) and ["reasoning_quality", "t1", "5"] in checked(page)
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width


TALK = [{"speaker": "buyer", "agent_id": "buyer", "text": f"500 GPU-hours at $2? {HOSTILE}"},
        {"speaker": "seller", "agent_id": "seller", "text": "I can do $3."},
        {"speaker": "buyer", "agent_id": "buyer", "text": "Deal."}]


@pytest.fixture
def moves(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    """Upstream's negotiation-review shape: a discussion, each turn tagged with its move."""
    path = make_project(n_items=1, annotation_schemes=[
        {"annotation_type": "consensus_tracking", "name": "moves", "description": "Negotiation move",
         "turns_key": "conversation", "acts": ["offer", "counter_offer", "accept"],
         "linked_acts": ["counter_offer", "accept"]}],
        instance_display={"fields": [{"key": "conversation", "type": "multi_agent_discussion", "label": "Deal"}]})
    (path.parent / "data" / "reviews.json").write_text(
        json.dumps([{"id": "n0", "text": "GPU deal", "conversation": TALK}]), encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_each_turn_of_a_discussion_is_tagged_with_its_move_and_what_it_answers(moves: ServerProcess, page: Any,
                                                                                width: int) -> None:
    sign_in(page, moves, "ana", width, first="n0")
    # The moves sit on the discussion's own turns; the turn answered is picked once an answering move is.
    assert page.eval_on_selector_all(".trace-step .turn-slot", "l => l.map(s => s.dataset.turn)") == ["t0", "t1", "t2"]
    ref = ".turn-slot[data-turn=t1] .turn-ref"
    assert page.is_hidden(ref)
    page.focus(".turn-slot[data-turn=t0] input[value=offer]")
    page.keyboard.press("Space")
    page.focus(".turn-slot[data-turn=t1] input[value=offer]")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Negotiation move (turn 2): counter_offer"
    assert page.is_visible(ref)
    page.keyboard.press("Tab")  # out of the moves, to the turn it answers
    assert focused(page) == "Negotiation move: the turn it answers"
    page.select_option(ref, "t0")
    stored(moves, {("n0", "moves"): {"t0": "offer", "t1": {"act": "counter_offer", "ref": "t0"}}})
    # Back to a move that answers nothing: the turn it named goes with it.
    page.focus(".turn-slot[data-turn=t1] input[value=counter_offer]")
    page.keyboard.press("ArrowUp")
    assert page.is_hidden(ref)
    stored(moves, {("n0", "moves"): {"t0": "offer", "t1": "offer"}})
    page.focus(".turn-slot[data-turn=t1] input[value=offer]")
    page.keyboard.press("ArrowDown")
    page.select_option(ref, "t0")
    # Reloaded once it is saved: a reload sent while the save is under way loads the page before it.
    stored(moves, {("n0", "moves"): {"t0": "offer", "t1": {"act": "counter_offer", "ref": "t0"}}})
    page.reload()
    page.wait_for_selector("#item-id:text('n0')")
    assert page.input_value(ref) == "t0" and page.is_checked(".turn-slot[data-turn=t1] input[value=counter_offer]")
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
