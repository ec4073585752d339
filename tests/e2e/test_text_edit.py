"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's post-editing walked with the
keyboard at 390 and 1280 px. The box starts with the machine translation; the words and characters
changed and the words struck out and added follow the typing; the edit is stored when the box is
left, with the distances the server counts; Reset to Original keeps the original as the answer. The
original's markup is shown as text and runs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.edits import edit_record
from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_text_edit import POST_EDIT

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FS = "fieldset[data-schema=post_edit]"
HOSTILE = '<img src=x onerror="window.__pwned=1">'
MT = f"The cat sat in the mat. {HOSTILE}"
ITEMS = [{"id": "te001", "text": "Die Katze saß auf der Matte.", "mt_output": MT},
         {"id": "te002", "text": "Guten Morgen.", "mt_output": "Good morning."}]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[POST_EDIT]) as srv:
        yield srv


def stats(page: Any) -> tuple[str, str]:
    return page.inner_text(f"{FS} .edit-words"), page.inner_text(f"{FS} .edit-chars")


def changes(page: Any) -> list[list[str]]:
    return page.eval_on_selector_all(f"{FS} .edit-changes > *", "l => l.map(e => [e.tagName.toLowerCase(), e.textContent])")


@pytest.mark.parametrize("width", [390, 1280])
def test_a_translation_is_post_edited_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="te001")
    assert page.inner_text(f"{FS} .edit-source") == MT
    assert page.input_value(f"{FS} .edit-text") == MT and stats(page) == ("0", "0")

    page.focus(f"{FS} .edit-text")
    page.keyboard.press("Control+Home")
    for _ in range(len("The cat sat ")):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Delete")
    page.keyboard.press("Delete")
    page.keyboard.type("on")  # "in" -> "on"
    assert stats(page) == ("1", "1")
    assert ["del", "in"] in changes(page) and ["ins", "on"] in changes(page)
    page.keyboard.press("Tab")  # out of the box: the edit is saved
    edited = MT.replace("sat in", "sat on")
    answers_become(server.url, "ana", {("te001", "post_edit"): edit_record(MT, edited)})

    # The next item starts from its own original; Reset keeps an original as it is.
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('te002')")
    assert page.input_value(f"{FS} .edit-text") == "Good morning." and changes(page) == [["span", "Good"], ["span", "morning."]]
    page.focus(f"{FS} .edit-reset")
    page.keyboard.press("Enter")
    answers_become(server.url, "ana", {("te001", "post_edit"): edit_record(MT, edited),
                                       ("te002", "post_edit"): edit_record("Good morning.", "Good morning.")})

    # Back, and after a reload: the edit as it was made.
    page.focus("#item-text")
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('te001')")
    assert page.input_value(f"{FS} .edit-text") == edited and stats(page) == ("1", "1")
    page.reload()
    page.wait_for_selector("#item-id:text('te001')")
    assert page.input_value(f"{FS} .edit-text") == edited
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
