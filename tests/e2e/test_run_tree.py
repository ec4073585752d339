"""Issue 45 (item 1) in a real browser, under gunicorn: an agent trace with its tree of sub-agent runs
(upstream's show_run_tree) at 390 and 1280 px. Choosing a run by keyboard shows only the steps it and
the runs under it took, and walking the steps with the arrow keys passes over the others; "All steps"
shows them all again. A per-step question bound to runs is asked on those runs' steps. A hostile run
name is shown as text and runs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_run_tree import DELEGATION, FIELDS, HOSTILE, ITEMS

pytestmark = [pytest.mark.browser, pytest.mark.integration]
TREE = "nav.run-tree"


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, ITEMS, annotation_schemes=[DELEGATION], instance_display={"fields": FIELDS}) as srv:
        yield srv


def shown_steps(page: Any) -> list[str]:
    return page.eval_on_selector_all(".agent-trace .trace-step:not([hidden])", "l => l.map(s => s.getAttribute('aria-label'))")


@pytest.mark.parametrize("width", [390, 1280])
def test_choosing_a_run_shows_its_steps_and_walking_passes_over_the_rest(server: ServerProcess, page: Any,
                                                                         width: int) -> None:
    sign_in(page, server, "ana", width, first="tree-1")
    assert page.eval_on_selector_all(f"{TREE} .run-name", "l => l.map(n => n.textContent)") == [
        "orchestrator", "researcher", HOSTILE, "writer"]
    assert page.get_attribute(f"{TREE} .run-all", "aria-pressed") == "true"
    assert len(shown_steps(page)) == 6
    # The per-step question is asked on the researcher's and the writer's own steps.
    assert page.eval_on_selector_all(".trace-step .turn-slot", "l => l.length") == 3

    page.focus(f"{TREE} .run-node >> nth=2 >> button")  # the researcher
    page.keyboard.press("Enter")
    assert shown_steps(page) == ["Step 2 of 6", "Step 3 of 6", "Step 4 of 6", "Step 5 of 6"]
    assert page.inner_text(f"{TREE} .run-tree-state") == "Showing the researcher run: 4 of 6 steps"
    page.focus(".agent-trace .trace-step:not([hidden]) >> nth=0")
    page.keyboard.press("End")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Step 5 of 6"

    page.focus(f"{TREE} .run-node >> nth=3 >> button")  # the failed search, under the researcher
    page.keyboard.press("Enter")
    assert shown_steps(page) == ["Step 3 of 6", "Step 4 of 6"]
    assert page.inner_text(f"{TREE} .run-node >> nth=3 >> .run-status") == "error"
    page.focus(f"{TREE} .run-all")
    page.keyboard.press("Enter")
    assert len(shown_steps(page)) == 6 and page.inner_text(f"{TREE} .run-tree-state") == ""

    # An item without a tree draws none.
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('flat-1')")
    assert page.locator(TREE).count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
