"""Issue 24 in a real browser: the training page says whether active learning orders the items and by
which run, before its first run and after it, readable at a phone's width."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from tests.harness.pages import open_page
from tests.harness.active_learning import server  # noqa: F401 - the fixture
from tests.harness.annotating import current_item, label, signed_in
from tests.harness.runs import H
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_the_page_names_the_run_the_order_comes_from(server: ServerProcess, page: Any) -> None:  # noqa: F811
    page.set_viewport_size({"width": 390, "height": 900})
    open_page(page, server.url + "/admin/training/")
    page.wait_for_selector("#al-state:not([hidden])")
    assert "until the first run, which starts once 10 items are labelled; then a run every 20 labels" \
        in page.inner_text("#al-state")

    gold = signed_in(server, "gold")
    item = current_item(gold, server)
    for _ in range(20):
        item = label(gold, server, item["id"])
    deadline = time.monotonic() + 120
    while requests.get(server.url + "/admin/training/api/active-learning", headers=H).json()["run_id"] is None:
        assert time.monotonic() < deadline, server.output()[-3000:]
        time.sleep(0.3)
    run_id = requests.get(server.url + "/admin/training/api/active-learning", headers=H).json()["run_id"]
    page.wait_for_selector("#al-state:has-text('by run')", timeout=30_000)
    said = page.inner_text("#al-state")
    assert f"the next 30 items nobody has labelled go to annotators least certain first (least confidence), by run {run_id} (sklearn-text-classification)" in said
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
