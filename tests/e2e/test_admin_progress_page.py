"""Issue 33 item 14 in a real browser: at 390 px the admin's Progress table ran past the page's right edge
(its last column off the card, the whole page scrolling sideways). It fits, or scrolls inside its own box."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import ADMIN_KEY, truth
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

LONG_NAME = "annotator-with-a-long-address@linguistics.example.org"


@pytest.mark.parametrize("width", [390, 1280])
def test_the_progress_table_stays_within_its_card(server: ServerProcess, page: Any, width: int,
                                                  tmp_path: Path) -> None:
    for user, count in (("gold", 20), (LONG_NAME, 3)):
        labels = [{"id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}")} for i in range(count)]
        requests.post(server.url + "/admin/api/labels", headers={"X-API-Key": ADMIN_KEY},
                      json={"user": user, "labels": labels}).raise_for_status()
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(server.url + "/admin/")
    page.fill("#key", ADMIN_KEY)
    page.press("#key", "Enter")
    page.wait_for_selector("#progress-table")
    page.screenshot(path=str(tmp_path / f"progress-{width}.png"), full_page=True)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    card, box, table = page.eval_on_selector("#progress-table", """t => {
        const edges = el => { const r = el.getBoundingClientRect(); return [r.left, r.right]; };
        return [edges(t.closest('.card')), edges(t.parentElement), edges(t)];
    }""")
    assert card[0] <= box[0] and box[1] <= card[1], (card, box)  # the table's box stays inside the card
    if table[1] > box[1]:  # wider than its box: it scrolls there, not the page
        assert page.eval_on_selector("#progress-table", "t => getComputedStyle(t.parentElement).overflowX") == "auto"
    assert LONG_NAME in page.inner_text("#progress-table")
    # Issue 42: `.wide` (a full-width button) also matched <body class="wide">, a 13 px band above the bar.
    assert page.eval_on_selector(".topbar", "bar => bar.getBoundingClientRect().top") == 0
    assert page.eval_on_selector("#progress-table td.outcome", "td => td.dataset.outcome") == "in_progress"
    last = page.eval_on_selector_all("#progress-table td.ts", "els => els.map(e => [e.textContent, e.title])")
    assert all(text and title for text, title in last), last  # each last label's time, in full on hover
