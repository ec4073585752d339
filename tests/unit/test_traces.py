"""Issue 45 (item 1): agent traces read from items as upstream's examples write them (pure). The
shapes here are taken from upstream's agent-traces examples: a ReAct turn per step, speaker and
text pairs, step_type with content, a coding agent's turns with tool calls and content blocks."""

from __future__ import annotations

from typing import Any

from potato.config import validate
from potato.display.fields import field_payload, field_types
from potato.display.traces import coding_trace, cot_trace, discussion, eval_trace, trace_steps, trace_text
from tests.harness.upstream import upstream

REACT = [{"agent": "Researcher", "thought": "I need to find recent studies.",
          "action": {"tool": "search", "params": {"q": "remote work"}}, "result": "Found 12 studies."},
         {"agent": "Writer", "thought": "Summarise them.", "action": "write_draft()", "observation": "Draft saved."}]
SPEAKERS = [{"speaker": "Assistant", "text": "I'll look it up.", "step_type": "thought"},
            {"speaker": "Agent (Action)", "text": "search(query=\"Reykjavik\")", "tool": "search", "turn_id": "t7"},
            {"speaker": "Environment", "text": "About 139,000 people.", "timestamp": "12:00:01"},
            {"speaker": "Agent (Final Answer)", "text": "About 139,000."}]


def kinds(steps: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(s["kind"], s["text"]) for s in steps]


def test_a_react_turn_is_a_thought_an_action_and_what_came_back_none_dropped() -> None:
    steps = trace_steps(REACT, speaker_key="agent")
    assert kinds(steps) == [("thought", "I need to find recent studies."), ("action", "search(q='remote work')"),
                            ("observation", "Found 12 studies."),  # upstream's reader dropped a step's result
                            ("thought", "Summarise them."), ("action", "write_draft()"),
                            ("observation", "Draft saved.")]
    assert steps[0]["speaker"] == "Researcher (Thought)" and steps[1]["tool"] == "search"


def test_speaker_and_text_steps_take_their_kind_from_step_type_or_the_speakers_name() -> None:
    steps = trace_steps(SPEAKERS)
    assert [s["kind"] for s in steps] == ["thought", "action", "observation", "observation"]
    assert steps[1]["turn_id"] == "t7" and steps[1]["tool"] == "search" and steps[2]["timestamp"] == "12:00:01"
    custom = trace_steps([{"who": "Planner", "says": "Plan: book a flight"}], speaker_key="who", text_key="says")
    assert kinds(custom) == [("observation", "Plan: book a flight")] and custom[0]["speaker"] == "Planner"


def test_strings_and_unknown_shapes_are_shown_never_lost() -> None:
    assert kinds(trace_steps(["I need to check the docs", "open('a.txt')", "It printed 3"])) == [
        ("thought", "I need to check the docs"), ("action", "open('a.txt')"), ("observation", "It printed 3")]
    odd = trace_steps([{"weird": 1}, 42])
    assert [s["text"] for s in odd] == ['{\n  "weird": 1\n}', "42"]
    assert trace_steps({"steps": ["a"]}) == trace_steps(["a"]) and trace_steps(None) == []


def test_an_agent_trace_numbers_thoughts_and_actions_and_counts_the_kinds() -> None:
    payload = field_payload("agent_trace", "Trace", SPEAKERS, {"show_timestamps": True}, "/media/")
    assert [s.get("number") for s in payload["steps"]] == [1, 2, None, None]
    assert payload["summary"] == {"steps": 4, "thought": 1, "action": 1, "observation": 2}
    assert payload["steps"][2]["timestamp"] == "12:00:01"
    quiet = field_payload("agent_trace", "Trace", SPEAKERS, {"show_step_numbers": False, "show_summary": False},
                          "/media/")
    assert quiet["summary"] is None and not any("number" in s or "timestamp" in s for s in quiet["steps"])


def test_a_screenshot_is_shown_from_the_media_folder_or_named_when_it_cannot_be() -> None:
    steps = [{"speaker": "Agent (Action)", "text": "click()", "screenshot": "shots/1 a.png"},
             {"speaker": "Agent (Action)", "text": "click()", "screenshot": "../../etc/passwd"},
             {"speaker": "Agent (Action)", "text": "click()", "screenshot": "javascript:alert(1)"}]
    shown = field_payload("agent_trace", "Trace", steps, {}, "/media/")["steps"]
    assert shown[0]["screenshot"] == {"src": "/media/shots/1%20a.png", "name": "shots/1 a.png"}
    assert shown[1]["screenshot"] == {"name": "../../etc/passwd"} and "src" not in shown[2]["screenshot"]
    assert "screenshot" not in field_payload("agent_trace", "T", steps, {"show_screenshots": False}, "/m/")["steps"][0]


def test_an_eval_trace_puts_reasoning_calls_with_their_results_and_the_answer_in_three_panes() -> None:
    steps = [{"speaker": "Agent (Thought)", "text": "Find a recipe."},
             {"speaker": "Agent (Action)", "text": "web_search(query='lasagna')"},
             {"speaker": "Environment", "text": "10 results\n" + "line\n" * 30},
             {"speaker": "Agent (Thought)", "text": "Pick the best."},
             {"speaker": "Agent (Action)", "text": "open(url=1)"},
             {"speaker": "Agent (Final Answer)", "text": "Here it is."}]
    out = eval_trace(steps, {"pane_labels": ["Thinking"], "max_output_lines": 5}, "", "/media/")
    assert out["panes"] == ["Thinking", "Function Calls", "Final Answer"] and out["answer"] == "Here it is."
    assert [[r["text"] for r in g["reasoning"]] for g in out["groups"]] == [["Find a recipe."], ["Pick the best."]]
    assert [[(c["name"], len(c["results"])) for c in g["calls"]] for g in out["groups"]] == [[("web_search", 1)],
                                                                                             [("open", 0)]]
    assert out["max_lines"] == 5 and eval_trace(steps, {"collapse_long_outputs": False}, "", "")["max_lines"] == 0
    no_answer = eval_trace(["I should look", "look()"], {}, "", "")
    assert no_answer["answer"] == "look()"  # the last action stands for the answer, as upstream reads it


def test_a_coding_trace_shows_each_tool_call_for_what_it_did() -> None:
    turns = [{"role": "user", "content": "Fix the port."},
             {"role": "assistant", "content": "Reading the config.",
              "tool_calls": [{"tool": "Read", "input": {"file_path": "src/config.py"}, "output": "PORT = 80\n"},
                             {"tool": "Edit", "input": {"file_path": "src/config.py", "old_string": "PORT = 80",
                                                        "new_string": "PORT = 8080"}, "output": "ok"},
                             {"tool": "Bash", "input": {"command": "pytest -q"}, "output": "3 passed"},
                             {"tool": "WebFetch", "input": {"url": "https://x"}, "output": "<html>"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "Writing a test."},
                                               {"type": "tool_use", "name": "Write",
                                                "input": {"file_path": "tests/test_port.py", "content": "def t(): pass"}}]}]
    out = coding_trace(turns, {}, "", "")
    user, first, second = out["turns"]
    assert user == {"role": "user", "text": "Fix the port.", "calls": []} and first["number"] == 1
    read, edit, bash, other = first["calls"]
    assert (read["kind"], read["file"], read["output"]) == ("read", "src/config.py", "PORT = 80\n")
    assert edit["diff"] == [["-", "PORT = 80"], ["+", "PORT = 8080"]]
    assert (bash["kind"], bash["command"], bash["output"]) == ("bash", "pytest -q", "3 passed")
    assert other["kind"] == "generic" and '"url": "https://x"' in other["input"]
    assert second["text"] == "Writing a test." and second["calls"][0]["content"] == "def t(): pass"
    assert out["files"] == [{"path": "src/config.py", "ops": "RE"}, {"path": "tests/test_port.py", "ops": "W"}]
    assert out["max_lines"] == 50
    plain = coding_trace(turns, {"show_file_tree": False, "show_reasoning": False, "show_step_numbers": False}, "", "")
    assert plain["files"] == [] and all(t["text"] == "" for t in plain["turns"][1:])
    assert not any("number" in t for t in plain["turns"])


def test_a_trace_as_text_is_one_step_per_line() -> None:
    assert trace_text(SPEAKERS[:2], {}) == "Assistant: I'll look it up.\nAgent (Action): search(query=\"Reykjavik\")"


def test_trace_fields_validate_with_a_sub_agent_tree(tmp_path: Any) -> None:
    assert {"agent_trace", "eval_trace", "coding_trace"} <= set(field_types())
    fields = [{"key": "text", "type": "text"},
              {"key": "steps", "type": "agent_trace", "display_options": {"speaker_key": "agent", "show_run_tree": True}}]
    report = validate(upstream(instance_display={"fields": fields}), tmp_path / "c.yaml")
    assert report.errors == []  # the tree itself: tests/unit/test_run_tree.py


def test_a_discussion_keeps_each_agents_colour_and_sets_replies_in() -> None:
    turns = [{"speaker": "moderator", "text": "Pro opens.", "addressee": "pro", "turn_id": "t1"},
             {"speaker": "pro", "text": "Yes.", "agent_id": "pro", "role": "debater", "reply_to": "t1"},
             {"speaker": "con", "text": "No."}, {"speaker": "pro", "text": "Still yes.", "agent_id": "pro"},
             {"speaker": "Environment", "text": "Timer: 1 minute."}]
    out = discussion(turns, {"show_turn_numbers": True, "collapse_environment": True}, "", "")
    assert out["legend"] == ["moderator", "pro", "con", "Environment"]
    assert [t["colour"] for t in out["turns"]] == [0, 1, 2, 1, 3]
    assert out["turns"][0]["addressee"] == "pro" and out["turns"][1]["role"] == "debater" and out["turns"][1]["reply"]
    assert [t["number"] for t in out["turns"]] == [1, 2, 3, 4, 5] and [t["fold"] for t in out["turns"]][-1] is True
    quiet = discussion(turns, {"show_legend": False, "show_addressees": False, "thread_replies": False}, "", "")
    assert quiet["legend"] == [] and "addressee" not in quiet["turns"][0] and "reply" not in quiet["turns"][1]
    assert [t["speaker"] for t in discussion("a: hi\nb: yo", {}, "", "")["turns"]] == ["a", "b"]


def test_a_chain_of_thought_reads_upstreams_segments_or_any_trace_and_folds_long_steps() -> None:
    segments = [{"index": 0, "text": "First I add.", "type": "calculation"}, {"index": 1, "text": "l\n" * 20}]
    out = cot_trace(segments, {"clamp_lines": 4}, "", "")
    assert [(s["label"], s["text"][:12]) for s in out["steps"]] == [("Calculation", "First I add."), ("Thought", "l\nl\nl\nl\nl\nl\n")]
    assert out["max_lines"] == 4 and out["numbered"]
    assert cot_trace(segments, {"collapse_long_steps": False, "show_types": False}, "", "")["max_lines"] == 0
    assert [s["label"] for s in cot_trace(SPEAKERS[:2], {}, "", "")["steps"]] == ["Assistant", "Agent (Action)"]
