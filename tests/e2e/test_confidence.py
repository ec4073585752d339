"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's confidence rating at 390 and 1280
px. The rated question keeps its number keys; the confidence scale is reached with Tab and walked
with the arrow keys, the slider moved with them; each answer is stored as it is given and is there
again after a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_confidence import ITEMS, SENTIMENT, SLIDER, SURE

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[SENTIMENT, SURE, SLIDER]) as srv:
        yield srv


@pytest.mark.parametrize("width", [390, 1280])
def test_a_label_and_how_sure_the_annotator_is_are_given_by_keyboard(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="c1")
    assert page.inner_text("fieldset[data-schema=sentiment_confidence] .rates") == (
        "Your confidence in your answer to “Select the sentiment of the text”")
    page.keyboard.press("1")  # Positive, by the rated question's own key
    page.focus("fieldset[data-schema=sentiment_confidence] input[value='1']")
    page.keyboard.press("Space")
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    assert page.is_checked("fieldset[data-schema=sentiment_confidence] input[value='4']")
    page.focus("fieldset[data-schema=sure] input[type=range]")
    page.keyboard.press("End")  # the slider's top: 100
    page.keyboard.press("ArrowLeft")  # in the slider, the arrow moves it (the page's keys stay out of it)
    assert page.inner_text("fieldset[data-schema=sure] .slider-value") == "99"
    page.focus("fieldset[data-schema=sentiment_confidence] input[value='4']")  # leaving the slider saves it
    answers_become(server.url, "ana", {("c1", "sentiment"): "Positive", ("c1", "sentiment_confidence"): "4",
                                       ("c1", "sure"): 99})
    page.reload()
    page.wait_for_selector("#item-id:text('c1')")
    assert page.is_checked("fieldset[data-schema=sentiment_confidence] input[value='4']")
    assert page.input_value("fieldset[data-schema=sure] input[type=range]") == "99"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
