"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's failure attribution walked with
the keyboard at 390 and 1280 px. The agent and the step are picked from the item's own (another
item offers its own), the reason typed; the answer is stored as it is given, upstream's triple, and
is there again after going on and coming back and after a reload. A step's hostile text runs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_failure_attribution import ATTRIBUTION, ITEMS

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FS = "fieldset[data-schema=attribution]"


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    fields = [{"key": "task", "type": "text", "label": "Task"},
              {"key": "steps", "type": "agent_trace", "label": "Agent Interactions",
               "display_options": {"speaker_key": "agent", "text_key": "content"}}]
    with serving_items(make_project, ITEMS, annotation_schemes=[ATTRIBUTION], instance_display={"fields": fields},
                       item_properties={"id_key": "id", "text_key": "task"}) as srv:
        yield srv


def choices(page: Any, part: str) -> list[str]:
    return page.eval_on_selector_all(f"{FS} .fa-{part} option", "l => l.map(o => o.textContent)")


def shown(page: Any) -> list[str]:
    return [page.input_value(f"{FS} .fa-agent"), page.input_value(f"{FS} .fa-step"),
            page.input_value(f"{FS} [data-part=reason]")]


@pytest.mark.parametrize("width", [390, 1280])
def test_the_failing_agent_and_step_are_picked_by_keyboard_from_the_items_own(server: ServerProcess, page: Any,
                                                                              width: int) -> None:
    sign_in(page, server, "ana", width, first="booking")
    assert choices(page, "agent") == ["Choose…", "Planner", "Researcher", "Booking"]
    assert choices(page, "step")[1:] == [
        "1. [Planner] Delegating search to the Researcher.",
        "2. [Researcher] Found UA482 $612 refundable; DL901 $338 non-refundable.",
        '3. [Planner] DL901 is the cheapest. Booking DL901. <img src=x onerror="window._…',  # cut short
        "4. [Booking] Booked DL901."]

    page.focus(f"{FS} .fa-agent")
    page.keyboard.press("ArrowDown")  # Planner
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")  # step 3
    page.keyboard.press("Tab")
    page.keyboard.type("Booked the non-refundable fare.")
    page.keyboard.press("Tab")
    answer = {"responsible_agent": "Planner", "decisive_step": 2, "reason": "Booked the non-refundable fare."}
    answers_become(server.url, "ana", {("booking", "attribution"): answer})
    assert shown(page) == ["Planner", "2", "Booked the non-refundable fare."]

    # The next item offers its own agents and steps, and asks afresh.
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('logs')")
    assert choices(page, "agent")[1:] == ["Agent (Thought)", "Agent (Action)", "Environment"]
    assert len(choices(page, "step")) == 4 and shown(page) == ["", "", ""]
    page.select_option(f"{FS} .fa-step", "1")
    answers_become(server.url, "ana", {("booking", "attribution"): answer, ("logs", "attribution"): {
        "responsible_agent": "", "decisive_step": 1, "reason": ""}})

    # Back, and after a reload: the answer as it was given.
    page.focus("#item-text")
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('booking')")
    assert shown(page) == ["Planner", "2", "Booked the non-refundable fare."]
    page.reload()
    page.wait_for_selector("#item-id:text('booking')")
    assert shown(page) == ["Planner", "2", "Booked the non-refundable fare."]
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
