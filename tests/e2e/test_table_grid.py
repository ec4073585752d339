"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's table grid at 390 and 1280 px. The
table's image above a grid of its cells in the item's size; a cell's role moved on by Enter or Space,
the arrow keys moving between cells (not between items); the size changed; stored as upstream stores
it; after going on and back and after a reload the grid is as it was left. An image address that is
not an image's is not loaded, and says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import focused, sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_table_grid import GRID, ITEMS

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FS = "fieldset[data-schema=structure]"


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[GRID]) as srv:
        yield srv


def cells(page: Any) -> list[str]:
    return page.eval_on_selector_all(f"{FS} .grid-cell", "l => l.map(c => c.textContent)")


@pytest.mark.parametrize("width", [390, 1280])
def test_cells_are_marked_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="t1")
    assert page.locator(f"{FS} img.grid-image").evaluate("i => i.complete && i.naturalWidth > 0")
    assert cells(page) == [""] * 9
    assert page.inner_text(f"{FS} .grid-legend") == "blank = data, CH = col header, RH = row header, ∅ = empty"

    page.focus(f"{FS} .grid-cell >> nth=0")
    page.keyboard.press("Enter")  # data -> column header
    page.keyboard.press("ArrowRight")
    assert focused(page) == "row 1 column 2, data"
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    for _ in range(3):  # data -> column header -> row header -> empty
        page.keyboard.press("Enter")
    assert focused(page) == "row 3 column 3, empty"
    page.wait_for_selector("#item-id:text('t1')")  # the arrow keys did not leave the item
    answers_become(server.url, "ana", {("t1", "structure"): {
        "rows": 3, "cols": 3, "cells": {"0,0": "col_header", "0,1": "col_header", "2,2": "empty"}}})
    # One row fewer: the last row's marks go with it.
    page.fill(f"{FS} .grid-rows", "2")
    page.press(f"{FS} .grid-rows", "Tab")
    answers_become(server.url, "ana", {("t1", "structure"): {
        "rows": 2, "cols": 3, "cells": {"0,0": "col_header", "0,1": "col_header"}}})
    marked = cells(page)
    assert marked == ["CH", "CH", "", "", "", ""]

    page.evaluate("document.activeElement.blur()")  # the size box keeps the arrow keys; the page has them again
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('t2')")
    assert page.inner_text(f"{FS} .grid-problem") == (
        "The table's image is not shown: javascript: addresses are not shown; use https:// or a file")
    assert not page.locator(f"{FS} img.grid-image").is_visible() and cells(page) == [""] * 9
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('t1')")
    assert cells(page) == marked
    page.reload()
    page.wait_for_selector("#item-id:text('t1')")
    assert cells(page) == marked and page.input_value(f"{FS} .grid-rows") == "2"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
