"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's ranking at 390 and 1280 px. A
label is moved with the arrow keys (the focus staying on it), with its buttons or by dragging; the
first move makes the order the annotator's answer and each move is saved; "Keep this order" takes the
order as it is; after going on and back and after a reload the order is the one given."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_ranking import ITEMS, RANKING

pytestmark = [pytest.mark.browser, pytest.mark.integration]
A, B, C, D = RANKING["labels"]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[RANKING]) as srv:
        yield srv


def order(page: Any) -> list[str]:
    return page.eval_on_selector_all(".rank-item", "l => l.map(li => li.dataset.label)")


@pytest.mark.parametrize("width", [390, 1280])
def test_labels_are_ranked_by_keyboard_buttons_and_dragging_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="rk001")
    assert order(page) == [A, B, C, D]
    assert page.inner_text(".rank-state") == "Not ranked yet: move a label, or keep this order."

    page.focus(f".rank-item[data-label='{C}']")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")  # C to the top, the focus with it
    assert order(page) == [C, A, B, D]
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == f"1 of 4: {C}"
    answers_become(server.url, "ana", {("rk001", "response_quality"): [C, A, B, D]})
    page.click(f".rank-item[data-label='{A}'] .rank-move[data-by='1']")  # A below B, with the mouse
    page.drag_and_drop(f".rank-item[data-label='{D}']", f".rank-item[data-label='{C}']")  # D dragged to the top
    assert order(page) == [D, C, B, A] and page.inner_text(".rank-state") == "Your ranking, best first."
    answers_become(server.url, "ana", {("rk001", "response_quality"): [D, C, B, A]})

    # The next item starts unranked; its order as it is, kept with the button.
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('rk002')")
    assert order(page) == [A, B, C, D]
    page.click(".rank-keep")
    answers_become(server.url, "ana", {("rk001", "response_quality"): [D, C, B, A],
                                       ("rk002", "response_quality"): [A, B, C, D]})
    page.focus("#item-text")
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('rk001')")
    assert order(page) == [D, C, B, A]
    page.reload()
    page.wait_for_selector("#item-id:text('rk001')")
    assert order(page) == [D, C, B, A] and page.inner_text(".rank-state") == "Your ranking, best first."
    assert page.evaluate("document.documentElement.scrollWidth") <= width
