"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's card sort at 390 and 1280 px. Each of
the item's cards with a list of the groups, chosen by keyboard; how many cards each group has said as
it changes; stored as upstream stores it; an item without cards says so; after going on and back and
after a reload every card is where it was put. A hostile card is shown as text and runs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_card_sort import HOSTILE, ITEMS, SORT

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FS = "fieldset[data-schema=topic_groups]"


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[SORT]) as srv:
        yield srv


def groups(page: Any) -> list[str]:
    return page.eval_on_selector_all(f"{FS} .card select", "l => l.map(s => s.value)")


@pytest.mark.parametrize("width", [390, 1280])
def test_cards_are_sorted_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="c1")
    assert page.eval_on_selector_all(f"{FS} .card-text", "l => l.map(c => c.textContent)") == [
        "Water ice found on Mars", f"New headset {HOSTILE}", "Flu vaccine trial"]
    assert page.inner_text(f"{FS} .card-summary") == "Science: 0 · Technology: 0 · Health: 0"
    page.select_option(f"{FS} .card >> nth=0 >> select", "Science")
    page.focus(f"{FS} .card >> nth=1 >> select")
    page.keyboard.press("ArrowDown")  # not sorted yet -> Science -> Technology
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    assert page.inner_text(f"{FS} .card-summary") == "Science: 1 · Technology: 1 · Health: 0"
    answers_become(server.url, "ana", {("c1", "topic_groups"): {"Science": ["Water ice found on Mars"],
                                                                "Technology": [f"New headset {HOSTILE}"]}})
    assert groups(page) == ["Science", "Technology", ""]

    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('c2')")
    assert page.inner_text(f"{FS} .cards") == "No cards in this item."
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('c1')")
    assert groups(page) == ["Science", "Technology", ""]
    page.reload()
    page.wait_for_selector("#item-id:text('c1')")
    assert groups(page) == ["Science", "Technology", ""]
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
