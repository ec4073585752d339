"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's conjoint choice at 390 and 1280 px.
A card for each profile of the set (its level of each attribute), the same set after a reload; one
chosen by the arrow keys, or none of them; stored with the profiles it was made among."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become, labels_of
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_conjoint import CHOICE, ITEMS

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FS = "fieldset[data-schema=assistant_preference]"


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[CHOICE]) as srv:
        yield srv


def cards(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(f"{FS} .profile", """l => l.map(c => Object.fromEntries(
        Array.from(c.querySelectorAll('tr')).map(r => [r.querySelector('th').textContent, r.querySelector('td').textContent])))""")


@pytest.mark.parametrize("width", [390, 1280])
def test_a_profile_is_chosen_by_keyboard_and_kept_with_the_set(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="j1")
    shown = cards(page)
    assert len(shown) == 3 and all(set(p) == {"Response Speed", "Accuracy", "Privacy Level"} for p in shown)
    page.focus(f"{FS} .profile >> nth=0 >> input")
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    answers_become(server.url, "ana", {("j1", "assistant_preference"): {"chosen_profile": 2, "profiles": shown}})
    page.reload()
    page.wait_for_selector("#item-id:text('j1')")
    assert cards(page) == shown and page.is_checked(f"{FS} .profile >> nth=1 >> input")
    page.focus(f"{FS} .profile >> nth=1 >> input")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")  # past the last profile: none of these
    assert page.is_checked(f"{FS} .profile-none input")
    answers_become(server.url, "ana", {("j1", "assistant_preference"): {"chosen_profile": "none", "profiles": shown}})
    assert labels_of(server, "ana")[("j1", "assistant_preference")]["profiles"] == shown
    assert page.evaluate("document.documentElement.scrollWidth") <= width
