"""Issue 21 (C2) in a real browser: the annotator's keys and clicks never lose or misplace a label.

Each test repeats what a tester did by hand in headless chromium: a picked answer left by Sign out,
a reload or another address; Enter after a mouse click on "← Previous"; five "label + Enter" pairs
typed faster than the server answers; a pick made while the server is stopped.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.harness.adminapi import stored_labels
from tests.harness.pages import _labels, _sign_in
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def labels_become(server: ServerProcess, user: str, expected: list[tuple[str, Any]], within: float = 15.0) -> None:
    """The stored labels reach ``expected``: a save sent as the page is left arrives a moment later."""
    deadline = time.monotonic() + within
    while _labels(server, user) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _labels(server, user) == expected


def notes(server: ServerProcess, user: str) -> list[tuple[str, Any]]:
    rows = stored_labels(server.url, user)
    return sorted((r["id"], r["label"]) for r in rows if r["schema"] == "note")


def test_a_pick_is_stored_whichever_way_the_item_is_left(server: ServerProcess, page: Any) -> None:
    """Issue 21 (C2): a picked but unsaved answer was lost on Sign out or a reload, with no warning."""
    _sign_in(page, server, "una")
    page.keyboard.press("1")
    page.click("text=Sign out")  # at once: no wait for the save
    page.wait_for_selector("#name")
    labels_become(server, "una", [("r000", "positive")])

    page.fill("#name", "una")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r001')")  # back where she left off
    page.keyboard.press("2")
    page.reload()
    labels_become(server, "una", [("r000", "positive"), ("r001", "negative")])

    # A text box typed into (never left, so no change event) and then a reload. A reload shows
    # the item that was shown (issue 33 item 10).
    page.wait_for_selector("#item-id:text('r001')")
    item = page.inner_text("#item-id")
    page.fill("textarea[name=note]", "the fan is loud")
    page.reload()
    deadline = time.monotonic() + 15
    while notes(server, "una") != [(item, "the fan is loud")] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert notes(server, "una") == [(item, "the fan is loud")]

    # A pick clicked with the mouse on the item shown, then another address. (Its save sends only
    # what changed: a page loaded before the note arrived does not clear the note.)
    page.wait_for_selector("#item-id:text('r001')")
    page.click("input[name=sentiment][value=positive]")
    page.goto("about:blank")
    labels_become(server, "una", [("r000", "positive"), ("r001", "positive")])
    assert notes(server, "una") == [(item, "the fan is loud")]


def test_a_changed_pick_is_stored_as_the_last_one_and_enter_just_moves_on(server: ServerProcess, page: Any) -> None:
    """Issue 21 (C2): the stored label is the last pick; Enter after a stored pick sends no second save."""
    posted: list[Any] = []
    page.on("request", lambda r: posted.append(json.loads(r.post_data or "{}").get("labels", {}).get("sentiment"))
            if r.method == "POST" and r.url.endswith("/api/label") else None)
    _sign_in(page, server, "vic")
    page.keyboard.press("1")
    page.click("input[name=sentiment][value=negative]")  # changed while the first save may be under way
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r001')")
    assert _labels(server, "vic") == [("r000", "negative")]
    assert posted == ["positive", "negative"]  # Enter moved on without saving a third time
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r000')")
    assert page.is_checked("input[name=sentiment][value=negative]") and page.inner_text("#badge") == "Labelled"


def test_enter_after_a_mouse_click_on_a_button_saves_and_goes_on(server: ServerProcess, page: Any) -> None:
    """Issue 21: after "← Previous" clicked with the mouse, 2 then Enter saved and went back again
    (10 -> 9 -> 8): the clicked button kept the focus and took Enter."""
    _sign_in(page, server, "wes")
    page.fill("#goto-number", "10")
    page.click("#goto button")  # "Go", with the mouse
    page.wait_for_selector("#item-id:text('r009')")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r010')")
    page.click("#prev")
    page.wait_for_selector("#item-id:text('r009')")
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r010')")
    assert _labels(server, "wes") == [("r009", "negative")]
    assert page.inner_text("#item-number") == "11 of 40"
    # A button the keyboard moved to (Tab) does take Enter.
    page.focus("textarea[name=note]")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "prev"
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r009')")


def test_keys_typed_faster_than_the_server_answers_are_all_done_in_order(server: ServerProcess, page: Any) -> None:
    """Issue 21: five "label + Enter" pairs typed back to back saved one item; the rest were dropped."""
    _sign_in(page, server, "xia")
    for key in "12121":
        page.keyboard.press(key)
        page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r005')")
    assert _labels(server, "xia") == [("r000", "positive"), ("r001", "negative"), ("r002", "positive"),
                                      ("r003", "negative"), ("r004", "positive")]
    page.wait_for_selector("#progress:text('5 of 40 labelled')")


@pytest.mark.parametrize("width", [390, 1280])
def test_a_stopped_server_is_named_and_the_pick_is_saved_once_it_is_back(
        server: ServerProcess, page: Any, width: int, tmp_path: Path) -> None:
    """Issue 21: with the server down the page said "Not saved: Failed to fetch"; it now says what
    happened and what to do, keeps the pick, and Enter stores it once the server is back."""
    page.set_viewport_size({"width": width, "height": 800})
    _sign_in(page, server, "yan")
    before = page.locator("#save-next").bounding_box()
    server.stop()
    page.keyboard.press("1")
    message = ("The server cannot be reached. Your answer is kept on this page: press Enter to save it "
               "once the server is back.")
    page.wait_for_selector(f"#status:text('{message}')")
    assert page.is_checked("input[name=sentiment][value=positive]") and page.inner_text("#item-id") == "r000"
    assert page.inner_text("#badge") == "Not saved"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.locator("#save-next").bounding_box() == before  # the message has its own line
    page.screenshot(path=str(tmp_path / f"server-down-{width}.png"), full_page=True)  # for a person to look at once

    server.start()
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r001')")
    assert _labels(server, "yan") == [("r000", "positive")]


def test_keys_queued_behind_a_failed_save_are_not_done_on_the_wrong_item(server: ServerProcess, page: Any) -> None:
    """Issue 21: keys typed while a save is under way wait for it; if it fails they were meant for
    the items after it, so they are dropped, and the page says how many."""
    _sign_in(page, server, "zoe")
    held: list[Any] = []
    page.route("**/api/label", lambda route: held.append(route))  # under way until the test fails it
    page.keyboard.press("1")
    for key in ("Enter", "2", "Enter"):
        page.keyboard.press(key)
    while not held:
        page.wait_for_timeout(50)
    held[0].abort()
    page.wait_for_selector("#status:has-text('The 3 keys or clicks made meanwhile were ignored.')")
    assert page.inner_text("#status").startswith("The server cannot be reached.")
    assert page.inner_text("#item-id") == "r000" and page.is_checked("input[name=sentiment][value=positive]")
    page.unroute_all()
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r001')")
    assert _labels(server, "zoe") == [("r000", "positive")]


def test_a_pick_is_stored_while_a_required_question_is_still_open(make_project: Callable[..., Path],
                                                                   page: Any) -> None:
    """Issue 21 (C2): the pick is stored even before the required question is answered; Enter still
    asks for that question before it moves on."""
    from tests.harness.adminapi import labels_of
    from tests.harness.upstream import UPSTREAM_SCHEMES

    srv = ServerProcess(make_project(annotation_schemes=UPSTREAM_SCHEMES)).start()
    try:
        _sign_in(page, srv, "ada")
        page.keyboard.press("q")  # a topic; "How helpful is the review?" is required and still open
        page.keyboard.press("Enter")
        page.wait_for_selector("#status:text('Answer \u201cHow helpful is the review?\u201d first: it is required.')")
        assert labels_of(srv, "ada") == {("r000", "topics"): ["price"]}
        page.reload()
        page.wait_for_selector("#item-id:text('r000')")
        assert page.is_checked("input[name=topics][value=price]")
    finally:
        srv.stop()


def test_a_pick_made_after_the_session_ended_is_saved_once_the_annotator_signs_in_again(
        server: ServerProcess, page: Any) -> None:
    """The session ended (expired, or the server's key changed) while the page was open: the pick got
    a 401 and the page went to the sign-in form with the pick gone. Now it is kept in the tab and
    saved after the same annotator signs in; another name signing in in that tab does not get it."""
    _sign_in(page, server, "mo")
    page.keyboard.press("1")
    labels_become(server, "mo", [("r000", "positive")])
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r001')")
    page.context.clear_cookies()  # the session is gone
    page.keyboard.press("2")
    page.wait_for_selector("#name")  # the sign-in form
    assert "session ended" in page.inner_text("body")
    page.fill("#name", "mo")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r001')")
    labels_become(server, "mo", [("r000", "positive"), ("r001", "negative")])
    page.wait_for_selector("input[name=sentiment][value=negative]:checked")  # drawn once the save is answered
    assert "saved" in page.inner_text("#status").lower()

    page.context.clear_cookies()
    page.keyboard.press("1")  # r001 again, changed: kept for mo
    page.wait_for_selector("#name")
    page.fill("#name", "someone-else")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")
    time.sleep(1)
    assert _labels(server, "someone-else") == []
    assert _labels(server, "mo") == [("r000", "positive"), ("r001", "negative")]


def test_a_label_keyed_with_a_letter_the_page_uses_keeps_its_key(make_project: Callable[..., Path], page: Any) -> None:
    """Upstream configs may key labels 'a' (agree) and 'd' (disagree): such configs were refused,
    though upstream's page does not use those letters. The label's key now chooses the label,
    dark mode stays as it was, and the help line no longer offers those letters."""
    srv = ServerProcess(make_project(annotation_schemes=[{
        "annotation_type": "radio", "name": "sentiment", "description": "Do you agree?",
        "labels": [{"name": "agree", "key_value": "a"}, {"name": "disagree", "key_value": "d"}, "unsure"]}])).start()
    try:
        _sign_in(page, srv, "ada")
        theme = page.evaluate("document.documentElement.dataset.theme || ''")
        helpline = page.inner_text("p.help")
        assert "dark mode" not in helpline and "accept the model's suggestion" not in helpline
        assert "go to item" in helpline and "unlabelled items" in helpline
        assert page.get_attribute("#theme-toggle", "title") == "Toggle dark mode"

        page.keyboard.press("d")
        labels_become(srv, "ada", [("r000", "disagree")])
        assert page.evaluate("document.documentElement.dataset.theme || ''") == theme
        page.keyboard.press("Enter")
        page.wait_for_selector("#item-id:text('r001')")
        page.keyboard.press("a")
        labels_become(srv, "ada", [("r000", "disagree"), ("r001", "agree")])
        page.click("#theme-toggle")  # dark mode is the button's alone now
        assert page.evaluate("document.documentElement.dataset.theme || ''") != theme
    finally:
        srv.stop()
