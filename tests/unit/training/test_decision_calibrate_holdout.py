"""decision-calibrate calibrates on predictions for items the source model did not train on (issue 21).

The bug: the calibration map was fitted on the source run's training items, where a model that has
learnt them by heart is right and near-certain; the map then kept the confidences high, and annotators
read "95% confident" from a model that is right two times in three. These tests build a deliberately
overfit source run (its training items near-certain and right, everything else right 67% of the time
at ~90% confidence), calibrate it, and look at what a user checks: the confidences in the calibrated
run's predictions.jsonl for items that neither the source model nor the calibrator saw (labelled only
in the test), and the calibration error the run reports in result.json. SPEC C4 (trainers write
predictions with confidences), C6 (a run's scores), C5 (the confidences become suggestions).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from potato.training.trainers.calibration_maths import confidence_log_loss, expected_calibration_error
from potato.training.worker.program import run_job

from tests.harness.jobdirs import SENTIMENT, job_json, pack_bundle, read_jsonl, read_result, run_worker, write_bundle

LABELS = ("positive", "negative")
ACCURACY = 0.67
"""How often the overfit source model is right on items it did not train on."""


def _other(label: str) -> str:
    return LABELS[1] if label == LABELS[0] else LABELS[0]


def _rows(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def overfit_source(root: Path, n_train: int = 1000, n_holdout: int = 300, n_unseen: int = 2000,
                   source_trainer: str = "sklearn-text-classification") -> tuple[Path, dict[str, str], list[str]]:
    """A source run folder as the server keeps it (``predictions.jsonl`` beside ``bundle.tar.gz``)
    whose model is overfit: near-certain and right on its ``n_train`` training items, right
    :data:`ACCURACY` of the time at 0.80-0.99 confidence on its ``n_holdout`` holdout items and on
    ``n_unseen`` items nobody labelled. Returns (predictions path, every item's true label, the
    unseen item ids); the unseen items' truth is known to the test only."""
    rng = random.Random(21)
    truth: dict[str, str] = {}
    predictions, labels = [], []
    groups = (("train", n_train), ("hold", n_holdout), ("unseen", n_unseen))
    for group, n in groups:
        for k in range(n):
            item_id = f"{group}{k}"
            truth[item_id] = rng.choice(LABELS)
            if group == "train":
                label, confidence = truth[item_id], rng.uniform(0.97, 0.999)
            else:
                right = rng.random() < ACCURACY
                label, confidence = (truth[item_id] if right else _other(truth[item_id])), rng.uniform(0.80, 0.99)
            predictions.append({"item_id": item_id, "schema": "sentiment", "label": label, "confidence": confidence})
            if group != "unseen":
                labels.append({"item_id": item_id, "schema": "sentiment", "label": truth[item_id], "user": "ann"})
    items = [{"id": i, "text": f"review {i}"} for i in truth]
    holdout = [f"hold{k}" for k in range(n_holdout)]
    folder = root / "runs" / "20260101-000000-src1"
    source_job = job_json(source_trainer, (SENTIMENT,), run_id=folder.name)
    write_bundle(root / "source-job", source_job, items, labels, holdout)
    pack_bundle(root / "source-job", folder)
    (folder / "predictions.jsonl").write_text(_rows(predictions), encoding="utf-8")
    # This run's bundle: the same items and labels; the server draws its holdout by the same rule,
    # so it is the source's holdout again.
    write_bundle(root / "job", job_json("decision-calibrate", (SENTIMENT,),
                                        {"source_predictions": str(folder / "predictions.jsonl")}),
                 items, labels, holdout)
    return folder / "predictions.jsonl", truth, [i for i in truth if i.startswith("unseen")]


def _unseen_confidences(job_dir: Path, truth: dict[str, str], unseen: list[str]) -> tuple[list[float], list[bool]]:
    rows = {r["item_id"]: r for r in read_jsonl(job_dir / "predictions.jsonl")}
    confidences = [rows[i]["confidence"] for i in unseen]
    correct = [rows[i]["label"] == truth[i] for i in unseen]
    return confidences, correct


@pytest.mark.parametrize("method", ["platt", "temperature"])
def test_overfit_source_is_not_overconfident_on_unseen_items(tmp_path: Path, method: str) -> None:
    """Issue 21: on items neither the source model nor the calibrator saw, the calibrated
    confidence matches how often the label is right (fitting on the source's training items
    left it near 0.99 against a 0.67 hit rate)."""
    _, truth, unseen = overfit_source(tmp_path)
    job_dir = tmp_path / "job"
    bundle_job = json.loads((job_dir / "bundle" / "job.json").read_text())
    bundle_job["params"]["method"] = method
    (job_dir / "bundle" / "job.json").write_text(json.dumps(bundle_job))
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    confidences, correct = _unseen_confidences(job_dir, truth, unseen)
    accuracy = sum(correct) / len(correct)
    mean_confidence = sum(confidences) / len(confidences)
    assert accuracy == pytest.approx(ACCURACY, abs=0.03)  # the labels are the source's, unchanged
    assert mean_confidence == pytest.approx(accuracy, abs=0.05), (mean_confidence, accuracy)
    assert expected_calibration_error(confidences, correct) < 0.08
    calibration = json.loads((job_dir / "artifacts" / "calibration.json").read_text())
    assert calibration["schemas"]["sentiment"]["fitted_on"] == "source holdout"
    assert calibration["schemas"]["sentiment"]["n"] == 300


def test_the_run_reports_calibration_error_before_and_after_on_unseen_items(tmp_path: Path) -> None:
    """Issue 21: result.json's metrics (what the API and run.log show) carry the calibration error
    before and after, measured by cross-fitting on items neither model saw; the numbers agree with
    what the test measures on the items nobody labelled."""
    _, truth, unseen = overfit_source(tmp_path)
    job_dir = tmp_path / "job"
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    metrics = read_result(job_dir)["metrics"]
    assert metrics["sentiment/n_calibration"] == 300
    before, after = metrics["sentiment/calibration_ece_before"], metrics["sentiment/calibration_ece_after"]
    assert before > 0.15 and after < 0.08 and after < before / 3
    assert metrics["sentiment/calibration_log_loss_after"] < metrics["sentiment/calibration_log_loss_before"]
    confidences, correct = _unseen_confidences(job_dir, truth, unseen)
    assert after == pytest.approx(expected_calibration_error(confidences, correct), abs=0.05)
    assert metrics["sentiment/calibration_log_loss_after"] == pytest.approx(
        confidence_log_loss(confidences, correct), abs=0.05)
    # The worker's own holdout score still comes first; the holdout items' confidences come from
    # maps fitted without them, so its Brier score is honest too.
    assert metrics["sentiment/holdout_accuracy"] == pytest.approx(ACCURACY, abs=0.07)
    assert metrics["sentiment/holdout_brier"] < 0.25
    events = read_jsonl(job_dir / "events.jsonl")
    shown = {e["name"]: e["value"] for e in events if e["type"] == "metric"}
    assert shown["sentiment/calibration_ece_after"] == after
    assert any("calibration error (ECE)" in e.get("text", "") for e in events if e["type"] == "log")


def noisy_reviews(n: int, seed: int) -> list[tuple[str, str, str]]:
    """(id, text, true label): a word that says the label 70% of the time, plus a word only this
    item has (a weakly regularised model learns those by heart: near-certain on its training items,
    and too sure elsewhere)."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        label = rng.choice(LABELS)
        hint = label if k % 10 >= 3 else _other(label)  # exactly 70% in every ten items
        word = "lovely" if hint == "positive" else "awful"
        out.append((f"n{seed}-{k}", f"{word} w{seed}x{k}", label))
    return out


def test_cross_validation_when_the_source_holdout_is_too_small(tmp_path: Path) -> None:
    """Issue 21: a real overfit scikit-learn source run with a holdout too small to calibrate on: the
    trainer refits the source trainer on folds of the labelled items and calibrates on its
    out-of-fold predictions; the calibrated confidences on unlabelled items match the hit rate."""
    pytest.importorskip("sklearn")
    labelled, unseen_rows = noisy_reviews(800, 1), noisy_reviews(1500, 2)
    truth = {i: t for i, _, t in labelled + unseen_rows}
    items = [{"id": i, "text": text} for i, text, _ in labelled + unseen_rows]
    labels = [{"item_id": i, "schema": "sentiment", "label": t, "user": "ann"} for i, _, t in labelled]
    holdout = [i for i, _, _ in labelled[:6]]
    folder = tmp_path / "runs" / "20260101-000000-src2"
    write_bundle(folder, job_json("sklearn-text-classification", (SENTIMENT,), {"C": 1000.0}, run_id=folder.name),
                 items, labels, holdout)
    done = run_worker(folder)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    pack_bundle(folder, folder)
    source = {r["item_id"]: r for r in read_jsonl(folder / "predictions.jsonl")}
    train_confidence = [source[i]["confidence"] for i, _, _ in labelled[6:]]
    assert min(train_confidence) > 0.98  # the source is overfit: sure of every item it trained on
    job_dir = write_bundle(tmp_path / "job", job_json("decision-calibrate", (SENTIMENT,), {
        "source_predictions": str(folder / "predictions.jsonl")}), items, labels, holdout)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    unseen = [i for i, _, _ in unseen_rows]
    confidences, correct = _unseen_confidences(job_dir, truth, unseen)
    accuracy = sum(correct) / len(correct)
    raw = sum(source[i]["confidence"] for i in unseen) / len(unseen)
    mean_confidence = sum(confidences) / len(confidences)
    assert raw > accuracy + 0.1  # the source run is too sure on items it did not train on
    assert mean_confidence == pytest.approx(accuracy, abs=0.05), (raw, mean_confidence, accuracy)
    metrics = read_result(job_dir)["metrics"]
    assert metrics["sentiment/n_calibration"] == 800
    assert metrics["sentiment/calibration_ece_after"] < metrics["sentiment/calibration_ece_before"]
    calibration = json.loads((job_dir / "artifacts" / "calibration.json").read_text())
    assert calibration["schemas"]["sentiment"]["fitted_on"] == "cross-validation"
    log = [e.get("text", "") for e in read_jsonl(job_dir / "events.jsonl")]
    assert any("cross-validating sklearn-text-classification instead" in t for t in log)


def test_a_gpu_source_with_too_small_a_holdout_names_the_fix(tmp_path: Path) -> None:
    """Issue 21: a transformer source is not refitted for cross-validation; with too few held-out
    items the run fails as a bad job and says what to do."""
    overfit_source(tmp_path, n_train=100, n_holdout=5, n_unseen=0, source_trainer="hf-text-classification")
    job_dir = tmp_path / "job"
    assert run_job(job_dir) == 2
    message = read_result(job_dir)["message"]
    assert message.startswith("decision-calibrate: schema 'sentiment' has fewer than 20 labelled items that the "
                              "source run 20260101-000000-src1 did not train on")
    assert "raise model_training.holdout_fraction (e.g. 0.3), then train the source again" in message


def test_a_source_without_its_bundle_is_refused(tmp_path: Path) -> None:
    """Issue 21: without the source's bundle the trainer cannot tell its training items; it refuses
    rather than calibrate on them."""
    predictions, _, _ = overfit_source(tmp_path, n_train=50, n_holdout=30, n_unseen=0)
    (predictions.parent / "bundle.tar.gz").unlink()
    job_dir = tmp_path / "job"
    assert run_job(job_dir) == 2
    assert read_result(job_dir)["message"] == (
        f"decision-calibrate: the source run folder {predictions.parent} has no bundle.tar.gz, so which items its "
        "model trained on is unknown, and calibrating on those would make the confidences overconfident; train "
        "the source again and calibrate the new run")


def test_a_calibrated_run_is_not_a_source(tmp_path: Path) -> None:
    """Issue 21: calibrating a calibrated run would fit on items the first calibration saw; the
    message names the run to calibrate instead."""
    overfit_source(tmp_path, n_train=50, n_holdout=30, n_unseen=0)
    first = tmp_path / "runs" / "20260101-000100-cal1"
    pack_bundle(tmp_path / "job", first)
    (first / "predictions.jsonl").write_text(
        (tmp_path / "runs" / "20260101-000000-src1" / "predictions.jsonl").read_text(), encoding="utf-8")
    second = write_bundle(tmp_path / "job2", job_json("decision-calibrate", (SENTIMENT,), {
        "source_predictions": str(first / "predictions.jsonl")}), [{"id": "hold0", "text": "x"}],
        [{"item_id": "hold0", "schema": "sentiment", "label": "positive", "user": "ann"}], [])
    assert run_job(second) == 2
    assert read_result(second)["message"] == (
        "decision-calibrate: run 20260101-000100-cal1 is itself a decision-calibrate run; calibrate the run it "
        "calibrated instead (source_run: 20260101-000000-src1)")


def test_the_default_source_is_the_newest_run_that_is_not_a_calibration(tmp_path: Path) -> None:
    """Issue 21: with no source_run the server picks the newest succeeded run on the schemas, but
    never an earlier calibration (the worker would refuse it): the model run it calibrated."""
    from potato.db import Database
    from potato.server.training.run_requests import calibration_source
    from potato.server.training.runs.store import RunState, RunStore

    store = RunStore(Database(tmp_path / "db.sqlite3"), tmp_path / "runs")
    model = store.create("sklearn-text-classification", ["sentiment"], "local", {})
    calibrated = store.create("decision-calibrate", ["sentiment"], "local", {})
    for run in (model, calibrated):
        for state in (RunState.PREPARING, RunState.RUNNING, RunState.SUCCEEDED):
            assert store.move(run.id, state)
        (store.run_dir(run.id) / "predictions.jsonl").write_text(
            '{"item_id": "r000", "schema": "sentiment", "label": "positive", "confidence": 0.9}\n', encoding="utf-8")
    assert store.list()[0].id == calibrated.id  # the calibration is the newest run
    assert calibration_source(store, ["sentiment"], None) == str(store.run_dir(model.id) / "predictions.jsonl")
