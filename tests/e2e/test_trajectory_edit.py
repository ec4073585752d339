"""Issue 45 (item 3) in a real browser, under gunicorn: upstream's trajectory correction walked with
the keyboard at 390 and 1280 px. Each step's action has a box that starts with it (its thought shown
above, as text), the final answer one more; a fix is counted and flagged as it is typed, stored when
its box is left with what the server counts, Reset puts an original back; the summary counts the
steps changed. After going on and back and after a reload the boxes hold the edits."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import stored_labels
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.harness.waiting import wait_until
from tests.unit.test_trajectory_edit import CORRECTION, FIXED, ITEMS

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FS = "fieldset[data-schema=corrected_trajectory]"


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[CORRECTION],
                       item_properties={"id_key": "id", "text_key": "task_description"}) as srv:
        yield srv


def boxes(page: Any) -> list[str]:
    return page.eval_on_selector_all(f"{FS} .trajedit-block .edit-text", "l => l.map(t => t.value)")


def summary(page: Any) -> tuple[str, str]:
    return page.inner_text(f"{FS} .trajedit-count"), page.inner_text(f"{FS} .trajedit-total")


def stored(server: ServerProcess) -> Any:
    rows = [r["label"] for r in stored_labels(server.url, "ana") if r["id"] == "traj_001"]
    return rows[0] if rows else None


@pytest.mark.parametrize("width", [390, 1280])
def test_a_trajectory_is_corrected_box_by_box_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="traj_001")
    assert page.eval_on_selector_all(f"{FS} .trajedit-name", "l => l.map(n => n.textContent)") == [
        "Step 1 · Action", "Step 2 · Action", "Step 3 · Action", "Final answer"]
    assert boxes(page) == ["web_search(queyr='San Francisco weather')", "open_url(results[0])",
                           '{"tool":"extract_text","selector":".temp"}', "It is sunny."]
    assert "Open the first result. <img" in page.inner_text(f"{FS} .trajedit-steps") and summary(page) == ("0", "0")

    # Step 1's typo, by keyboard: into its box, select all, type the fix; leaving the box saves it.
    page.focus(f"{FS} .edit-text[aria-label='Corrected Action for step 1']")
    page.keyboard.press("Control+a")
    page.keyboard.type(FIXED)
    assert summary(page) == ("1", "2") and page.inner_text(f"{FS} .trajedit-block >> nth=0 >> .trajedit-flag") == "✎ edited"
    page.keyboard.press("Tab")
    wait_until(lambda: stored(server) is not None and stored(server)["n_steps_edited"] == 1)
    # The final answer, then step 1 put back with its Reset (reached by Tab from its box).
    page.focus(f"{FS} .edit-text[aria-label='Corrected final answer']")
    page.keyboard.press("Control+End")
    page.keyboard.type(" 18 degrees.")
    page.keyboard.press("Tab")
    wait_until(lambda: (stored(server)["final_answer"] or {}).get("edited_text") == "It is sunny. 18 degrees.")
    assert summary(page)[0] == "2"
    page.focus(f"{FS} .edit-text[aria-label='Corrected Action for step 1']")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Reset"
    page.keyboard.press("Enter")
    wait_until(lambda: stored(server)["n_steps_edited"] == 1)
    record = stored(server)
    assert [(s["step_index"], s["edited"]) for s in record["steps"]] == [(0, False)]
    assert record["final_answer"]["edited"] and summary(page)[0] == "1"

    # The next item has no action to correct; back, and after a reload, the boxes as they were left.
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('plan_001')")
    assert page.inner_text(f"{FS} .trajedit-steps") == "This item has no steps to correct."
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('traj_001')")
    expected = ["web_search(queyr='San Francisco weather')", "open_url(results[0])",
                '{"tool":"extract_text","selector":".temp"}', "It is sunny. 18 degrees."]
    assert boxes(page) == expected
    page.reload()
    page.wait_for_selector("#item-id:text('traj_001')")
    assert boxes(page) == expected and summary(page)[0] == "1"
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
