"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's pairwise comparisons, answered by
keyboard at 390 and 1280 px. The item's two responses are shown lettered A and B; a binary choice
takes its keys (1, 2, and 3 for the tie), a scale moves with the arrow keys from A's end to B's, and
a comparison on several dimensions (and a multirate scheme) takes a choice in each row. Each answer is stored as it is made
and is there again after a reload; the responses are hostile markup, and nothing of it runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import focused, sign_in
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HOSTILE = '<b onmouseover="window.__pwned=1">bold</b><script>window.__pwned=1</script>'  # an <img> the server refuses in text
SCHEMES = [
    {"annotation_type": "pairwise", "name": "helpfulness", "description": "Which response is more helpful?",
     "mode": "binary", "labels": ["Response A", "Response B"], "allow_tie": True, "tie_label": "Equally helpful"},
    {"annotation_type": "pairwise", "name": "overall", "description": "Overall, which is better?", "mode": "scale",
     "labels": ["Response A", "Response B"], "scale": {"min": -3, "max": 3, "default": 0, "labels": {
         "min": "A is much better", "max": "B is much better", "center": "Equal"}}},
    {"annotation_type": "pairwise", "name": "dims", "description": "Compare them", "mode": "multi_dimension",
     "labels": ["Response A", "Response B"], "label_requirement": {"required": True}, "dimensions": [
         {"name": "accuracy", "description": "Which has fewer errors?", "allow_tie": True},
         {"name": "safety", "description": "Which is safer?"}],
     "justification": {"required": True, "reason_categories": ["More accurate", "Safer"], "min_rationale_chars": 10}},
    {"annotation_type": "multirate", "name": "relevance", "description": "How relevant is each response?",
     "options": [{"name": "r1", "label": "First response"}, {"name": "r2", "label": "Second response"}],
     "labels": ["Irrelevant", "Relevant"]},
]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    path = make_project(n_items=2, annotation_schemes=SCHEMES)
    items = [{"id": f"p{n}", "text": [f"Magic coins {n}. {HOSTILE}", f"Correlated states {n}. {HOSTILE}"]}
             for n in range(2)]
    (path.parent / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


def stored(server: ServerProcess, expected: dict[tuple[str, str], Any], within: float = 15.0) -> None:
    answers_become(server.url, "ana", expected, within)


@pytest.mark.parametrize("width", [390, 1280])
def test_two_responses_are_compared_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text))
    sign_in(page, server, "ana", width, first="p0")
    assert page.inner_text("#item-text") .startswith(f"A. Magic coins 0. {HOSTILE}\nB. Correlated states 0.")
    binary = "fieldset[data-schema=helpfulness]"
    assert page.eval_on_selector_all(f"{binary} .option", "l => l.map(o => o.innerText.trim())") == [
        "1\nResponse A", "2\nResponse B", "3\nEqually helpful"]
    assert page.inner_text("fieldset[data-schema=overall] .scale-ends") == (
        "Response A: A is much better\nEqual\nResponse B: B is much better")

    # The tie by its key; the scale from its middle two steps toward A; each dimension by its row.
    page.keyboard.press("3")
    page.focus("fieldset[data-schema=overall] input[type=range]")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.inner_text("fieldset[data-schema=overall] .slider-value") == "-2"
    page.focus("fieldset[data-schema=dims] [data-dim=accuracy] input[value=A]")
    assert focused(page) == "Accuracy: Response A"
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Accuracy: Tie"
    assert page.eval_on_selector_all("[data-dim=safety] input", "l => l.map(i => i.value)") == ["A", "B"]
    # Enter with a dimension still open: the page asks for it and stays.
    page.keyboard.press("Enter")
    page.wait_for_selector("#status:has-text('Compare them')")
    assert page.inner_text("#item-id") == "p0"
    page.click("[data-dim=safety] label:has-text('Response B')")
    # A multirate row by keyboard: its first rating, then down to the next.
    page.focus("fieldset[data-schema=relevance] [data-dim=r2] input[value=Irrelevant]")
    assert focused(page) == "Second response: Irrelevant"
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    # The justification: a reason by keyboard, and a rationale counted toward the least it needs.
    why = "fieldset[data-schema='dims:justification']"
    page.focus(f"{why} input[value=Safer]")
    page.keyboard.press("Space")
    page.fill(f"{why} textarea", "B is safer")
    assert page.inner_text(f"{why} .rationale-count") == "10 of at least 10 characters"
    page.keyboard.press("Tab")  # the box is saved when it is left
    stored(server, {("p0", "helpfulness"): "tie", ("p0", "overall"): -2,
                    ("p0", "dims"): {"accuracy": "tie", "safety": "B"}, ("p0", "relevance"): {"r2": "Relevant"},
                    ("p0", "dims:justification"): {"reasons": ["Safer"], "rationale": "B is safer"}})

    page.reload()
    page.wait_for_selector("#item-id:text('p0')")
    assert page.eval_on_selector_all("#answers input:checked", "l => l.map(i => i.name + '=' + i.value)") == [
        "helpfulness=tie", "dims@accuracy=tie", "dims@safety=B", "dims:justification=Safer", "relevance@r2=Relevant"]
    assert page.input_value(f"{why} textarea") == "B is safer"
    assert page.input_value("fieldset[data-schema=overall] input[type=range]") == "-2"
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('#item-text script, #item-text b').length") == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console


@pytest.fixture
def tree(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    """Upstream's hierarchical-multiselect shape: a tree of topics with a search box; picking a node
    picks the nodes under it."""
    path = make_project(n_items=1, annotation_schemes=[
        {"annotation_type": "hierarchical_multiselect", "name": "topics", "description": "Select all topics",
         "taxonomy": {"Science": {"Physics": ["Quantum Mechanics", "Thermodynamics"], "Biology": ["Genetics"]},
                      "Arts": ["Music", f"Painting {HOSTILE}"]},
         "auto_select_children": True, "show_search": True}])
    (path.parent / "data" / "reviews.json").write_text(json.dumps([{"id": "t0", "text": "Genes and songs"}]),
                                                       encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_tree_of_labels_is_searched_and_picked_by_keyboard(tree: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, tree, "ana", width, first="t0")
    rows = "fieldset[data-schema=topics] .tree-node"
    # The search keeps a match and the nodes above it, so it is read in its place.
    page.fill(".tree-search", "gene")
    assert page.eval_on_selector_all(f"{rows}:not([hidden])", "l => l.map(n => n.innerText.trim())") == [
        "Science", "Biology", "Genetics"]
    page.fill(".tree-search", "zzz")
    assert page.is_visible(".tree-none")
    page.fill(".tree-search", "")
    # Picking Physics picks what is under it.
    page.focus(f"{rows} input[value=Physics]")
    page.keyboard.press("Space")
    page.focus(f"{rows} input[value=Music]")
    page.keyboard.press("Space")
    stored(tree, {("t0", "topics"): ["Physics", "Quantum Mechanics", "Thermodynamics", "Music"]})
    page.reload()
    page.wait_for_selector("#item-id:text('t0')")
    assert page.eval_on_selector_all(f"{rows} input:checked", "l => l.map(i => i.value)") == [
        "Physics", "Quantum Mechanics", "Thermodynamics", "Music"]
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.fixture
def triage(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    """Upstream's safety-escalation triage: safe, escalate or unsure by key, the next item at once."""
    path = make_project(n_items=3, annotation_schemes=[
        {"annotation_type": "triage", "name": "safety_triage", "description": "Safe to deploy, or escalate?",
         "accept_label": "Safe", "reject_label": "Escalate", "skip_label": "Unsure"}])
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_triage_takes_a_key_per_item_and_moves_on_by_itself(triage: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, triage, "ana", width)
    assert page.eval_on_selector_all("fieldset .option", "l => l.map(o => o.innerText.trim())") == [
        "1\nSafe", "2\nEscalate", "3\nUnsure"]
    page.keyboard.press("2")
    page.wait_for_selector("#item-id:text('r001')")
    page.keyboard.press("1")
    page.wait_for_selector("#item-id:text('r002')")
    page.keyboard.press("3")
    stored(triage, {("r000", "safety_triage"): "reject", ("r001", "safety_triage"): "accept",
                    ("r002", "safety_triage"): "skip"})
    assert page.evaluate("document.documentElement.scrollWidth") <= width
