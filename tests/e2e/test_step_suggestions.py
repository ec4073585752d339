"""Issue 45, item 4 in a real browser, under gunicorn: after a step classifier's run (sklearn-text on
40 coding sessions marked by their first wrong step), an annotator sees the model's answer on each
step and in one line ("step 2 is the first error"), accepts it with the keyboard and it is stored as
the model's; after a preference model's run, the answer it prefers is named as the page names it
("Answer A is better") and accepted the same way; at 390 and 1280 px."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import stored_labels
from tests.harness.agentsteps import mark_steps, trace_project, true_marks
from tests.harness.annotating import signed_in
from tests.harness.comparisons import compare, comparison_project
from tests.harness.pages import sign_in
from tests.harness.runs import succeeded
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]
BOX = "fieldset[data-schema=step_rewards] .suggestion"


@pytest.fixture
def trained(make_project: Callable[..., Path]) -> Iterator[tuple[ServerProcess, str]]:
    srv = ServerProcess(trace_project(make_project)).start()
    gold = signed_in(srv, "gold")
    for n in range(40):
        mark_steps(gold, srv, n)
    done = succeeded(srv, trainer="sklearn-text-classification", schemas=["step_rewards"], backend="local")
    yield srv, done["id"]
    srv.stop()


def notes(page: Any) -> dict[str, str]:
    return page.eval_on_selector_all(".turn-slot[data-schema=step_rewards]", """l => Object.fromEntries(l.map(s =>
        [s.dataset.turn, (s.querySelector('.turn-suggestion') || {}).textContent || '']))""")


def marks(page: Any) -> dict[str, str]:
    return page.eval_on_selector_all(".turn-slot[data-schema=step_rewards]", """l => Object.fromEntries(l.map(s =>
        [s.dataset.turn, (s.querySelector('input:checked') || {}).value || '']))""")


@pytest.mark.parametrize("width", [390, 1280])
def test_the_models_answer_on_each_step_is_accepted_by_keyboard(trained: tuple[ServerProcess, str], page: Any,
                                                                width: int) -> None:
    srv, run_id = trained
    user = f"kim{width}"
    sign_in(page, srv, user, width, first="t000")
    page.wait_for_selector(BOX, state="visible")
    # Trace 0 goes wrong at the agent's second step.
    assert page.inner_text(BOX + " .s-label") == "step 2 is the first error"
    said = notes(page)
    assert [said[t].split(" (")[0] for t in ("t1", "t2", "t3", "t4")] == [
        "Model: correct", "Model: incorrect", "Model: incorrect", "Model: incorrect"]
    assert all(note.endswith("% sure)") for note in said.values())
    assert set(marks(page).values()) == {""}  # a suggestion is not an answer until accepted

    page.focus("#item-text")
    page.keyboard.press("a")
    expected = true_marks(0)
    page.wait_for_function("() => document.querySelectorAll('.turn-slot[data-schema=step_rewards] input:checked').length === 4")
    assert marks(page) == expected
    rows = []
    for _ in range(100):
        rows = [r for r in stored_labels(srv.url, user) if r["schema"] == "step_rewards"]
        if rows:
            break
        page.wait_for_timeout(100)
    assert {t: e["value"] for t, e in rows[0]["label"].items()} == expected
    assert (rows[0]["source"], rows[0]["run_id"]) == ("suggestion", run_id)

    # A trace the model finds no error in says so.
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('t001')")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('t002')")
    page.wait_for_selector(BOX, state="visible")
    assert page.inner_text(BOX + " .s-label") == "no step is wrong"
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.fixture
def compared(make_project: Callable[..., Path]) -> Iterator[tuple[ServerProcess, str]]:
    srv = ServerProcess(comparison_project(make_project)).start()
    gold = signed_in(srv, "gold")
    for n in range(40):
        compare(gold, srv, n)
    done = succeeded(srv, timeout=120, trainer="noop", schemas=["better"], backend="local")
    yield srv, done["id"]
    srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_preferred_answer_is_suggested_by_its_name_and_accepted(compared: tuple[ServerProcess, str], page: Any,
                                                                   width: int) -> None:
    """A preference model's suggestion names the answer it prefers as the page names it."""
    srv, run_id = compared
    user = f"ana{width}"
    sign_in(page, srv, user, width, first="c000")
    box = "fieldset[data-schema=better] .suggestion"
    page.wait_for_selector(box, state="visible")
    preferred = signed_in(srv, "someone").get(srv.url + "/api/item/1").json()["item"]["suggestions"]["better"]["label"]
    assert page.inner_text(box + " .s-label") == {"A": "Answer A is better", "B": "Answer B is better"}[preferred]
    page.focus("#item-text")
    page.keyboard.press("a")
    for _ in range(100):
        rows = [r for r in stored_labels(srv.url, user) if r["schema"] == "better"]
        if rows:
            break
        page.wait_for_timeout(100)
    assert (rows[0]["label"], rows[0]["source"], rows[0]["run_id"]) == (preferred, "suggestion", run_id)
    assert page.is_checked(f"fieldset[data-schema=better] input[value={preferred}]")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
