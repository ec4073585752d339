"""sklearn-text-classification: each model shape (binary, multinomial, multiselect, constant) and its files."""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sklearn")

from potato.training.worker.program import run_job

from tests.harness.jobdirs import SENTIMENT, job_json, read_jsonl, read_result, review_job, write_bundle

TOPICS = {
    "sports": ["match", "goal", "team", "coach", "league"],
    "politics": ["vote", "senate", "policy", "minister", "election"],
    "science": ["atom", "physics", "experiment", "theory", "cell"],
}
FILLER = ["the", "a", "today", "report", "says", "new", "big", "story", "about", "on"]


def topic_texts(n: int, seed: int = 0) -> list[dict[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        topic = sorted(TOPICS)[i % 3]
        words = rng.sample(FILLER, 5) + rng.sample(TOPICS[topic], 2)
        rng.shuffle(words)
        out.append({"id": f"t{i}", "text": " ".join(words), "topic": topic})
    return out


def test_binary_and_multiselect(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "sklearn-text-classification", n=60)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    metrics = read_result(job_dir)["metrics"]
    assert metrics["sentiment/holdout_accuracy"] >= 0.8
    assert metrics["aspects/holdout_accuracy"] >= 0.8
    with (job_dir / "artifacts" / "model.pkl").open("rb") as fh:
        model = pickle.load(fh)
    x = model["tfidf"].transform(model["vectorizer"].transform(["The item 99 works perfectly."]))
    assert model["models"]["sentiment"].predict(x)[0] == "positive"
    assert set(model["models"]["aspects"]) == {"price", "quality", "delivery"}


def test_multiclass_and_a_constant_schema(tmp_path: Path) -> None:
    topic = {"name": "topic", "annotation_type": "radio", "labels": ["sports", "politics", "science"]}
    rows = topic_texts(150)
    labels: list[dict[str, Any]] = []
    for row in rows:
        labels.append({"item_id": row["id"], "schema": "topic", "label": row["topic"], "user": "u"})
        labels.append({"item_id": row["id"], "schema": "sentiment", "label": "positive", "user": "u"})
    job = job_json("sklearn-text-classification", (topic, SENTIMENT), {"ngram_max": 1, "C": 10})
    job_dir = write_bundle(tmp_path, job, [{"id": r["id"], "text": r["text"]} for r in rows], labels,
                           [r["id"] for r in rows[::4]])
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    metrics = read_result(job_dir)["metrics"]
    assert metrics["topic/holdout_accuracy"] >= 0.9
    assert metrics["sentiment/holdout_accuracy"] == 1.0
    sentiment = [r for r in read_jsonl(job_dir / "predictions.jsonl") if r["schema"] == "sentiment"]
    assert {(r["label"], r["confidence"]) for r in sentiment} == {("positive", 1.0)}


def test_cancel_between_schemas(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "sklearn-text-classification")
    assert run_job(job_dir, stop=lambda: True) == 143  # type: ignore[arg-type]
    assert read_result(job_dir)["status"] == "cancelled"
