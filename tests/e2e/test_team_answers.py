"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's agent scorecard and emergent
behaviours walked with the keyboard at 390 and 1280 px. A card for each agent of the item with a scale
for each dimension, the team's scales and the milestones; under each behaviour a box for each turn;
each answer stored as upstream stores it; an item without agents says so; after going on and back
and after a reload every answer is where it was given. A hostile agent name and turn are shown as
text and run nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import focused, sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_team_answers import EMERGENT, GRAPH, HOSTILE, ITEMS, SCORECARD

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[SCORECARD, EMERGENT]) as srv:
        yield srv


def picked(page: Any) -> list[str]:
    return page.eval_on_selector_all("fieldset .review-part input:checked",
                                     "l => l.map(i => i.getAttribute('aria-label') || i.value)")


@pytest.mark.parametrize("width", [390, 1280])
def test_agents_the_team_and_behaviours_are_answered_by_keyboard_and_kept(server: ServerProcess, page: Any,
                                                                          width: int) -> None:
    sign_in(page, server, "ana", width, first="b1")
    card, emergent = "fieldset[data-schema=scorecard]", "fieldset[data-schema=emergent]"
    assert page.eval_on_selector_all(f"{card} .scorecard-name", "l => l.map(n => n.textContent)") == [
        "Planner", "Researcher", HOSTILE]
    assert page.inner_text(f"{emergent} .behaviour >> nth=0 >> .behaviour-turns label >> nth=1") == (
        f"2. Researcher: Found DL901 $338 non-refundable. {HOSTILE}")

    # The Planner's contribution by arrow keys; the team's efficiency; a milestone by Space.
    page.focus(f"{card} .scorecard-agent >> nth=0 >> [data-dim=contribution] input[value='1']")
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Planner, contribution: 3"
    page.focus(f"{card} .scorecard-team [data-dim=efficiency] input[value='2']")
    page.keyboard.press("Space")
    page.focus(f"{card} .scorecard-milestones input[value='plan produced']")
    page.keyboard.press("Space")
    # Cascading error: the second and third turns, and a note.
    page.focus(f"{emergent} .behaviour[data-behaviour=cascading_error] input[value='1']")
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    assert focused(page) == "cascading_error, turn 3 (Planner)"
    page.keyboard.press("Space")
    page.focus(f"{emergent} .behaviour[data-behaviour=cascading_error] .behaviour-note")
    page.keyboard.type("the fare's rules were lost")
    page.keyboard.press("Tab")
    answers_become(server.url, "ana", {
        ("b1", "scorecard"): {"agents": {"Planner": {"contribution": 3}}, "team": {"efficiency": 2},
                              "milestones": {"plan produced": True}},
        ("b1", "emergent"): {"cascading_error": {"turns": [1, 2], "note": "the fare's rules were lost"}}})
    answers = picked(page)

    # The next item has no agents; back, and after a reload, every answer where it was given.
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('b2')")
    assert page.inner_text(f"{card} .scorecard-agents") == "No agents in this trace."
    assert page.inner_text(f"{emergent} .behaviour >> nth=0 >> .behaviour-turns") == "No turns in this trace."
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('b1')")
    assert picked(page) == answers
    page.reload()
    page.wait_for_selector("#item-id:text('b1')")
    assert picked(page) == answers == ["Planner, contribution: 3", "Team, efficiency: 2", "plan produced",
                                       "cascading_error, turn 2 (Researcher)", "cascading_error, turn 3 (Planner)"]
    assert page.input_value(f"{emergent} .behaviour[data-behaviour=cascading_error] .behaviour-note") == (
        "the fare's rules were lost")
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width", [390, 1280])
def test_an_interaction_graphs_critical_path_and_passages_are_marked_by_keyboard(make_project: Callable[..., Path],
                                                                                page: Any, width: int) -> None:
    with serving_items(make_project, ITEMS, annotation_schemes=[GRAPH]) as server:
        sign_in(page, server, "ana", width, first="b1")
        graph = "fieldset[data-schema=graph]"
        assert page.eval_on_selector_all(f"{graph} .graph-edge-name", "l => l.map(n => n.textContent)") == [
            "Planner → Researcher", "Researcher → Planner", f"Planner → {HOSTILE}"]
        assert page.eval_on_selector_all(f"{graph} svg.graph-picture circle", "l => l.length") == 3
        page.focus(f"{graph} .graph-nodes input[value=Researcher]")
        page.keyboard.press("Space")
        page.focus(f"{graph} .graph-edge >> nth=1 >> input[value='']")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
        assert focused(page) == "Researcher → Planner: problematic"
        answers_become(server.url, "ana", {("b1", "graph"): {"critical_nodes": ["Researcher"],
                                                            "edges": {"Researcher->Planner": "problematic"}}})
        # The picture follows: the Researcher filled, the passage dashed.
        assert page.eval_on_selector_all(f"{graph} circle.critical", "l => l.length") == 1
        assert page.eval_on_selector_all(f"{graph} line.problematic", "l => l.length") == 1
        page.reload()
        page.wait_for_selector("#item-id:text('b1')")
        assert picked(page) == ["Researcher, on the critical path", "Planner → Researcher: normal",
                                "Researcher → Planner: problematic", f"Planner → {HOSTILE}: normal"]
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.documentElement.scrollWidth") <= width
