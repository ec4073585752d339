"""Issue 24, what each label bought: the learning curve's points from the runs' own metrics (pure)."""

from __future__ import annotations

from typing import Any

from potato.server.training.curve import learning_curve
from potato.server.training.runs import Run, RunState


def run(run_id: str, trainer: str, state: RunState = RunState.SUCCEEDED, finished: float = 0.0,
        schemas: tuple[str, ...] = ("sentiment",), **metrics: Any) -> Run:
    return Run(id=run_id, trainer=trainer, schemas=list(schemas), backend="local", state=state, created_at=0.0,
               metrics={k.replace("__", "/"): v for k, v in metrics.items()}, finished_at=finished)


def test_one_line_per_trainer_and_schema_in_order_of_labels() -> None:
    runs = [
        run("c", "sklearn-text-classification", finished=3, sentiment__n_train=40, sentiment__holdout_macro_f1=0.9),
        run("a", "sklearn-text-classification", finished=1, sentiment__n_train=16, sentiment__holdout_macro_f1=0.6),
        run("b", "hf-text-classification", finished=2, sentiment__n_train=16, sentiment__holdout_macro_f1=0.7),
        run("s", "sklearn-token-classification", schemas=("names",), names__n_train=30, names__holdout_f1=0.8,
            names__holdout_precision=0.9),
    ]
    series = learning_curve(runs)
    assert [(s["schema"], s["trainer"], s["metric"]) for s in series] == [
        ("names", "sklearn-token-classification", "F1"),
        ("sentiment", "hf-text-classification", "macro-F1"),
        ("sentiment", "sklearn-text-classification", "macro-F1"),
    ]
    assert [(p["run"], p["labels"], p["score"]) for p in series[2]["points"]] == [("a", 16, 0.6), ("c", 40, 0.9)]


def test_only_succeeded_runs_with_a_score_count() -> None:
    runs = [
        run("failed", "noop", RunState.FAILED, sentiment__n_train=10, sentiment__holdout_macro_f1=0.5),
        run("no-holdout", "noop", sentiment__n_train=10, sentiment__n_holdout=0),
        run("nan", "noop", sentiment__n_train=10, sentiment__holdout_macro_f1=float("nan")),
        run("ok", "noop", sentiment__n_train=12, sentiment__holdout_macro_f1=1.0),
    ]
    assert [[p["run"] for p in s["points"]] for s in learning_curve(runs)] == [["ok"]]
    assert learning_curve([]) == []
