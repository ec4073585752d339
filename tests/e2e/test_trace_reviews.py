"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's tool-call and handoff reviews
walked with the keyboard at 390 and 1280 px. A card for each call (its arguments shown) and for each
handoff; a verdict and notes, flags and a quality, each stored as it is given with what the part is;
an item without calls or handoffs says so; after going on and back and after a reload every answer is
where it was given. A hostile tool name and arguments are shown as text and run nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import focused, sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_trace_reviews import HANDOFFS, HOSTILE, ITEMS, TOOLS

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[TOOLS, HANDOFFS], item_properties={"id_key": "id", "text_key": "task"}) as srv:
        yield srv


def picked(page: Any) -> list[str]:
    return page.eval_on_selector_all("fieldset .review-part input:checked", "l => l.map(i => i.getAttribute('aria-label'))")


@pytest.mark.parametrize("width", [390, 1280])
def test_each_call_and_handoff_is_judged_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="t1")
    names = page.eval_on_selector_all("fieldset[data-schema=tool_review] .review-name", "l => l.map(n => n.textContent)")
    assert names == ["get_weather", "book_table", HOSTILE, "notify"]
    assert page.inner_text("fieldset[data-schema=tool_review] .review-part >> nth=2 >> .review-detail") == HOSTILE
    assert page.eval_on_selector_all("fieldset[data-schema=handoffs] .review-name", "l => l.map(n => n.textContent)") == [
        "Planner → Tool", "Tool → Planner", "Planner → Booker"]

    # The second call: its verdicts by arrow keys, then its notes.
    page.focus("fieldset[data-schema=tool_review] .review-part >> nth=1 >> input[value=correct]")
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Call 2 (book_table), verdict: wrong_args"
    page.focus("fieldset[data-schema=tool_review] .review-part >> nth=1 >> .review-notes")
    page.keyboard.type("no restaurant given")
    page.keyboard.press("Tab")
    # The last handoff: a flag with Space, its quality by arrow keys.
    page.focus("fieldset[data-schema=handoffs] .review-part >> nth=2 >> input[value=dropped_constraint]")
    page.keyboard.press("Space")
    page.focus("fieldset[data-schema=handoffs] .review-part >> nth=2 >> input[data-part=quality][value='1']")
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Handoff 3 (Planner → Booker), quality: 2"
    expected = {("t1", "tool_review"): [{"index": 1, "step": 2, "tool": "book_table", "verdict": "wrong_args",
                                         "notes": "no restaurant given"}],
                ("t1", "handoffs"): [{"index": 2, "step": 3, "from": "Planner", "to": "Booker",
                                      "flags": ["dropped_constraint"], "quality": 2}]}
    answers_become(server.url, "ana", expected)
    answers = picked(page)

    # The next item has neither; back, and after a reload, every answer where it was given.
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('t2')")
    assert page.inner_text("fieldset[data-schema=tool_review] .review-parts") == "No tool calls in this trace."
    assert page.inner_text("fieldset[data-schema=handoffs] .review-parts") == "No handoffs in this trace."
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('t1')")
    assert picked(page) == answers and page.input_value(".review-part >> nth=1 >> .review-notes") == "no restaurant given"
    page.reload()
    page.wait_for_selector("#item-id:text('t1')")
    assert picked(page) == answers == ["Call 2 (book_table), verdict: wrong_args",
                                       "Handoff 3 (Planner → Booker), flags: dropped_constraint",
                                       "Handoff 3 (Planner → Booker), quality: 2"]
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
