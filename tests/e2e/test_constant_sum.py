"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's constant sum at 390 and 1280 px.
Points are typed into a box per label; a number that would pass the total is
lowered to what is left; the line under the boxes says what is left; points given are saved as they
are, and the item is not left until they add up; after a reload the points are where they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_constant_sum import ITEMS, POINTS

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[POINTS]) as srv:
        yield srv


def box(label: str) -> str:
    return f".points input[data-label={label}]"


@pytest.mark.parametrize("width", [390, 1280])
def test_points_are_typed_capped_kept_and_must_add_up(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="cs1")
    assert page.inner_text(".points-total") == "Allocated: 0 / 100"
    page.focus(box("Politics"))
    page.keyboard.type("70")
    page.keyboard.press("Tab")  # to Technology: Politics is saved
    assert page.inner_text(".points-total") == "Allocated: 70 / 100 · 30 left"
    answers_become(server.url, "ana", {("cs1", "topic_relevance"): {"Politics": 70}})
    page.keyboard.type("50")  # more than is left: lowered to 30
    assert page.input_value(box("Technology")) == "30" and page.inner_text(".points-total") == "Allocated: 100 / 100 ✓"
    page.fill(box("Technology"), "20")
    page.click("#save-next")  # not left: 10 points are still to give
    page.wait_for_selector("#status:text('Allocate every point of')")
    assert page.inner_text("#item-id") == "cs1"
    for label, points in (("Sports", "10"), ("Entertainment", "0")):
        page.fill(box(label), points)
    page.click("#save-next")
    page.wait_for_selector("#item-id:text('cs2')")
    full = {"Politics": 70, "Technology": 20, "Sports": 10, "Entertainment": 0}
    answers_become(server.url, "ana", {("cs1", "topic_relevance"): full})
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('cs1')")
    page.reload()
    page.wait_for_selector("#item-id:text('cs1')")
    assert [page.input_value(box(label)) for label in full] == ["70", "20", "10", "0"]
    assert page.inner_text(".points-total") == "Allocated: 100 / 100 ✓"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
