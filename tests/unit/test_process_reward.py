"""Issue 45 (items 2 and 3): upstream's ``process_reward`` scheme, as its coding-agent-prm and
cot-process-reward examples configure it: each step of the item's list under ``steps_key`` marked
correct or wrong (neutral too, with ``allow_neutral`` in per_step mode). In ``first_error`` mode the
first wrong step makes every later one wrong, so a correct step after a wrong one is refused. A
step is named by its place (``t<index>``) and stored with its text; the user's turn is no step.
Upstream's export holds the marks as one JSON text of rewards (1, 0, -1) under the scheme's name,
and both exports import back as the same stored answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from potato.cli import cli
from potato.config import validate
from potato.display.turns import step_turns
from tests.conftest import ADMIN_KEY
from tests.harness.labelstore import annotator, exported, invoke as _run, stored_answers as _stored
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder

# The shape of upstream's coding-agent-prm data: a user's task, then the agent's turns and tool calls.
SESSION = [
    {"role": "user", "content": "Fix the login bypass in login.py", "tool_calls": []},
    {"role": "assistant", "content": "I'll read the file first.",
     "tool_calls": [{"tool": "Read", "input": {"file_path": "src/auth/login.py"}, "output": "def authenticate(): ..."}]},
    {"role": "assistant", "content": "The admin branch skips the password check.", "tool_calls": []},
    {"role": "assistant", "content": "Removing the admin branch.",
     "tool_calls": [{"tool": "Edit", "input": {"file_path": "src/auth/login.py", "old_string": "if admin:",
                                               "new_string": ""}}]},
    {"role": "assistant", "content": "Done; tests pass.", "tool_calls": [
        {"tool": "Bash", "input": {"command": "pytest -q"}, "output": "3 passed"}]},
]
PRM = {"annotation_type": "process_reward", "name": "step_rewards",
       "description": "Mark the first incorrect step (all subsequent auto-marked wrong)",
       "steps_key": "structured_turns", "mode": "first_error"}
PER_STEP = {"annotation_type": "process_reward", "name": "verdicts", "description": "Rate each step",
            "steps_key": "structured_turns", "mode": "per_step", "allow_neutral": True,
            "reward_labels": {"correct": "Valid", "incorrect": "Flawed"}}
QUALITY = {"annotation_type": "radio", "name": "overall_quality", "description": "Overall trace quality",
           "labels": ["good", "acceptable", "poor"]}
FIELDS = [{"key": "task_description", "type": "text", "label": "Task"},
          {"key": "structured_turns", "type": "coding_trace", "label": "Agent Session"}]
ITEMS = [{"id": "s1", "task_description": "Fix the login bypass", "structured_turns": SESSION},
         {"id": "s2", "task_description": "Nothing to do", "structured_turns": SESSION[:2]}]


def _project(root: Path, schemes: list[dict[str, Any]] | None = None) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "data" / "traces.jsonl").write_text("".join(json.dumps(i) + "\n" for i in ITEMS), encoding="utf-8")
    config = {"annotation_task_name": "PRM", "task_dir": ".", "data_files": ["data/traces.jsonl"],
              "item_properties": {"id_key": "id", "text_key": "task_description"},
              "output_annotation_dir": "annotation_output", "admin_api_key": ADMIN_KEY,
              "annotation_schemes": schemes or [PRM, PER_STEP, QUALITY], "instance_display": {"fields": FIELDS}}
    path = root / "config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    path.chmod(0o600)
    return path


def _report(schemes: list[dict[str, Any]], fields: list[dict[str, Any]] | None = None) -> Any:
    return validate(upstream(annotation_schemes=schemes, instance_display={"fields": fields or FIELDS}), CONFIG)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        yield path, client


def _label(client: Any, item_id: str, labels: dict[str, Any]) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "labels": labels})


# -- the steps -------------------------------------------------------------------------------------

def test_each_entry_is_a_step_named_by_its_place_with_its_words_and_the_tools_it_called() -> None:
    steps = step_turns(SESSION, "action")
    assert [(s.id, s.speaker) for s in steps] == [("t0", "user"), ("t1", "assistant"), ("t2", "assistant"),
                                                 ("t3", "assistant"), ("t4", "assistant")]
    assert steps[1].text == "I'll read the file first.\n[Read] src/auth/login.py"
    assert steps[4].text == "Done; tests pass.\n[Bash] pytest -q"
    # step_text_key names the text where the steps have it; a plain string is its own text.
    assert [s.text for s in step_turns([{"action": "click(#buy)", "content": "x"}, "Think."], "action")] == [
        "click(#buy)", "Think."]
    assert step_turns("not a list", "action") == [] and step_turns(None, "action") == []


# -- the config ------------------------------------------------------------------------------------

def test_upstreams_process_reward_schemes_validate_as_a_mark_on_each_step() -> None:
    report = _report([PRM, PER_STEP, QUALITY])
    assert report.errors == []
    prm, per_step = report.config.annotation_schemes[:2]
    assert prm.labels == ("correct", "incorrect") and prm.first_error
    assert [o.shown for o in prm.options] == ["Correct", "Wrong"]
    assert per_step.labels == ("correct", "neutral", "incorrect") and not per_step.first_error
    assert [o.shown for o in per_step.options] == ["Valid", "Neutral", "Flawed"]
    binding = prm.turns
    assert (binding.field, binding.steps_text, binding.placement) == ("structured_turns", "action", "list")
    assert (prm.training_type, prm.learnt_by_step) == ("radio", True)  # a step classifier learns it, step by step
    assert prm.step_mistakes == ("incorrect",)
    inline = _report([{**PRM, "inline_with_trace": True}])
    assert inline.errors == [] and inline.config.annotation_schemes[0].turns.placement == "inline"


def test_inline_steps_the_trace_does_not_draw_one_by_one_are_listed_with_a_warning() -> None:
    report = _report([{**PRM, "inline_with_trace": True}], [{"key": "structured_turns", "type": "agent_trace"}])
    assert report.errors == [] and report.config.annotation_schemes[0].turns.placement == "list"
    assert [w.message for w in report.warnings if "inline_with_trace" in w.path] == [
        "annotation_schemes[0].inline_with_trace: the agent_trace field 'structured_turns' does not draw one turn per "
        "step, so the steps are listed under the question instead; show 'structured_turns' in a field of type "
        "coding_trace, cot_trace, multi_agent_discussion, dialogue, or remove inline_with_trace"]


def test_a_wrong_process_reward_says_what_is_wrong_and_how_to_fix_it() -> None:
    def errors(**changes: Any) -> list[str]:
        return [issue.message for issue in _report([{**PRM, **changes}]).errors]

    assert errors(allow_neutral=True) == [
        "annotation_schemes[0].allow_neutral: applies only with mode: per_step (in first_error mode every step before "
        "the first wrong one is correct and every later one wrong); remove it or set mode: per_step"]
    assert errors(labels=["good", "bad"]) == [
        "annotation_schemes[0].labels: a process_reward scheme's answers are correct and incorrect (and neutral with "
        "allow_neutral); remove labels, and rename the buttons with reward_labels"]
    assert errors(mode="first_errors") == [
        "annotation_schemes[0].mode: 'first_errors' is not a valid mode (did you mean 'first_error'?); valid "
        "choices: first_error, per_step"]
    assert errors(reward_labels={"right": "Yes"})[0].startswith(
        "annotation_schemes[0].reward_labels.right: unknown key for reward_labels")
    assert errors(ai_prelabel=True) == [
        "annotation_schemes[0].ai_prelabel: 'ai_prelabel' is a Potato feature this server does not support: an outside "
        "LLM's suggested reward for each step; remove it or run that project on upstream Potato"]
    radio_errors = [i.message for i in _report([{**QUALITY, "steps_key": "structured_turns"}]).errors]
    assert radio_errors == ["annotation_schemes[0].steps_key: applies to process_reward, trajectory_eval, "
                            "failure_attribution, trajectory_edit, tool_call_review, handoff_review, multimodal_reasoning, "
                            "gui_trajectory, agent_scorecard, emergent_behavior and agent_interaction_graph schemes only; "
                            "remove it from this radio scheme"]


# -- answers ---------------------------------------------------------------------------------------

def test_the_page_lists_each_agent_step_with_its_whole_text(project: tuple[Path, Any]) -> None:
    _, client = project
    page = client.get("/annotate").get_data(as_text=True)
    assert 'data-turn-type="process_reward"' in page and 'data-first-error="1"' in page and "Reset all" in page
    slots = client.get("/api/item/1").get_json()["item"]["turn_slots"]
    assert slots["step_rewards"]["at"] == 1
    assert [(t["id"], t["caption"]) for t in slots["step_rewards"]["turns"]] == [
        ("t1", "I'll read the file first.\n[Read] src/auth/login.py"),
        ("t2", "The admin branch skips the password check."),
        ("t3", "Removing the admin branch.\n[Edit] src/auth/login.py"),
        ("t4", "Done; tests pass.\n[Bash] pytest -q")]  # the user's task (t0) is no step


def test_marks_are_stored_per_step_with_its_place_and_text(project: tuple[Path, Any]) -> None:
    path, client = project
    saved = _label(client, "s1", {"step_rewards": {"t3": "incorrect", "t1": "correct", "t2": "correct",
                                                   "t4": "incorrect"},
                                  "verdicts": {"t2": "neutral", "t4": "incorrect"}, "overall_quality": "poor"})
    assert saved.status_code == 200, saved.get_json()
    stored = _stored(path)
    assert list(stored[("s1", "step_rewards")]) == ["t1", "t2", "t3", "t4"]
    assert stored[("s1", "step_rewards")]["t3"] == {"value": "incorrect", "index": 3, "speaker": "assistant",
                                                    "text": "Removing the admin branch.\n[Edit] src/auth/login.py"}
    assert stored[("s1", "verdicts")]["t2"]["value"] == "neutral"


def test_a_correct_step_after_the_first_wrong_one_or_a_mark_on_the_task_is_refused_and_nothing_is_lost(
        project: tuple[Path, Any]) -> None:
    path, client = project
    assert _label(client, "s1", {"step_rewards": {"t1": "correct", "t2": "incorrect", "t3": "incorrect",
                                                  "t4": "incorrect"}}).status_code == 200
    late = _label(client, "s1", {"step_rewards": {"t1": "correct", "t2": "incorrect", "t3": "correct"}})
    assert late.status_code == 400
    assert late.get_json()["error"] == (
        "'step_rewards': step 't3' is marked correct after step 't2', the first wrong one; in first_error mode every "
        "step from the first wrong one on is incorrect")
    task = _label(client, "s1", {"step_rewards": {"t0": "correct"}})
    assert task.get_json()["error"] == ("'step_rewards': turn 't0' is not one this question is asked on in the steps "
                                        "under 'structured_turns' (its turns: t1, t2, t3, t4)")
    neutral = _label(client, "s1", {"step_rewards": {"t1": "neutral"}})
    assert neutral.get_json()["error"] == "'step_rewards': 'neutral' is not an answer for turn 't1' (valid: correct, incorrect)"
    assert [e["value"] for e in _stored(path)[("s1", "step_rewards")].values()] == [
        "correct", "incorrect", "incorrect", "incorrect"]


# -- export and import -----------------------------------------------------------------------------

def _annotate(client: Any) -> None:
    for item_id, labels in (("s1", {"step_rewards": {"t1": "correct", "t2": "correct", "t3": "incorrect",
                                                     "t4": "incorrect"},
                                    "verdicts": {"t2": "neutral", "t3": "correct"}, "overall_quality": "poor"}),
                            ("s2", {"verdicts": {"t1": "incorrect"}, "overall_quality": "good"})):
        assert _label(client, item_id, labels).status_code == 200


def test_upstreams_layout_holds_the_rewards_by_step_as_upstreams_page_writes_them(
        project: tuple[Path, Any], tmp_path: Path) -> None:
    path, client = project
    _annotate(client)
    assert _run("export", path, "--upstream-format", "jsonl", "-o", tmp_path / "up").exit_code == 0
    rows = [json.loads(line) for line in (tmp_path / "up" / "annotations.jsonl").read_text().splitlines()]
    labels = {row["instance_id"]: row["labels"] for row in rows}
    prm = json.loads(labels["s1"]["step_rewards"]["step_rewards"])
    assert prm["mode"] == "first_error"
    assert [(s["index"], s["reward"]) for s in prm["steps"]] == [(0, 0), (1, 1), (2, 1), (3, -1), (4, -1)]
    assert prm["steps"][1] == {"index": 1, "reward": 1, "source": "human", "verified": True}
    # With neutral an answer, an unmarked step is null, apart from a step judged neutral (0).
    verdicts = json.loads(labels["s1"]["verdicts"]["verdicts"])
    assert [(s["index"], s["reward"]) for s in verdicts["steps"]] == [(0, None), (1, None), (2, 0), (3, 1)]


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(project: tuple[Path, Any], tmp_path: Path,
                                                             fmt: str) -> None:
    path, client = project
    _annotate(client)
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh")
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)


def test_upstreams_own_record_with_ai_suggestions_imports_as_the_human_marks(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    steps = [{"index": 0, "reward": 0, "source": None, "verified": False},
             {"index": 1, "reward": 1, "source": "ai", "verified": True, "ai_reward": 1, "ai_reasoning": "fine",
              "confidence": 0.9},
             {"index": 2, "reward": -1, "source": "human", "verified": True, "ai_reward": 1}]
    record = {"instance_id": "s1", "user_id": "ann", "labels": {
        "step_rewards": {"step_rewards": json.dumps({"steps": steps, "mode": "first_error"})}}}
    source = tmp_path / "annotations.jsonl"
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    result = _run("import-labels", path, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert {k: v["value"] for k, v in _stored(path)[("s1", "step_rewards")].items()} == {
        "t1": "correct", "t2": "incorrect"}


def test_an_upstream_record_with_a_reward_of_the_wrong_shape_is_refused_with_the_line(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    steps = [{"index": 1, "reward": [1]}]
    record = {"instance_id": "s1", "user_id": "ann",
              "labels": {"step_rewards": {"step_rewards": json.dumps({"steps": steps, "mode": "first_error"})}}}
    source = tmp_path / "annotations.jsonl"
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["import-labels", str(path), str(source), "--user", "ann"])
    assert result.exit_code == 1
    assert f"{source}:1" in str(result.exception) and "is not an answer for turn 't1'" in str(result.exception)
    assert _stored(path) == {}
