"""Issue 45 (moving upstream's projects over) in a real browser, under gunicorn: labels taken from each
item at 390 and 1280 px. Each item shows its own labels at the same places (and keys); an item with
fewer shows fewer; the answer is the label the annotator read, kept after going on and back."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_dynamic_labels import ITEMS, REPLIES

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FS = "fieldset[data-schema=appropriateness]"
HOSTILE = '<img src=x onerror="window.__pwned=1">'


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    items = [{**ITEMS[0], "labels": ["Sounds great", HOSTILE, "Nice"]}, ITEMS[1]]
    with serving_items(make_project, items, annotation_schemes=[REPLIES]) as srv:
        yield srv


def shown(page: Any) -> list[str]:
    return page.eval_on_selector_all(f"{FS} label.option:not([hidden]) span", "l => l.map(s => s.textContent)")


@pytest.mark.parametrize("width", [390, 1280])
def test_each_item_shows_its_own_labels_and_keys(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="d1")
    assert shown(page) == ["Sounds great", HOSTILE, "Nice"]
    page.keyboard.press("2")
    page.keyboard.press("3")
    answers_become(server.url, "ana", {("d1", "appropriateness"): [HOSTILE, "Nice"]})
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('d2')")
    assert shown(page) == ["HAHAHA", "Yes"] and page.locator(f"{FS} input:checked").count() == 0
    page.keyboard.press("2")
    answers_become(server.url, "ana", {("d1", "appropriateness"): [HOSTILE, "Nice"], ("d2", "appropriateness"): ["Yes"]})
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('d1')")
    assert page.eval_on_selector_all(f"{FS} input:checked", "l => l.map(i => i.value)") == [HOSTILE, "Nice"]
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
