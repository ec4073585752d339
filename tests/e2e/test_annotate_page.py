"""C2 in a real browser: an annotator labels three items with the keyboard and they are stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.harness.adminapi import stored_labels
from tests.harness.pages import _labels, _sign_in, label_and_suggest
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]


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

    rows = stored_labels(server.url, "kim")
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


def test_the_keyboard_never_skips_or_loses_a_label(server: ServerProcess, page: Any) -> None:
    """Traps found side by side with released Potato: after g + number + Enter, "1" typed into the
    box and Enter jumped with nothing saved; Enter on a focused "← Previous" went forward; "Go to
    item" dropped a picked but unsaved label."""
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    _sign_in(page, server, "lee")
    page.keyboard.press("g")
    page.keyboard.type("5")
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r004')")
    page.keyboard.press("1")  # a label now, not a digit in the box
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r005')")
    assert _labels(server, "lee") == [("r004", "positive")]
    # A picked label, then "Go to item": it is saved first, like Previous and Next do.
    page.keyboard.press("2")
    page.fill("#goto-number", "20")
    page.press("#goto-number", "Enter")
    page.wait_for_selector("#item-id:text('r019')")
    assert _labels(server, "lee") == [("r004", "positive"), ("r005", "negative")]
    # Enter on a focused button does that button.
    page.focus("#prev")
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r018')")
    assert errors == [], errors  # nothing the CSP refused, no script error


def test_the_last_item_says_so_and_a_finished_project_says_thank_you(make_project: Callable[..., Path],
                                                                    page: Any) -> None:
    srv = ServerProcess(make_project(n_items=2)).start()
    try:
        _sign_in(page, srv, "max")
        page.keyboard.press("1")
        page.keyboard.press("Enter")
        page.wait_for_selector("#item-id:text('r001')")
        assert page.is_hidden("#done")
        page.keyboard.press("2")
        page.keyboard.press("Enter")
        page.wait_for_selector("#status:text('That was the last item.')")
        assert page.is_visible("#done") and "Every item is labelled" in page.inner_text("#done")
    finally:
        srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_page_fits_a_phone_and_a_desktop_with_long_unbroken_text(
        make_project: Callable[..., Path], page: Any, width: int, tmp_path: Path) -> None:
    """At 390 px the suggestion box overflowed (Accept cut off) and a long URL overflowed at any width;
    the "Suggestion accepted" message wrapped the button row so "Save & next" moved under the mouse."""
    config = make_project(model_training={"enabled": True, "writeback": {
        "schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0}})
    data = config.parent / "data" / "reviews.json"
    items = json.loads(data.read_text())
    items[0]["text"] = "See https://example.org/" + "a-very-long-path-segment/" * 20 + " for details."
    data.write_text(json.dumps(items))
    srv = ServerProcess(config).start()
    try:
        label_and_suggest(srv)
        page.set_viewport_size({"width": width, "height": 800})
        _sign_in(page, srv, "pat")
        page.wait_for_selector(".suggestion:not([hidden])")
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing sticks out sideways
        accept = page.locator(".suggestion:not([hidden]) .s-accept").first.bounding_box()
        assert accept is not None and accept["x"] + accept["width"] <= width
        before = page.locator("#save-next").bounding_box()
        page.keyboard.press("a")
        page.wait_for_selector("#status:text('Suggestion accepted')")
        after = page.locator("#save-next").bounding_box()
        assert before == after  # the message has its own line
        page.screenshot(path=str(tmp_path / f"annotate-{width}.png"), full_page=True)  # for a person to look at once
    finally:
        srv.stop()
