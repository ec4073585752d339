"""C2 in a real browser: an annotator labels three items with the keyboard and they are stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from tests.browser import browser_page
from tests.conftest import ADMIN_KEY
from tests.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    srv = ServerProcess(make_project()).start()
    yield srv
    srv.stop()


@pytest.fixture
def page() -> Iterator[Any]:
    yield from browser_page()


def test_label_three_items_with_the_keyboard(server: ServerProcess, page: Any) -> None:
    page.goto(server.url + "/")
    page.fill("#name", "kim")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")
    assert page.inner_text("#progress") == "0 of 40 labelled"
    assert page.inner_text("#badge") == "Not labelled"

    for key, expected_next in (("1", "r001"), ("2", "r002"), ("1", "r003")):
        page.keyboard.press(key)
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#item-id:text('{expected_next}')")
    assert page.inner_text("#progress") == "3 of 40 labelled"

    rows = requests.get(server.url + "/admin/api/labels?user=kim", headers={"X-API-Key": ADMIN_KEY}).json()["labels"]
    assert [(r["id"], r["label"]) for r in rows] == [("r000", "positive"), ("r001", "negative"), ("r002", "positive")]

    # Back with the arrow key: the stored answer is shown and the item is marked labelled.
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r002')")
    assert page.is_checked("input[name=sentiment][value=positive]")
    assert page.inner_text("#badge") == "Labelled"

    # Go to item by number, and dark mode toggles.
    page.fill("#goto-number", "10")
    page.press("#goto-number", "Enter")
    page.wait_for_selector("#item-id:text('r009')")
    page.click("body")
    page.keyboard.press("d")
    assert page.evaluate("document.documentElement.dataset.theme") in ("dark", "light")
