"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's extractive question at 390 and 1280
px. The answer marked by selecting it in the passage, or by typing it and pressing Enter (again: its
next place); marked in the passage as a highlight; offsets as the server counts them past an emoji;
"No answer in the passage"; after a reload the answer is where it was marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_extractive_qa import PASSAGE, QA

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FS = "fieldset[data-schema=answer_span]"
HOSTILE = '<img src=x onerror="window.__pwned=1">'
ITEMS = [{"id": "q1", "text": "Eiffel", "question": f"When was it completed? {HOSTILE}", "passage": PASSAGE + " In 1889!"},
         {"id": "q2", "text": "Nothing", "question": "Who built the pyramids?", "passage": "Bread is baked."}]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[QA]) as srv:
        yield srv


@pytest.mark.parametrize("width", [390, 1280])
def test_an_answer_is_marked_by_selection_or_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="q1")
    assert page.inner_text(f"{FS} .qa-question") == f"When was it completed? {HOSTILE}"
    start = len(PASSAGE[:PASSAGE.index("1889")])  # code points: the emoji counts once
    # By the keyboard: typed, Enter finds it; Enter again, its next place.
    page.focus(f"{FS} .qa-typed")
    page.keyboard.type("1889")
    page.keyboard.press("Enter")
    assert page.inner_text(f"{FS} mark") == "1889"
    answers_become(server.url, "ana", {("q1", "answer_span"): {
        "answer_text": "1889", "start": start, "end": start + 4, "unanswerable": False}})
    page.keyboard.press("Enter")
    second = len(PASSAGE) + len(" In ")
    answers_become(server.url, "ana", {("q1", "answer_span"): {
        "answer_text": "1889", "start": second, "end": second + 4, "unanswerable": False}})
    # By selecting the words in the passage.
    page.evaluate("""() => {
        const p = document.querySelector("fieldset[data-schema=answer_span] .qa-passage");
        const text = p.textContent, at = text.indexOf("Eiffel Tower");
        const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
        const node = walker.nextNode(), range = document.createRange();
        range.setStart(node, at); range.setEnd(node, at + "Eiffel Tower".length);
        window.getSelection().removeAllRanges(); window.getSelection().addRange(range);
    }""")
    page.click(f"{FS} .qa-use")
    answers_become(server.url, "ana", {("q1", "answer_span"): {
        "answer_text": "Eiffel Tower", "start": 4, "end": 16, "unanswerable": False}})
    assert page.inner_text(f"{FS} .qa-state") == "Answer: “Eiffel Tower” (characters 4 to 16)"
    page.reload()
    page.wait_for_selector("#item-id:text('q1')")
    assert page.inner_text(f"{FS} mark") == "Eiffel Tower"

    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('q2')")
    page.focus(f"{FS} .qa-none")
    page.keyboard.press("Enter")
    answers_become(server.url, "ana", {("q1", "answer_span"): {
        "answer_text": "Eiffel Tower", "start": 4, "end": 16, "unanswerable": False},
        ("q2", "answer_span"): {"answer_text": "", "start": -1, "end": -1, "unanswerable": True}})
    assert page.get_attribute(f"{FS} .qa-none", "aria-pressed") == "true"
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
