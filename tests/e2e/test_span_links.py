"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's span links at 390 and 1280 px. Spans
marked by keyboard in the item's text; the link question lists them as they are marked; two picked,
the source first, and linked by a chosen type; a link against its type's labels refused with why; a
link goes with a span it joins when that span is removed; after a reload the links are as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become, labels_of
from tests.harness.pages import key_of, sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_span_links import ENTITIES, RELATIONS, TEXT

pytestmark = [pytest.mark.browser, pytest.mark.integration]
LINKS = "fieldset[data-schema=relations]"


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, [{"id": "r1", "text": TEXT}, {"id": "r2", "text": "Nobody here."}],
                       annotation_schemes=[ENTITIES, RELATIONS]) as srv:
        yield srv


def mark(page: Any, words_before: int, words: int, label: str) -> None:
    page.focus("[role=textbox]")
    page.keyboard.press("Home")
    for _ in range(words_before):
        page.keyboard.press("Control+ArrowRight")
    if words_before:
        page.keyboard.press("ArrowRight")
    for _ in range(words):
        page.keyboard.press("Shift+Control+ArrowRight")
    page.keyboard.press(key_of(page, label))


def pickable(page: Any) -> list[str]:
    return page.eval_on_selector_all(f"{LINKS} .link-spans label", "l => l.map(x => x.textContent.trim())")


@pytest.mark.parametrize("width", [390, 1280])
def test_spans_are_linked_by_keyboard_and_a_link_goes_with_its_span(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="r1")
    assert pickable(page) == [] and page.inner_text(f"{LINKS} .link-spans").startswith("No spans marked yet")
    mark(page, 0, 2, "PERSON")       # John Smith
    mark(page, 4, 1, "ORGANIZATION")  # Google
    assert pickable(page) == ["PERSON: “John Smith”", "ORGANIZATION: “Google”"]

    # Backwards first: refused with why; then the source first.
    page.focus(f"{LINKS} .link-spans input >> nth=1")
    page.keyboard.press("Space")
    page.focus(f"{LINKS} .link-spans input >> nth=0")
    page.keyboard.press("Space")
    page.focus(f"{LINKS} .link-add")
    page.keyboard.press("Enter")
    assert page.inner_text(f"{LINKS} .link-state") == "A WORKS_FOR link starts at PERSON, not ORGANIZATION."
    for n in (1, 0, 0, 1):  # unpick both, then pick John first and Google second
        page.focus(f"{LINKS} .link-spans input >> nth={n}")
        page.keyboard.press("Space")
    page.focus(f"{LINKS} .link-add")
    page.keyboard.press("Enter")
    assert page.inner_text(f"{LINKS} .link-list") == "WORKS_FOR: PERSON: “John Smith” → ORGANIZATION: “Google” Remove"
    answers_become(server.url, "ana", {
        ("r1", "entities"): [{"start": 0, "end": 10, "label": "PERSON", "text": "John Smith"},
                             {"start": 20, "end": 26, "label": "ORGANIZATION", "text": "Google"}],
        ("r1", "relations"): [{"link_type": "WORKS_FOR", "direction": "directed", "spans": [
            {"start": 0, "end": 10, "label": "PERSON", "text": "John Smith"},
            {"start": 20, "end": 26, "label": "ORGANIZATION", "text": "Google"}]}]})
    page.reload()
    page.wait_for_selector("#item-id:text('r1')")
    assert page.locator(f"{LINKS} .link-list li").count() == 1 and len(pickable(page)) == 2

    # Google unmarked: the link goes with it, on the page and on the server.
    page.click("#item-text .hl-end.own >> nth=1")
    answers_become(server.url, "ana", {("r1", "entities"): [{"start": 0, "end": 10, "label": "PERSON", "text": "John Smith"}]})
    assert page.locator(f"{LINKS} .link-list li").count() == 0
    assert ("r1", "relations") not in labels_of(server, "ana")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
