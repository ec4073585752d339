"""Issue 45 (moving upstream's projects over) in a real browser, under gunicorn: upstream's display-only
blocks between the questions at 390 and 1280 px: a Markdown heading and emphasis drawn as such, HTML
kept to harmless elements, nothing in them run, and the keyboard passing over them to the questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_pure_display import HEADER, RADIO, TRUSTED

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, [{"id": "b1", "text": "An item"}, {"id": "b2", "text": "Another"}],
                       annotation_schemes=[HEADER, RADIO, TRUSTED]) as srv:
        yield srv


@pytest.mark.parametrize("width", [390, 1280])
def test_display_blocks_are_drawn_between_the_questions(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="b1")
    assert page.inner_text(".pure-display[data-schema=scale_header] h2") == "Scale & Rating Types"
    assert page.inner_text(".pure-display[data-schema=scale_header] strong") == "each"
    assert page.inner_text(".pure-display[data-schema=note] b") == "Careful"
    assert page.locator(".pure-display img").count() == 0
    # In the page's order: the heading, the question, the note.
    order = page.eval_on_selector_all("#answers > *", "l => l.map(e => e.dataset.schema)")
    assert order == ["scale_header", "sentiment", "note"]
    page.keyboard.press("1")
    answers_become(server.url, "ana", {("b1", "sentiment"): "positive"})
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
