"""Issue 33 item 10 in a real browser: with nothing picked, "Save & next" and Enter move on without
saving anything; the button says so ("Skip") and the status line names the item skipped. A reload
shows the item that was on the page (a skipped one too), not the first unlabelled item."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from tests.harness.adminapi import stored_labels
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def _sign_in(page: Any, server: ServerProcess, name: str) -> None:
    page.goto(server.url + "/")
    page.fill("#name", name)
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")


def _stored(server: ServerProcess, user: str) -> list[tuple[str, Any]]:
    rows = stored_labels(server.url, user)
    return sorted((r["id"], r["label"]) for r in rows)


def test_next_with_nothing_picked_is_called_a_skip_and_stores_nothing(server: ServerProcess, page: Any) -> None:
    """Issue 33 item 10: the button read "Save & next" on an item with nothing picked, and Enter moved
    on without a word."""
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _sign_in(page, server, "sam")
    button = page.locator("#save-next")
    assert button.inner_text().strip() == "Skip →"
    box = button.bounding_box()

    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r001')")
    assert page.inner_text("#status") == "Skipped item 1 (r000): nothing was picked, so it stays unlabelled."
    assert _stored(server, "sam") == []  # a skip stores nothing, as before

    page.keyboard.press("1")
    page.wait_for_selector("#status:text('Saved.')")
    assert button.inner_text().strip() == "Save & next →"
    assert button.bounding_box() == box  # the name changes, the button does not move under the mouse
    button.click()
    page.wait_for_selector("#item-id:text('r002')")
    assert page.inner_text("#status") == ""  # saved and moved on: nothing skipped
    assert button.inner_text().strip() == "Skip →"
    button.click()
    page.wait_for_selector("#item-id:text('r003')")
    assert page.inner_text("#status").startswith("Skipped item 3 (r002)")

    # Back to a labelled item: its answer is shown, so the button saves; going back is no skip.
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r002')")
    assert page.inner_text("#status") == ""
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r001')")
    assert button.inner_text().strip() == "Save & next →"
    assert _stored(server, "sam") == [("r001", "positive")]
    assert errors == []


def test_a_reload_shows_the_item_that_was_shown(server: ServerProcess, page: Any) -> None:
    """Issue 33 item 10: a reload jumped to the first unlabelled item. The item shown stays, a skipped
    one too, and moving between items adds no history entries (Back leaves the page, as before)."""
    _sign_in(page, server, "ria")
    history = page.evaluate("history.length")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r001')")
    page.keyboard.press("Enter")  # r001 skipped
    page.wait_for_selector("#item-id:text('r002')")
    page.keyboard.press("Enter")  # r002 skipped
    page.wait_for_selector("#item-id:text('r003')")

    page.reload()
    page.wait_for_selector("#item-id:text('r003')")  # not r001, the first unlabelled
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r002')")
    page.reload()
    page.wait_for_selector("#item-id:text('r002')")  # the skipped item stays on the page
    assert page.inner_text("#badge") == "Not labelled"
    page.fill("#goto-number", "1")
    page.press("#goto-number", "Enter")
    page.wait_for_selector("#item-id:text('r000')")
    page.reload()
    page.wait_for_selector("#item-id:text('r000')")
    assert page.is_checked("input[name=sentiment][value=positive]")
    assert page.evaluate("history.length") == history
    assert _stored(server, "ria") == [("r000", "positive")]

    # Signing in again still resumes on the first unlabelled item.
    page.click("#sign-out button")
    page.wait_for_selector("#name")
    page.fill("#name", "ria")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r001')")


def test_a_required_question_is_never_offered_as_a_skip(make_project: Callable[..., Path], page: Any) -> None:
    """Issue 33 item 10: where a question is required, "Save & next" cannot skip, so it keeps its name
    and asks for the answer."""
    from tests.harness.upstream import UPSTREAM_SCHEMES

    srv = ServerProcess(make_project(annotation_schemes=UPSTREAM_SCHEMES)).start()
    try:
        _sign_in(page, srv, "ada")
        assert page.inner_text("#save-next").strip() == "Save & next →"
        page.keyboard.press("Enter")
        page.wait_for_selector("#status:text('Answer \u201cHow helpful is the review?\u201d first: it is required.')")
        assert page.inner_text("#item-id") == "r000"
    finally:
        srv.stop()
