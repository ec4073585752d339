"""Issue 33 item 14 in a real browser, as a phone shows the page (390 px, a touch screen): no key
badges on the labels and buttons (there is no keyboard to press them on), nothing sticks out
sideways, and the model's suggestion is named by how sure it is and its date, not by a run id."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from tests.harness.browser import CHROMIUM_ARGS, chromium_path
from tests.conftest import ADMIN_KEY
from tests.harness.pages import label_and_suggest
from tests.harness.schemes import NER, RADIO
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def phone() -> Iterator[Any]:
    """A page in Playwright's mobile emulation: 390 px wide, touch, a coarse pointer and no hover."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=3,
                                          is_mobile=True, has_touch=True)
            yield context.new_page()
        finally:
            browser.close()


def _sign_in(page: Any, srv: ServerProcess, name: str) -> None:
    page.goto(srv.url + "/")
    page.fill("#name", name)
    page.tap("button[type=submit].primary")
    page.wait_for_selector("#item-id:text('r000')")


def test_a_touch_screen_shows_no_key_badges_and_fits(make_project: Callable[..., Path], phone: Any,
                                                     tmp_path: Path) -> None:
    """Issue 33 item 14: touch users saw key badges ("1", "2", "a") they have no keys for."""
    config = make_project(annotation_schemes=[RADIO, NER], model_training={"enabled": True, "writeback": {
        "schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0}})
    srv = ServerProcess(config).start()
    try:
        label_and_suggest(srv)
        run_id = requests.get(srv.url + "/admin/training/api/runs",
                              headers={"X-API-Key": ADMIN_KEY}).json()["runs"][0]["id"]
        errors: list[str] = []
        phone.on("pageerror", lambda exc: errors.append(str(exc)))
        _sign_in(phone, srv, "tia")
        assert phone.evaluate("matchMedia('(hover: none) and (pointer: coarse)').matches")
        phone.wait_for_selector("fieldset[data-schema=sentiment] .suggestion:not([hidden])")
        badges = phone.locator("#annotate kbd")
        assert badges.count() >= 5  # on the labels, the span labels and Accept
        assert [i for i in range(badges.count()) if badges.nth(i).is_visible()] == []
        box = phone.inner_text("fieldset[data-schema=sentiment] .suggestion")
        assert run_id not in box and "run" not in box
        assert " ".join(box.split()).lower().startswith("model suggests positive") and "% sure" in box
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        phone.tap("fieldset[data-schema=sentiment] .s-accept")
        phone.wait_for_selector("#status:text('Suggestion accepted')")
        assert "tap Save & next" in phone.inner_text("#status")
        assert phone.inner_text("#save-next").strip() == "Save & next →"
        # For a person to look at; not full_page, which drops the touch emulation while it captures.
        phone.screenshot(path=str(tmp_path / "annotate-touch-390.png"))
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        assert errors == []
    finally:
        srv.stop()


def test_a_suggestion_is_named_by_its_confidence_and_date_not_its_run_id(make_project: Callable[..., Path],
                                                                         page: Any) -> None:
    """Issue 33 item 14: annotators saw "(80% confident, run 20261201-120000-ab12)"."""
    config = make_project(model_training={"enabled": True, "writeback": {
        "schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0}})
    srv = ServerProcess(config).start()
    try:
        label_and_suggest(srv)
        run = requests.get(srv.url + "/admin/training/api/runs", headers={"X-API-Key": ADMIN_KEY}).json()["runs"][0]
        page.goto(srv.url + "/")
        page.fill("#name", "ivo")
        page.press("#name", "Enter")
        box = page.wait_for_selector(".suggestion:not([hidden])")
        confidence = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions",
                                  headers={"X-API-Key": ADMIN_KEY}).json()["suggestions"][0]["confidence"]
        shown = box.inner_text() + (box.get_attribute("title") or "")
        assert run["id"] not in shown and "run" not in shown
        assert page.inner_text(".suggestion:not([hidden]) .s-conf") == f"{round(confidence * 100)}% sure"
        finished = page.evaluate("t => new Date(t * 1000).toLocaleDateString(undefined, {day: 'numeric', month: 'short'})",
                                 run["finished_at"])
        assert page.inner_text(".suggestion:not([hidden]) .s-when") == f"model of {finished}"
    finally:
        srv.stop()
