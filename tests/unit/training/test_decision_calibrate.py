"""decision-calibrate: Platt/temperature scaling of a previous run's confidences (pure stdlib)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from potato.training.trainers.calibration_maths import fit_scaling, logit, sigmoid
from potato.training.worker.program import run_job

from tests.harness.jobdirs import SENTIMENT, job_json, pack_bundle, read_jsonl, read_result, write_bundle


def test_fit_scaling_recovers_a_known_miscalibration() -> None:
    rng = random.Random(1)
    confidences, correct = [], []
    for _ in range(4000):
        c = rng.uniform(0.5, 0.99)
        true_p = sigmoid(0.5 * logit(c) - 0.2)  # an overconfident model
        confidences.append(c)
        correct.append(rng.random() < true_p)
    a, b = fit_scaling(confidences, correct)
    assert a == pytest.approx(0.5, abs=0.1) and b == pytest.approx(-0.2, abs=0.15)
    a_t, b_t = fit_scaling(confidences, correct, with_bias=False)
    assert b_t == 0.0 and 0.2 < a_t < 0.8


def test_always_right_does_not_reach_certainty() -> None:
    a, b = fit_scaling([0.9] * 20, [True] * 20)
    assert 0.9 < sigmoid(a * logit(0.9) + b) < 1.0 - 1e-3


def calibration_job(tmp_path: Path, source: Path, n: int = 200) -> Path:
    rng = random.Random(2)
    items, labels, rows = [], [], []
    for i in range(n):
        truth = "positive" if i % 2 else "negative"
        right = rng.random() < 0.7  # the source run is right 70% of the time but claims 95%
        predicted = truth if right else ("negative" if truth == "positive" else "positive")
        items.append({"id": f"i{i}", "text": f"text {i}"})
        labels.append({"item_id": f"i{i}", "schema": "sentiment", "label": truth, "user": "u"})
        rows.append({"item_id": f"i{i}", "schema": "sentiment", "label": predicted, "confidence": 0.95})
    items.append({"id": "new", "text": "an item the source run never saw"})
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    holdout = [f"i{i}" for i in range(0, n, 4)]
    # The source run's bundle beside its predictions, as in a server run folder: the same holdout.
    pack_bundle(write_bundle(tmp_path / "source-job", job_json("noop"), items, labels, holdout), source.parent)
    job = job_json("decision-calibrate", (SENTIMENT,), {"source_predictions": str(source)})
    return write_bundle(tmp_path / "job", job, items, labels, holdout)


def test_calibrated_run(tmp_path: Path) -> None:
    job_dir = calibration_job(tmp_path, tmp_path / "source.jsonl")
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    result = read_result(job_dir)
    rows = read_jsonl(job_dir / "predictions.jsonl")
    assert result["predictions"] == len(rows) == 200  # "new" has no source prediction
    source = {r["item_id"]: r for r in read_jsonl(tmp_path / "source.jsonl")}
    assert all(r["label"] == source[r["item_id"]]["label"] for r in rows)
    # Fitted on the source's holdout; each of those items gets the map fitted without it (cross-fitting).
    trained = [r["confidence"] for r in rows if int(r["item_id"][1:]) % 4]
    assert 0.6 < trained[0] < 0.8 and all(c == trained[0] for c in trained)
    assert all(0.55 < r["confidence"] < 0.85 for r in rows)
    assert result["metrics"]["sentiment/holdout_brier"] < (0.95 - 0.7) ** 2 + 0.2
    events = read_jsonl(job_dir / "events.jsonl")
    assert "The trainer gave no prediction for 1 (item, schema) pair(s); predictions.jsonl leaves them out" in [
        e["text"] for e in events if e["type"] == "warning"]
    calibration = json.loads((job_dir / "artifacts" / "calibration.json").read_text())
    assert calibration["schemas"]["sentiment"]["method"] == "platt"


def test_a_missing_source_is_a_bad_job(tmp_path: Path) -> None:
    job_dir = calibration_job(tmp_path, tmp_path / "source.jsonl")
    (tmp_path / "source.jsonl").unlink()
    assert run_job(job_dir) == 2
    message = read_result(job_dir)["message"]
    assert message.startswith(f"decision-calibrate: source_predictions {tmp_path / 'source.jsonl'} cannot be read")
    assert not math.isnan(read_result(job_dir)["duration_s"])
