"""Issue 34: a trainer that does not learn from labels (llm-zero-shot) runs before anyone has labelled.

The worker refuses a run with no labelled training item only for a trainer that learns from labels;
one that does not (``learns_from_labels = False``) predicts every item from the scheme's own labels,
with ``n_train`` 0 and no holdout score. The trainer here is a stand-in with the same flag (the real
llm-zero-shot, with an LLM, is in test_llm_zero_shot.py), run by the real worker in this process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import pytest

from potato.training import trainers as registry
from potato.training.trainers.base import Example, JobItem, Prediction, Trainer, multiselect_prediction, radio_prediction
from potato.training.worker.program import run_job

from tests.harness.jobdirs import ASPECTS, SENTIMENT, job_json, read_jsonl, read_result, reviews, write_bundle


class GuessTrainer(Trainer):
    """Learns nothing: every label equally likely (radio), each at 0.4 (multiselect)."""

    name = "guess"
    description = "a stand-in for llm-zero-shot"
    learns_from_labels = False

    def fit(self, examples: Sequence[Example]) -> None:
        self.seen = list(examples)

    def predict(self, items: Sequence[JobItem]) -> list[dict[str, Prediction | None]]:
        out: list[dict[str, Prediction | None]] = []
        for _ in items:
            row: dict[str, Prediction | None] = {}
            for spec in self.ctx.schemas:
                labels = self.ctx.class_labels[spec.name]
                row[spec.name] = (multiselect_prediction({k: 0.4 for k in labels}) if spec.multiselect
                                  else radio_prediction({k: 1 / len(labels) for k in labels}))
            out.append(row)
        return out


@pytest.fixture
def guess(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(registry.TRAINERS, "guess", f"{__name__}:GuessTrainer")
    return "guess"


def strict_json(path: Path) -> Any:
    """result.json as a strict reader takes it: NaN or Infinity would be an error, not a number."""
    def refuse(word: str) -> None:
        raise ValueError(f"{path.name} holds {word}")
    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def unlabelled_job(job_dir: Path, trainer: str, n: int = 12) -> Path:
    items = [{"id": i, "text": t} for i, t, _ in reviews(n)]
    return write_bundle(job_dir, job_json(trainer, (SENTIMENT, ASPECTS)), items, [], [])


def test_a_trainer_that_learns_nothing_predicts_every_item_with_no_label(tmp_path: Path, guess: str) -> None:
    """Issue 34: before anyone has labelled, such a run succeeds and predicts every item on every schema
    from the scheme's own labels; n_train is 0 and there is no holdout score."""
    job_dir = unlabelled_job(tmp_path, guess)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    result = strict_json(job_dir / "result.json")
    assert result["status"] == "succeeded" and result["reason"] is None
    rows = read_jsonl(job_dir / "predictions.jsonl")
    assert result["predictions"] == len(rows) == 2 * 12
    assert {(r["item_id"], r["schema"]) for r in rows} == {
        (i, s) for i, _, _ in reviews(12) for s in ("sentiment", "aspects")}
    sentiment = [r for r in rows if r["schema"] == "sentiment"]
    assert all(set(r["probabilities"]) == {"positive", "negative"} for r in sentiment)
    metrics = result["metrics"]
    assert metrics["n_train"] == 0 and metrics["sentiment/n_train"] == 0 and metrics["aspects/n_train"] == 0
    assert metrics["n_holdout"] == 0
    assert not any("accuracy" in name or "f1" in name or "brier" in name for name in metrics)
    labels = json.loads((job_dir / "artifacts" / "labels.json").read_text())
    assert labels["schemas"]["aspects"]["labels"] == ["price", "quality", "delivery"]


def test_labelled_holdout_items_are_still_scored(tmp_path: Path, guess: str) -> None:
    """Where items are labelled, a trainer that learns nothing is scored on the holdout like any run."""
    data = reviews(12)
    items = [{"id": i, "text": t} for i, t, _ in data]
    labels = [{"item_id": i, "schema": "sentiment", "label": s, "user": "ann"} for i, _, s in data[:4]]
    job_dir = write_bundle(tmp_path, job_json(guess, (SENTIMENT,)), items, labels, [i for i, _, _ in data[:4]])
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    metrics = strict_json(job_dir / "result.json")["metrics"]
    assert metrics["n_train"] == 0 and metrics["n_holdout"] == 4
    assert metrics["sentiment/holdout_accuracy"] == 0.5  # "positive" (first of a tie) on 2 of 4


def test_a_trainer_that_learns_from_labels_still_needs_one(tmp_path: Path) -> None:
    """The same unlabelled job for noop, which learns from labels: no_labels, with what to do."""
    job_dir = unlabelled_job(tmp_path, "noop")
    assert run_job(job_dir) == 1
    result = strict_json(job_dir / "result.json")
    assert result["status"] == "failed" and result["reason"] == "no_labels"
    assert result["message"] == ("No training item has a label for schema 'sentiment' (0 labelled item(s), 0 of "
                                 "them in the holdout); label more items, then start the run again")
    assert not (job_dir / "predictions.jsonl").exists()


def test_the_catalogue_says_which_trainers_learn_from_labels() -> None:
    """The server's view of the trainers carries the flag (writeback and the page read it there)."""
    learns = {t.name: t.learns_from_labels for t in registry.available_trainers()}
    assert learns["llm-zero-shot"] is False
    assert all(learns[name] for name in learns if name != "llm-zero-shot")
