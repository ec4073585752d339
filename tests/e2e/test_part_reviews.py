"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's multimodal reasoning, GUI trajectory
and speech transcript reviews walked with the keyboard at 390 and 1280 px. A card for each reasoning
block (its image shown with its caption), each GUI step (its click marked where it landed on the
screenshot) and each transcript segment (its times and speaker); each answer stored as it is given;
after going on and back and after a reload every answer is where it was given. Hostile text in the
item is shown as text and runs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import becomes, focused, sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_part_reviews import GUI, ITEM, REASONING, SPEECH

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HOSTILE = '<img src=x onerror="window.__pwned=1">'
SHOT = ("data:image/svg+xml;utf8,<svg xmlns='http://www.w3.org/2000/svg' width='200' height='100'>"
        "<rect width='200' height='100' fill='%23eeeeee'/></svg>")
ITEMS = [{**ITEM, "clicks": [{"action": f"click Settings {HOSTILE}", "x": 0.25, "y": 0.5, "screenshot": SHOT},
                             {"action": "type 'dark'", "click": {"x": 120, "y": 40}}]},
         {"id": "v2", "text": "nothing to review"}]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[REASONING, GUI, SPEECH]) as srv:
        yield srv


def picked(page: Any) -> list[str]:
    return page.eval_on_selector_all("fieldset .review-part input:checked", "l => l.map(i => i.getAttribute('aria-label'))")


@pytest.mark.parametrize("width", [390, 1280])
def test_each_block_step_and_segment_is_judged_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="v1")
    mmr, gui, speech = ("fieldset[data-schema=reasoning_review]", "fieldset[data-schema=gui_review]",
                        "fieldset[data-schema=speech_errors]")
    assert page.eval_on_selector_all(f"{mmr} .review-step", "l => l.map(n => n.textContent)") == [
        "text", "image", "tool", "action"]
    chart = page.locator(f"{mmr} .review-part >> nth=1 >> img.review-image")
    assert chart.get_attribute("alt") == "Bar chart: Q3 tallest" and chart.evaluate("i => i.naturalWidth") > 0
    assert page.inner_text(f"{mmr} .review-part >> nth=1 >> .review-caption") == "Bar chart: Q3 tallest"
    # The click is marked where it landed: a quarter across the screenshot, half way down.
    becomes(page.locator(f"{gui} .review-part >> nth=0 >> img.review-image"), "i => i.complete")
    shot = page.locator(f"{gui} .review-part >> nth=0 >> img.review-image").bounding_box()
    mark = page.locator(f"{gui} .review-part >> nth=0 >> .review-marker").bounding_box()
    assert abs(mark["x"] + mark["width"] / 2 - (shot["x"] + shot["width"] / 4)) < 3
    assert abs(mark["y"] + mark["height"] / 2 - (shot["y"] + shot["height"] / 2)) < 3
    assert page.inner_text(f"{gui} .review-part >> nth=0 >> .review-detail") == f"click Settings {HOSTILE}\nclick at 0.25, 0.5"
    assert not page.locator(f"{gui} .review-part >> nth=1 >> .review-marker").is_visible()  # pixels: written, not placed
    assert page.eval_on_selector_all(f"{speech} .review-head", "l => l.map(n => n.textContent)") == [
        "0.0–1.6 s user", "1.9–4.2 s agent"]

    # The image block's verdict by arrow keys; a GUI step's verdict; a segment's error and correction.
    page.focus(f"{mmr} .review-part >> nth=1 >> input[value=coherent]")
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Step 2, verdict: visual_hallucination"
    page.focus(f"{gui} .review-part >> nth=0 >> input[value=wrong_element]")
    page.keyboard.press("Space")
    page.focus(f"{speech} .review-part >> nth=0 >> input[value=asr_error]")
    page.keyboard.press("Space")
    page.focus(f"{speech} .review-part >> nth=0 >> input[data-part=correction]")
    page.keyboard.type("what's the weather like today")
    page.keyboard.press("Tab")
    answers_become(server.url, "ana", {
        ("v1", "reasoning_review"): [{"index": 1, "verdict": "visual_hallucination"}],
        ("v1", "gui_review"): [{"index": 0, "verdict": "wrong_element"}],
        ("v1", "speech_errors"): [{"index": 0, "start": 0.0, "end": 1.6, "errors": ["asr_error"],
                                   "correction": "what's the weather like today"}]})
    answers = picked(page)

    # The next item has none of them; back, and after a reload, every answer where it was given.
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('v2')")
    assert page.inner_text(f"{mmr} .review-parts") == "No reasoning steps in this trace."
    assert page.inner_text(f"{speech} .review-parts") == "No transcript segments in this item."
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('v1')")
    assert picked(page) == answers
    page.reload()
    page.wait_for_selector("#item-id:text('v1')")
    assert picked(page) == answers == ["Step 2, verdict: visual_hallucination", "Step 1, verdict: wrong_element",
                                       "Segment 1, errors: asr_error"]
    assert page.input_value(f"{speech} .review-part >> nth=0 >> input[data-part=correction]") == "what's the weather like today"
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
