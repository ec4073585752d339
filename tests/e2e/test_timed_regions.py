"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's tool contention and voice interaction
reviews walked with the keyboard at 390 and 1280 px. A card for each time two agents' calls hold the
same resource and for each time a caller and the agent talk at once, each labelled by arrow keys; the
call's turn-taking rated; each answer stored as upstream stores it; an item with neither says so;
after going on and back and after a reload every answer is where it was given."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import focused, sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_timed_regions import CALLS, CONTENTION, TURNS, VOICE

pytestmark = [pytest.mark.browser, pytest.mark.integration]
HOSTILE = '<img src=x onerror="window.__pwned=1">'
SENDS = [{"agent": "Mailer", "tool": "send", "resource": HOSTILE, "start": 4.0, "end": 5.0},
         {"agent": "Notifier", "tool": "send", "resource": HOSTILE, "start": 4.5, "end": 6.0}]
ITEMS = [{"id": "r1", "text": "Inventory and a call", "calls": CALLS[:3] + SENDS, "turns": TURNS},
         {"id": "r2", "text": "Nothing at once", "calls": [], "turns": []}]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[CONTENTION, VOICE]) as srv:
        yield srv


def picked(page: Any) -> list[str]:
    return page.eval_on_selector_all("fieldset input:checked", "l => l.map(i => i.getAttribute('aria-label'))")


@pytest.mark.parametrize("width", [390, 1280])
def test_each_contention_and_overlap_is_labelled_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="r1")
    tc, vi = "fieldset[data-schema=contention]", "fieldset[data-schema=turn_taking]"
    assert page.eval_on_selector_all(f"{tc} .review-head", "l => l.map(n => n.textContent)") == [
        "inventory_db 1.0–2.0 s", "inventory_db 1.5–2.0 s", "inventory_db 1.5–3.0 s", f"{HOSTILE} 4.5–5.0 s"]
    assert page.inner_text(f"{vi} .review-part >> nth=1 >> .review-detail") == (
        "caller: Actually-\nagent: I have seven fifteen, is that okay?")

    page.focus(f"{tc} .review-part >> nth=1 >> input[value=deadlock]")
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Contention 2 (inventory_db), verdict: race_condition"
    page.focus(f"{vi} .review-part >> nth=0 >> input[value=backchannel]")
    page.keyboard.press("Space")
    page.focus(f"{vi} .review-rating input[value='3']")
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Overall turn-taking: 4"
    answers_become(server.url, "ana", {("r1", "contention"): {"contentions": {"1": "race_condition"}},
                                       ("r1", "turn_taking"): {"overlaps": {"0": "backchannel"}, "rating": 4}})
    answers = picked(page)

    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('r2')")
    assert page.inner_text(f"{tc} .review-parts") == "No shared-resource contention in this run."
    assert page.inner_text(f"{vi} .review-parts") == "Nobody talks over anybody in this call."
    assert picked(page) == []
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r1')")
    assert picked(page) == answers
    page.reload()
    page.wait_for_selector("#item-id:text('r1')")
    assert picked(page) == answers == ["Contention 2 (inventory_db), verdict: race_condition",
                                       "Overlap 1, verdict: backchannel", "Overall turn-taking: 4"]
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
