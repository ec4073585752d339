"""sklearn-token-classification (issue 23): spans in the bundle, trained, scored and predicted by the
worker, as a run on any backend does it."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sklearn")

from potato.training.worker.program import run_job

from tests.harness.jobdirs import SENTIMENT, job_json, read_jsonl, read_result, write_bundle
from tests.harness.trainingdata import ENTITIES, sentences


def span_job(tmp_path: Path, n: int = 80, unlabelled: int = 5, **job: Any) -> Path:
    data = sentences(n)
    labels = []
    for item_id, _, spans in data[: n - unlabelled]:
        for user in ("ann", "bob"):
            labels.append({"item_id": item_id, "schema": "names", "label": spans, "user": user})
    labels.append({"item_id": data[0][0], "schema": "names", "label": [], "user": "cy"})  # a minority "none"
    holdout = [item_id for k, (item_id, _, _) in enumerate(data[: n - unlabelled]) if k % 5 == 0]
    return write_bundle(tmp_path, job_json("sklearn-token-classification", (ENTITIES,), **job),
                        [{"id": i, "text": t} for i, t, _ in data], labels, holdout)


def test_spans_train_score_on_the_holdout_and_come_back_as_scored_spans(tmp_path: Path) -> None:
    job_dir = span_job(tmp_path)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    result = read_result(job_dir)
    metrics = result["metrics"]
    assert metrics["names/n_holdout"] == 15 and metrics["names/n_train"] == 60
    assert metrics["names/holdout_f1"] >= 0.9
    assert metrics["names/PER/holdout_support"] == 30 and metrics["names/LOC/holdout_support"] == 15
    assert {"names/holdout_precision", "names/holdout_recall", "names/LOC/holdout_f1"} <= set(metrics)
    rows = {r["item_id"]: r for r in read_jsonl(job_dir / "predictions.jsonl")}
    assert len(rows) == 80
    text = dict((i, t) for i, t, _ in sentences(80))
    unseen = rows["s079"]  # never labelled: the model marks its names all the same
    marked = {(text["s079"][s["start"]:s["end"]], s["label"]) for s in unseen["label"]}
    expected = {(text["s079"][s["start"]:s["end"]], s["label"]) for s in sentences(80)[79][2]}
    assert marked == expected
    assert all(0.0 <= s["confidence"] <= 1.0 for s in unseen["label"]) and 0.0 < unseen["confidence"] <= 1.0
    with (job_dir / "artifacts" / "model.pkl").open("rb") as fh:
        model = pickle.load(fh)
    assert set(model["models"]) == {"names"}


def test_a_schema_without_any_span_yet_predicts_none_with_full_confidence(tmp_path: Path) -> None:
    data = sentences(20)
    labels = [{"item_id": i, "schema": "names", "label": [], "user": "ann"} for i, _, _ in data]
    job_dir = write_bundle(tmp_path, job_json("sklearn-token-classification", (ENTITIES,)),
                           [{"id": i, "text": t} for i, t, _ in data], labels, [data[0][0]])
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    rows = read_jsonl(job_dir / "predictions.jsonl")
    assert {(tuple(r["label"]), r["confidence"]) for r in rows} == {((), 1.0)}
    assert read_result(job_dir)["metrics"]["names/holdout_f1"] == 0.0  # nothing true, nothing found


def test_spans_one_word_cannot_carry_are_left_out_with_a_warning(tmp_path: Path) -> None:
    data = sentences(20)
    labels = []
    for item_id, _, spans in data:
        nested = spans + [{"start": 0, "end": 2, "label": "LOC"}]  # inside the first name: no tag of its own
        labels += [{"item_id": item_id, "schema": "names", "label": nested, "user": u} for u in ("ann", "bob")]
    job_dir = write_bundle(tmp_path, job_json("sklearn-token-classification", (ENTITIES,)),
                           [{"id": i, "text": t} for i, t, _ in data], labels, [data[0][0]])
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    warnings = [e["text"] for e in read_jsonl(job_dir / "events.jsonl") if e.get("type") == "warning"]
    assert ("Schema 'names': 19 span(s) inside or across another span (or on no word) were left out of training: "
            "one word carries one tag") in warnings


def test_a_span_past_the_items_text_is_a_bad_job_naming_it(tmp_path: Path) -> None:
    job_dir = write_bundle(tmp_path, job_json("sklearn-token-classification", (ENTITIES,)),
                           [{"id": "a", "text": "Ada met Alan."}],
                           [{"item_id": "a", "schema": "names", "user": "u",
                             "label": [{"start": 8, "end": 40, "label": "PER"}]}], [])
    assert run_job(job_dir) == 2
    assert "a span of schema 'names' on item 'a' ends at 40, past the item's text (13 characters)" in (
        read_result(job_dir)["message"])


def test_a_malformed_span_label_is_a_bad_job_naming_its_line(tmp_path: Path) -> None:
    job_dir = write_bundle(tmp_path, job_json("sklearn-token-classification", (ENTITIES,)),
                           [{"id": "a", "text": "Ada met Alan."}],
                           [{"item_id": "a", "schema": "names", "user": "u", "label": "PER"}], [])
    assert run_job(job_dir) == 2
    assert "labels.jsonl line 1: schema 'names' is a span scheme, so label must be" in read_result(job_dir)["message"]


def test_the_span_trainer_refuses_a_radio_schema_by_name(tmp_path: Path) -> None:
    job_dir = write_bundle(tmp_path, job_json("sklearn-token-classification", (SENTIMENT,)),
                           [{"id": "a", "text": "fine"}],
                           [{"item_id": "a", "schema": "sentiment", "label": "positive", "user": "u"}], [])
    assert run_job(job_dir) == 2
    assert "Trainer 'sklearn-token-classification' cannot learn radio schemas such as 'sentiment'; it supports: span" \
        in read_result(job_dir)["message"]
