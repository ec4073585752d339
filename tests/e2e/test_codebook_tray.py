"""Issue 36 (codebook) in a real browser, under gunicorn: the tray lists each code with its
definition; an annotator adds a code by keyboard and uses it at once, by the key it gets (issue 42:
an added code had none); another annotator gets it, with the same key, with their next item."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.harness.servers import ServerProcess
from tests.harness.schemes import THEMES

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    srv = ServerProcess(make_project(n_items=4, annotation_schemes=THEMES, codebook_mode="extensible")).start()
    yield srv
    srv.stop()


def sign_in(page: Any, url: str, name: str) -> None:
    page.goto(url + "/")
    page.fill("#name", name)
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")


@pytest.mark.parametrize("width", [390, 1280])
def test_a_code_added_by_one_annotator_is_there_for_another(server: ServerProcess, page: Any, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    other = page.context.browser.new_context(viewport={"width": width, "height": 900}).new_page()
    sign_in(page, server.url, "ana")
    sign_in(other, server.url, "ben")

    page.focus("#codebook-toggle")
    page.keyboard.press("Enter")
    page.wait_for_selector("#codebook-tray:not([hidden])")
    assert page.eval_on_selector_all("#codebook-tray dd", "els => els.map(e => e.textContent)") == [
        "Money stops them", "Doubts the provider"]
    page.focus("#code-name")
    page.keyboard.type("wait times")
    page.focus("#code-definition")
    page.keyboard.type("Queues and delays")
    page.focus("#add-code button[type=submit]")
    page.keyboard.press("Enter")
    page.wait_for_selector("#code-status:has-text('Added')")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.text_content("label.added-code kbd") == "3"  # cost and trust have 1 and 2
    page.keyboard.press("3")  # picked by its key, and saved as it is picked
    page.wait_for_selector("#progress:has-text('1 of 4')")
    assert page.is_checked("input[name=themes][value='wait times']")
    stored = requests.get(f"{server.url}/admin/api/labels?user=ana", headers={"X-API-Key": ADMIN_KEY}).json()
    assert [(r["label"], r["codebook_revision"]) for r in stored["labels"]] == [(["wait times"], 1)]

    assert other.locator("input[name=themes][value='wait times']").count() == 0
    other.keyboard.press("ArrowRight")
    other.wait_for_selector("#item-id:text('r001')")
    other.wait_for_selector("input[name=themes][value='wait times']")
    assert other.get_attribute("label.added-code", "title") == "Queues and delays"
    assert other.text_content("label.added-code kbd") == "3"
    other.context.close()
