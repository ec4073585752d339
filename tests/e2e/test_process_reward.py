"""Issue 45 (items 2 and 3) in a real browser, under gunicorn: upstream's process_reward on a coding
agent's session, walked with the keyboard at 390 and 1280 px. In first_error mode the steps are listed
under the question with their whole text; marking a step wrong marks the steps before it correct and
every later one wrong, marking one correct makes the steps before it correct; Reset all takes every
mark away. With inline_with_trace the marks sit on the trace's own turns (none on the user's task).
Each mark is stored as it is made, and is there again after a reload. Every string is hostile markup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become, stored_labels
from tests.harness.pages import focused, sign_in
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
SCHEMES = [
    {"annotation_type": "process_reward", "name": "step_rewards", "description": "First wrong step",
     "steps_key": "structured_turns", "mode": "first_error"},
    {"annotation_type": "process_reward", "name": "verdicts", "description": "Each step", "steps_key": "structured_turns",
     "mode": "per_step", "allow_neutral": True, "inline_with_trace": True},
    {"annotation_type": "radio", "name": "overall_quality", "description": "Overall", "labels": ["good", "poor"]},
]


def item(n: int) -> dict[str, Any]:
    return {"id": f"s{n}", "text": f"Task {n}", "structured_turns": [
        {"role": "user", "content": f"Fix the login bypass {HOSTILE}"},
        {"role": "assistant", "content": f"I'll read the file. {HOSTILE}",
         "tool_calls": [{"tool": "Read", "input": {"file_path": f"src/{HOSTILE}.py"}, "output": HOSTILE}]},
        {"role": "assistant", "content": f"The admin branch skips the check. {HOSTILE}"},
        {"role": "assistant", "content": "Removing the admin branch.",
         "tool_calls": [{"tool": "Bash", "input": {"command": f"sed -i '/admin/d' login.py # {HOSTILE}"}}]},
        {"role": "assistant", "content": f"Done. {HOSTILE}"}]}


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    path = make_project(n_items=2, annotation_schemes=SCHEMES, instance_display={"fields": [
        {"key": "text", "type": "text", "label": "Task"},
        {"key": "structured_turns", "type": "coding_trace", "label": "Agent session"}]})
    (path.parent / "data" / "reviews.json").write_text(json.dumps([item(0), item(1)]), encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


def stored(server: ServerProcess, expected: dict[tuple[str, str], Any], within: float = 15.0) -> None:
    """The stored marks (step id -> mark) reach ``expected``: each is saved as it is made."""
    answers_become(server.url, "ana", expected, within, by_turn=True)


def marks(page: Any, schema: str) -> dict[str, str]:
    return page.eval_on_selector_all(f".turn-slot[data-schema={schema}]", """l => Object.fromEntries(l.map(s =>
        [s.dataset.turn, (s.querySelector('input:checked') || {}).value || '']))""")


@pytest.mark.parametrize("width", [390, 1280])
def test_steps_are_marked_by_their_first_error_by_keyboard_and_kept(server: ServerProcess, page: Any,
                                                                   width: int) -> None:
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text))
    sign_in(page, server, "ana", width, first="s0")
    listed = "fieldset[data-schema=step_rewards] .turn-step"
    # The agent's four steps are listed with their whole text, numbered as the trace numbers them; the
    # user's task is no step.
    assert page.eval_on_selector_all(listed + " .turn-caption", "l => l.map(e => e.textContent)") == [
        "Step 1", "Step 2", "Step 3", "Step 4"]
    assert page.eval_on_selector_all(".coding-trace .trace-step > .step-head .step-kind", "l => l.map(e => e.textContent)") == [
        "User", "Step 1", "Step 2", "Step 3", "Step 4"]
    assert page.inner_text(listed + " >> nth=0 >> .turn-step-text") == f"I'll read the file. {HOSTILE}\n[Read] src/{HOSTILE}.py"
    assert page.inner_text("fieldset[data-schema=step_rewards] .turn-progress") == "0 of 4 steps answered"
    # The per-step question sits on the trace's own turns, none on the user's.
    assert page.eval_on_selector_all(".coding-trace .trace-step", """l => l.map(s =>
        [...s.querySelectorAll('.turn-slot')].map(t => t.dataset.schema))""") == [
        [], ["verdicts"], ["verdicts"], ["verdicts"], ["verdicts"]]

    # The keyboard: into step 3's marks, ↓ to Wrong (← and → are the page's: the item before and after):
    # steps 1 and 2 become correct, 3 and 4 wrong.
    page.focus(".turn-slot[data-schema=step_rewards][data-turn=t3] input[value=correct]")
    assert focused(page) == "First wrong step (step 3): correct"
    page.keyboard.press("ArrowDown")
    assert focused(page) == "First wrong step (step 3): incorrect"
    assert marks(page, "step_rewards") == {"t1": "correct", "t2": "correct", "t3": "incorrect", "t4": "incorrect"}
    stored(server, {("s0", "step_rewards"): {"t1": "correct", "t2": "correct", "t3": "incorrect", "t4": "incorrect"}})
    assert page.inner_text("fieldset[data-schema=step_rewards] .turn-progress") == "4 of 4 steps answered"
    # Step 4 marked correct: the first error cannot be before it, so every step before it is correct.
    page.focus(".turn-slot[data-schema=step_rewards][data-turn=t4] input[value=incorrect]")
    page.keyboard.press("ArrowUp")
    assert marks(page, "step_rewards") == {"t1": "correct", "t2": "correct", "t3": "correct", "t4": "correct"}
    # Step 2 is the first wrong one after all.
    page.focus(".turn-slot[data-schema=step_rewards][data-turn=t2] input[value=correct]")
    page.keyboard.press("ArrowDown")
    expected = {"t1": "correct", "t2": "incorrect", "t3": "incorrect", "t4": "incorrect"}
    assert marks(page, "step_rewards") == expected
    # On the trace: step 2 neutral, with the mouse; the item-level question with its key.
    page.click(".coding-trace .trace-step[data-step-index='2'] .turn-slot label:has-text('Neutral')")
    page.keyboard.press("2")
    stored(server, {("s0", "step_rewards"): expected, ("s0", "verdicts"): {"t2": "neutral"},
                    ("s0", "overall_quality"): "poor"})
    row = [r for r in stored_labels(server.url, "ana") if r["schema"] == "step_rewards"][0]
    assert row["label"]["t2"]["text"] == f"The admin branch skips the check. {HOSTILE}"

    # After a reload every mark is where it was made; the next item asks afresh.
    page.reload()
    page.wait_for_selector("#item-id:text('s0')")
    assert marks(page, "step_rewards") == expected and marks(page, "verdicts")["t2"] == "neutral"
    page.focus("#item-text")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#item-id:text('s1')")
    assert set(marks(page, "step_rewards").values()) == {""}
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('s0')")
    assert marks(page, "step_rewards") == expected

    # Reset all takes every mark away, and the answer with them.
    page.click("fieldset[data-schema=step_rewards] .turn-reset")
    assert set(marks(page, "step_rewards").values()) == {""}
    stored(server, {("s0", "verdicts"): {"t2": "neutral"}, ("s0", "overall_quality"): "poor"})

    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('#item-text script, #item-text img, #answers img').length") == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console


@pytest.fixture
def judged(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    """Upstream's trajectory-evaluation shape: each step judged, and a wrong one's error named."""
    path = make_project(n_items=1, annotation_schemes=[
        {"annotation_type": "trajectory_eval", "name": "step_evaluation", "description": "Evaluate each step",
         "steps_key": "steps", "step_text_key": "action", "correctness_options": ["correct", "incorrect"],
         "error_types": [{"name": "execution", "subtypes": ["wrong_tool", "wrong_args"]}],
         "severities": [{"name": "minor", "weight": -1}, {"name": "major", "weight": -5}], "max_score": 100}])
    steps = [{"action": f"search_web('weather {HOSTILE}')"}, {"action": "click_result(0)"}]
    (path.parent / "data" / "reviews.json").write_text(json.dumps([{"id": "j0", "text": "Weather", "steps": steps}]),
                                                       encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_wrong_step_is_judged_with_its_error_by_keyboard_and_kept(judged: ServerProcess, page: Any,
                                                                   width: int) -> None:
    sign_in(page, judged, "ana", width, first="j0")
    box = "fieldset[data-schema=step_evaluation]"
    assert page.inner_text(f"{box} .traj-score") == "Score: 100 / 100"
    second = f"{box} .turn-slot[data-turn=t1]"
    assert page.is_hidden(f"{second} .traj-error")
    page.focus(f"{second} input[value=correct]")
    assert focused(page) == "Evaluate each step (step 2): correct"
    page.keyboard.press("ArrowDown")  # incorrect: what went wrong is asked
    assert page.is_visible(f"{second} .traj-error")
    page.keyboard.press("Tab")
    assert focused(page) == "Evaluate each step (step 2): Error type"
    page.select_option(f"{second} .traj-type", "execution::wrong_tool")
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Evaluate each step (step 2): Severity: major"
    page.fill(f"{second} .traj-rationale", "Wrong result clicked")
    page.keyboard.press("Tab")  # the box is saved when it is left
    assert page.inner_text(f"{box} .traj-score") == "Score: 95 / 100"
    page.click(f"{box} .turn-slot[data-turn=t0] label:has-text('correct') >> nth=0")
    stored(judged, {("j0", "step_evaluation"): {"t0": {"correctness": "correct"}, "t1": {
        "correctness": "incorrect", "error_type": "execution", "error_subtype": "wrong_tool", "severity": "major",
        "rationale": "Wrong result clicked"}}})
    page.reload()
    page.wait_for_selector("#item-id:text('j0')")
    assert page.input_value(f"{second} .traj-type") == "execution::wrong_tool"
    assert page.input_value(f"{second} .traj-rationale") == "Wrong result clicked"
    assert page.is_checked(f"{second} input[value=major]") and page.is_visible(f"{second} .traj-error")
    assert page.inner_text(f"{box} .traj-score") == "Score: 95 / 100"
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
