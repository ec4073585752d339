"""Issue 45 (item 1) in a real browser, under gunicorn: an item holding an agent's trace, an
evaluation trace and a coding agent's trace, every string of them hostile markup. Nothing in them
runs; each is drawn as upstream's examples mean it (kinds of steps, three panes, tool calls for
what they did); long outputs fold away; the keyboard walks the steps; it fits a phone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.pages import focused
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
FIELDS = [{"key": "text", "type": "text", "label": "Task"},
          {"key": "steps", "type": "agent_trace", "label": "Agents",
           "display_options": {"speaker_key": "agent", "collapse_observations": True}},
          {"key": "trace", "type": "eval_trace", "label": "Evaluation", "display_options": {"max_output_lines": 5}},
          {"key": "turns", "type": "coding_trace", "label": "Coding agent", "display_options": {"max_output_lines": 10}},
          {"key": "talk", "type": "multi_agent_discussion", "label": "Debate", "display_options": {"show_turn_numbers": True}},
          {"key": "cot", "type": "cot_trace", "label": "Reasoning", "display_options": {"clamp_lines": 3}}]
LONG = "\n".join(f"row {n} {HOSTILE}" for n in range(30))


def item(n: int) -> dict[str, Any]:
    return {
        "id": f"t{n}", "text": f"Task {n}: book a flight",
        "steps": [{"agent": "Planner", "thought": f"I need to plan {HOSTILE}", "action": {"tool": "search",
                                                                                       "params": {"q": HOSTILE}},
                   "result": f"found {HOSTILE}"},
                  {"agent": "Booker", "thought": "Book it.", "action": "book(flight=1)", "observation": "Booked."}],
        "trace": [{"speaker": "Agent (Thought)", "text": f"Search first {HOSTILE}"},
                  {"speaker": "Agent (Action)", "text": f"web_search(query='{HOSTILE}')"},
                  {"speaker": "Environment", "text": LONG},
                  {"speaker": "Agent (Final Answer)", "text": f"Flight 1 {HOSTILE}"}],
        "turns": [{"role": "user", "content": f"Fix the port {HOSTILE}"},
                  {"role": "assistant", "content": "Reading the config.",
                   "tool_calls": [{"tool": "Read", "input": {"file_path": "src/config.py"}, "output": LONG},
                                  {"tool": "Edit", "input": {"file_path": "src/config.py", "old_string": "PORT = 80",
                                                             "new_string": f"PORT = 8080 # {HOSTILE}"}, "output": "ok"},
                                  {"tool": "Bash", "input": {"command": "pytest -q"}, "output": f"3 passed {HOSTILE}"}]}],
        "talk": [{"speaker": "moderator", "text": f"Pro opens {HOSTILE}", "addressee": "pro", "turn_id": "a"},
                 {"speaker": "pro", "text": "Artifacts make science.", "role": "debater", "reply_to": "a"},
                 {"speaker": "con", "text": f"They cost too much {HOSTILE}"},
                 {"speaker": "pro", "text": "Not really."}],
        "cot": [{"index": 0, "text": f"Step 1: add {HOSTILE}", "type": "calculation"},
                {"index": 1, "text": LONG, "type": "verification"}],
    }


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    path = make_project(n_items=2, instance_display={"fields": FIELDS})
    (path.parent / "data" / "reviews.json").write_text(json.dumps([item(0), item(1)]), encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_traces_show_what_the_agent_did_and_nothing_in_them_runs(server: ServerProcess, page: Any, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text))
    page.goto(server.url + "/")
    page.fill("#name", "ana")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('t0')")

    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('#item-text script, #item-text img').length") == 0
    assert page.evaluate("""[...document.querySelectorAll('#item-text *')].some(
        e => [...e.attributes].some(a => a.name.startsWith('on')))""") is False
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    # The agents' steps: each marked with its kind and speaker, thoughts and actions numbered.
    agent = ".agent-trace"
    assert page.inner_text(f"{agent} .trace-summary") == "6 steps: 2 thoughts, 2 actions, 2 observations"
    heads = page.eval_on_selector_all(f"{agent} .step-kind", "l => l.map(e => e.textContent)")
    assert heads == ["Planner (Thought)", "Planner (Action)", "Environment", "Booker (Thought)", "Booker (Action)",
                     "Environment"]
    assert page.eval_on_selector_all(f"{agent} .trace-step", "l => l.map(e => e.className)")[2].endswith(
        "step-observation")
    assert f"I need to plan {HOSTILE}" in page.inner_text(f"{agent} .step-thought")
    assert page.inner_text(f"{agent} .step-action .step-tool") == "search"
    # collapse_observations: what came back is a click (or Enter) away
    fold = f"{agent} .step-observation details"
    assert page.eval_on_selector(fold, "d => d.open") is False
    page.focus(f"{fold} summary")
    page.keyboard.press("Enter")
    assert page.eval_on_selector(fold, "d => d.open") is True
    assert f"found {HOSTILE}" in page.inner_text(fold)

    # The keyboard walks the steps, and the item stays the one shown.
    page.focus(f"{agent} .trace-step")
    assert focused(page) == "Step 1 of 6"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Step 3 of 6"
    page.keyboard.press("End")
    assert focused(page) == "Step 6 of 6"
    page.keyboard.press("ArrowUp")
    assert focused(page) == "Step 5 of 6"
    page.keyboard.press("Home")
    assert focused(page) == "Step 1 of 6"
    assert page.inner_text("#item-id") == "t0"

    # The evaluation: reasoning, calls with what they returned (long output folded), the answer.
    panes = page.eval_on_selector_all(".eval-trace .trace-pane h4", "l => l.map(e => e.textContent)")
    assert panes == ["Reasoning", "Function Calls", "Final Answer"]
    assert page.inner_text(".eval-trace .pane-2 .step-text") == f"Flight 1 {HOSTILE}"
    assert page.inner_text(".eval-trace .pane-1 .step-kind") == "web_search"
    result = ".eval-trace .pane-1 details"
    assert page.inner_text(f"{result} summary") == "Result (30 lines)"
    assert page.eval_on_selector(result, "d => d.open") is False
    page.click(".eval-trace .pane-1 .trace-step")  # link_steps: the call's group is lit in every pane
    assert page.eval_on_selector_all(".eval-trace .linked", "l => l.map(e => e.closest('.trace-pane').className)") == [
        "trace-pane pane-0", "trace-pane pane-1"]

    # The coding agent: the user's request, the file read (folded), the edit as lines out and in, the shell.
    coding = ".coding-trace"
    assert page.inner_text(f"{coding} .turn-user .step-text") == f"Fix the port {HOSTILE}"
    assert page.inner_text(f"{coding} .trace-files summary") == "Files (1)"
    assert page.inner_text(f"{coding} .tool-read summary") == "File contents (30 lines)"
    assert page.eval_on_selector_all(f"{coding} .diff span", "l => l.map(e => e.textContent)") == [
        "- PORT = 80\n", f"+ PORT = 8080 # {HOSTILE}\n"]
    assert page.inner_text(f"{coding} .terminal-command") == "$ pytest -q"
    assert page.inner_text(f"{coding} pre.terminal") == f"3 passed {HOSTILE}"

    # The debate: numbered turns, each agent's colour kept, replies set in, an agent's turns hidden and back.
    talk = ".discussion"
    assert page.eval_on_selector_all(f"{talk} .step-kind", "l => l.map(e => e.textContent)") == [
        "moderator", "pro", "con", "pro"]
    classes = page.eval_on_selector_all(f"{talk} .trace-step", "l => l.map(e => e.className)")
    assert classes[1] == classes[3].replace(" reply", "") + " reply" and "speaker-1" in classes[3]
    assert page.inner_text(f"{talk} .step-to") == "→ pro" and page.inner_text(f"{talk} .step-number") == "[1]"
    page.click(f"{talk} .legend-chip:text('pro')")
    assert page.eval_on_selector_all(f"{talk} .trace-step", "l => l.map(e => e.hidden)") == [False, True, False, True]
    page.click(f"{talk} .legend-chip:text('pro')")
    assert page.eval_on_selector_all(f"{talk} .trace-step", "l => l.map(e => e.hidden)") == [False] * 4
    # The chain of thought: a long step shows its first lines and folds the rest.
    cot = ".cot-trace"
    assert page.eval_on_selector_all(f"{cot} .step-kind", "l => l.map(e => e.textContent)") == [
        "Calculation", "Verification"]
    assert page.inner_text(f"{cot} details summary") == "Show 27 more lines"
    assert page.inner_text(f"{cot} .trace-step >> nth=1").startswith("Step 2")

    page.keyboard.press("ArrowRight")  # from a step, the page's own keys still go to the next item
    page.wait_for_selector("#item-id:text('t1')")
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console
