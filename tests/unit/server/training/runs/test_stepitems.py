"""Issue 45, item 4: a question asked on each step, learnt as a step classifier. The bundle holds each
asked step as an item (the step first, the trace before it after), each step answer as a label on it,
and holds out whole traces; the worker scores steps and traces; predictions come back as one answer
per trace. Pure parts and the bundle as the worker reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from potato.config import load_config
from potato.labels import Label
from potato.items import load_items
from potato.project import Project
from potato.server.annotate import provenance
from potato.server.training.run_requests import label_summary
from potato.server.training.runs.bundle import build_bundle, job_spec, split_by_trace
from potato.server.training.runs.stepitems import StepQuestions
from potato.server.training.runs.writeback import schema_score, step_confidences
from potato.training.job.archive import extract_archive
from potato.training.job.labels import aggregate
from potato.training.job.spec import JobItem, read_holdout, read_items, read_job, read_labels
from potato.training.job.schemes import Scheme, SchemeType
from potato.training.job.tracesteps import STEP, first_error_found, split_step_id, step_id, step_text
from potato.training.worker.metrics import score_holdout, trace_scores
from tests.harness.agentsteps import STEPS, trace, trace_project, true_marks

SOURCE = f"{STEPS} (steps, text: action)"


def test_a_step_is_read_first_with_the_nearest_turns_before_it_up_to_the_budget() -> None:
    assert step_text("assistant: rm -rf /", [], 100) == "assistant: rm -rf /"
    assert step_text("c", ["a" * 10, "b" * 10], 100) == "c\n\nBefore it:\n" + "b" * 10 + "\n\n" + "a" * 10
    # The budget keeps the nearest turn whole where it fits and cuts the next one short.
    assert step_text("c", ["a" * 10, "b" * 10], 15) == "c\n\nBefore it:\n" + "b" * 10 + "\n\n" + "aaaaa..."
    assert step_text("c", ["a" * 10], 0) == "c"


def test_a_step_items_id_names_its_trace_source_and_step() -> None:
    sid = step_id("t007", SOURCE, "t3")
    assert split_step_id(sid) == ("t007", SOURCE, "t3") and STEP not in "t007"
    assert split_step_id("t007") is None


def test_the_first_error_is_found_exactly_or_not_at_all() -> None:
    truth = {"a": {1: "correct", 2: "incorrect", 3: "incorrect"}, "b": {1: "correct", 2: "correct"}, "c": {}}
    # a's first error found (later steps do not matter), b's "no error" found.
    same = {"a": {1: "correct", 2: "incorrect", 3: "correct"}, "b": {1: "correct", 2: "correct"}}
    assert first_error_found(truth, same, ("incorrect",)) == (1.0, 2)
    late = {"a": {1: "correct", 2: "correct", 3: "incorrect"}, "b": {1: "incorrect", 2: "correct"}}
    assert first_error_found(truth, late, ("incorrect",)) == (0.0, 2)
    assert first_error_found({}, {}, ("incorrect",)) == (0.0, 0)


def test_the_worker_scores_a_step_question_by_step_and_by_trace() -> None:
    spec = Scheme(SchemeType.RADIO, "prm", labels=("correct", "incorrect"), per_step=True, wrong_labels=("incorrect",))
    items = [JobItem(step_id(t, SOURCE, f"t{p}"), "x", {"trace": t, "place": p}) for t in ("a", "b") for p in (1, 2)]
    ids = [i.id for i in items]
    truth = {ids[0]: {"prm": "correct"}, ids[1]: {"prm": "incorrect"}, ids[2]: {"prm": "incorrect"},
             ids[3]: {"prm": "incorrect"}}
    said = {ids[0]: {"prm": ("correct", 0.9)}, ids[1]: {"prm": ("incorrect", 0.8)},
            ids[2]: {"prm": ("correct", 0.6)}, ids[3]: {"prm": ("incorrect", 0.7)}}
    steps = score_holdout([spec], truth, said, ids)
    assert steps["prm/holdout_accuracy"] == 0.75 and steps["prm/n_holdout"] == 4
    traces = trace_scores([spec], items, truth, said, ids)
    assert traces == {"prm/n_holdout_traces": 2, "prm/holdout_first_error_exact": 0.5}
    # Only held-out traces are scored; a question whose answers name no mistake has no trace score.
    assert trace_scores([spec], items, truth, said, ids[:2]) == {"prm/n_holdout_traces": 1,
                                                                  "prm/holdout_first_error_exact": 1.0}
    plain = Scheme(SchemeType.RADIO, "prm", labels=("1", "2"), per_step=True)
    assert trace_scores([plain], items, truth, said, ids) == {}


def test_a_trace_is_held_out_whole_with_every_step() -> None:
    rows = [{"item_id": step_id(f"t{n:03d}", SOURCE, f"t{k}")} for n in range(20) for k in (1, 2, 3)]
    rows += [{"item_id": f"t{n:03d}"} for n in range(20)]  # an item-level question on the same traces
    held = split_by_trace(rows, 0.2, 0)
    traces = {i for i in held if split_step_id(i) is None}
    assert len(traces) == 4
    assert {(split_step_id(i) or (i,))[0] for i in held} == traces
    assert sum(1 for i in held if split_step_id(i)) == 3 * len(traces)
    # Without steps, the split is the items' split as it always was.
    assert split_by_trace([{"item_id": f"t{n:03d}"} for n in range(20)], 0.2, 0) == sorted(traces)


@pytest.fixture
def project(make_project: Callable[..., Path]) -> Any:
    path = trace_project(make_project, n=10)
    config = load_config(path)
    return config, load_items(config.data_files, config.item_properties.id_key, config.item_properties.text_key)


def test_the_bundle_holds_each_asked_step_as_an_item_and_each_step_answer_as_its_label(project: Any,
                                                                                       tmp_path: Path) -> None:
    config, items = project
    labels = [Label("gold", f"t{n:03d}", "step_rewards", {t: {"value": v, "index": int(t[1:]), "text": "..."}
                                                          for t, v in true_marks(n).items()}) for n in range(10)]
    steps = StepQuestions.of(config, ["step_rewards"])
    job = job_spec(config, "run-1", "noop", ["step_rewards"], {})
    assert job["schemes"][0] == {"name": "step_rewards", "annotation_type": "radio", "labels": ["correct", "incorrect"],
                                 "description": "Mark the first wrong step", "per_step": True, "mistakes": ["incorrect"]}
    info = build_bundle(tmp_path / "b.tar.gz", job, items, labels, 0.2, steps=steps)
    extract_archive(info.path, tmp_path / "job")
    spec = read_job(tmp_path / "job")
    assert spec.schemas[0].per_step and spec.schemas[0].wrong_labels == ("incorrect",)
    read = {i.id: i for i in read_items(tmp_path / "job")}
    # The ten traces, then their four agent steps each (the user's task is no step).
    assert len(read) == 10 + 40
    step = read[step_id("t000", SOURCE, "t2")]
    assert step.fields == {"trace": "t000", "place": 2, "step": "t2"}
    session = trace(0)[STEPS]
    assert step.text == (f"assistant: {session[2]['content']}\n\nBefore it:\nassistant: {session[1]['content']}"
                         f"\n\nuser: {session[0]['content']}")
    targets = aggregate(read_labels(tmp_path / "job", spec), spec.schemas)
    assert targets[step_id("t000", SOURCE, "t2")] == {"step_rewards": "incorrect"}
    assert len(targets) == 40
    held = read_holdout(tmp_path / "job")
    held_traces = {i for i in held if split_step_id(i) is None}
    assert held_traces and all(step_id(t, SOURCE, f"t{k}") in held for t in held_traces for k in range(1, 5))
    assert (info.n_labelled_items, info.n_holdout, info.n_labels) == (10, len(held_traces), 40)


def test_predictions_for_steps_come_back_as_one_answer_per_trace(project: Any) -> None:
    config, items = project
    steps = StepQuestions.of(config, ["step_rewards"])
    rows = [{"item_id": step_id("t001", SOURCE, t), "schema": "step_rewards", "label": label, "confidence": c}
            for t, label, c in (("t1", "correct", 0.9), ("t2", "correct", 0.6), ("t3", "incorrect", 0.8),
                                ("t4", "correct", 0.7))]
    rows.append({"item_id": "t001", "schema": "other", "label": "x", "confidence": 1.0})  # an item's own line
    rows.append({"item_id": step_id("gone", SOURCE, "t1"), "schema": "step_rewards", "label": "correct",
                 "confidence": 0.5})  # a trace no longer in the project
    out = list(steps.suggestions(rows, items))
    assert out[0] == {"item_id": "t001", "schema": "other", "label": "x", "confidence": 1.0}
    joined = out[1]
    # first_error: the model's first wrong step (t3) makes every later one wrong too, as an answer must be.
    assert joined["label"] == {"t1": "correct", "t2": "correct", "t3": "incorrect", "t4": "incorrect"}
    assert joined["steps"] == {"t1": 0.9, "t2": 0.6, "t3": 0.8, "t4": 0.7}
    assert joined["confidence"] == pytest.approx(0.75)
    assert len(out) == 2
    scheme = config.scheme("step_rewards")
    assert scheme.accepts(joined["label"])
    assert json.loads(step_confidences(joined["steps"], joined["label"]) or "{}") == joined["steps"]
    # Beside the suggestions, the score is the step classifier's own accuracy on held-out steps.
    assert schema_score({"holdout_accuracy": 0.5, "step_rewards/holdout_accuracy": 0.9}, scheme) == 0.9


def test_an_accepted_suggestion_is_the_models_only_when_every_step_is_as_suggested() -> None:
    shown = {"run_id": "r1", "label": {"t1": "correct", "t2": "incorrect"}}
    stored = {"t1": {"value": "correct", "index": 1, "text": "a"}, "t2": {"value": "incorrect", "index": 2, "text": "b"}}
    assert provenance(stored, {}, shown, "r1", spans=False, turns=True)[1]["source"].value == "suggestion"
    edited = {**stored, "t2": {"value": "correct", "index": 2, "text": "b"}}
    assert provenance(edited, {}, shown, "r1", spans=False, turns=True)[1]["source"].value == "human"


def test_the_training_page_counts_a_step_questions_labelled_steps(make_project: Callable[..., Path]) -> None:
    project = Project.open(load_config(trace_project(make_project, n=10)))
    project.labels.save([Label("gold", f"t{n:03d}", "step_rewards", {t: {"value": v, "index": int(t[1:]), "text": "."}
                                                                     for t, v in true_marks(n).items()})
                         for n in range(5)])
    summary = label_summary(project)["step_rewards"]
    # Traces 0-4 go wrong at agent steps 2, 3, none, 4 and 1: 10 of their 20 steps are wrong.
    assert (summary["kind"], summary["kind_of_items"], summary["items"]) == ("radio", "steps", 20)
    assert dict(summary["classes"]) == {"correct": 10, "incorrect": 10}
