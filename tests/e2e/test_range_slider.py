"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's range slider at 390 and 1280 px. Two
thumbs starting a quarter in from each end, moved by the arrow keys; a thumb pushed past the other
takes it along; nothing is answered until one is moved; after going on and back and after a reload
the range is where it was left."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_range_slider import FORMALITY, ITEMS

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FS = "fieldset[data-schema=formality_range]"


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[FORMALITY]) as srv:
        yield srv


def ends(page: Any) -> list[str]:
    return [page.input_value(f"{FS} .range-low"), page.input_value(f"{FS} .range-high")]


@pytest.mark.parametrize("width", [390, 1280])
def test_a_range_is_set_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="f1")
    assert ends(page) == ["25", "75"] and page.inner_text(f"{FS} .range-value") == "not set"
    assert page.eval_on_selector_all(f"{FS} .scale-ends span", "l => l.map(s => s.textContent)") == [
        "Very informal", "", "Very formal"]
    page.focus(f"{FS} .range-high")
    for _ in range(3):
        page.keyboard.press("ArrowLeft")  # the slider's own key here, not the page's
    page.wait_for_selector("#item-id:text('f1')")
    assert ends(page) == ["25", "60"] and page.inner_text(f"{FS} .range-value") == "25 – 60"
    answers_become(server.url, "ana", {("f1", "formality_range"): {"range_low": 25, "range_high": 60}})
    page.focus(f"{FS} .range-low")
    page.keyboard.press("End")  # pushed past the high thumb: both at the top
    assert ends(page) == ["100", "100"]
    answers_become(server.url, "ana", {("f1", "formality_range"): {"range_low": 100, "range_high": 100}})
    page.keyboard.press("PageDown")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('f2')")
    assert ends(page) == ["25", "75"] and page.inner_text(f"{FS} .range-value") == "not set"
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('f1')")
    kept = ends(page)
    assert kept[1] == "100" and int(kept[0]) < 100
    page.reload()
    page.wait_for_selector("#item-id:text('f1')")
    assert ends(page) == kept
    assert page.evaluate("document.documentElement.scrollWidth") <= width
