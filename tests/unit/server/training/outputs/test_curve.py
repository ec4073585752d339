"""Issue 24, what each label bought: the learning curve's points from the runs' own metrics (pure); issue 33
item 8: the curve scores a run as the runs table does (accuracy, or span F1), and each point says how many
holdout items it stands on and how uncertain it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from potato.server.training.outputs.curve import learning_curve, wilson_interval
from potato.server.training.runs.store import Run, RunState


def run(run_id: str, trainer: str, state: RunState = RunState.SUCCEEDED, finished: float = 0.0,
        schemas: tuple[str, ...] = ("sentiment",), **metrics: Any) -> Run:
    return Run(id=run_id, trainer=trainer, schemas=list(schemas), backend="local", state=state, created_at=0.0,
               metrics={k.replace("__", "/"): v for k, v in metrics.items()}, finished_at=finished)


def test_one_line_per_trainer_and_schema_in_order_of_labels() -> None:
    runs = [
        run("c", "sklearn-text-classification", finished=3, sentiment__n_train=40, sentiment__holdout_accuracy=0.9,
            sentiment__holdout_macro_f1=0.85, sentiment__n_holdout=10),
        run("a", "sklearn-text-classification", finished=1, sentiment__n_train=16, sentiment__holdout_accuracy=0.6,
            sentiment__holdout_macro_f1=0.5, sentiment__n_holdout=4),
        run("b", "hf-text-classification", finished=2, sentiment__n_train=16, sentiment__holdout_accuracy=0.7),
        run("s", "sklearn-token-classification", schemas=("names",), names__n_train=30, names__holdout_f1=0.8,
            names__holdout_precision=0.9),
    ]
    series = learning_curve(runs)
    assert [(s["schema"], s["trainer"], s["metric"]) for s in series] == [
        ("names", "sklearn-token-classification", "span F1"),
        ("sentiment", "hf-text-classification", "accuracy"),
        ("sentiment", "sklearn-text-classification", "accuracy"),
    ]
    assert [(p["run"], p["labels"], p["score"], p["n"]) for p in series[2]["points"]] == [
        ("a", 16, 0.6, 4), ("c", 40, 0.9, 10)]
    assert series[1]["points"][0]["n"] is None  # a run that did not say: nothing known, the widest band
    assert (series[1]["points"][0]["low"], series[1]["points"][0]["high"]) == (0.0, 1.0)


def test_only_succeeded_runs_with_a_score_count() -> None:
    runs = [
        run("failed", "noop", RunState.FAILED, sentiment__n_train=10, sentiment__holdout_accuracy=0.5),
        run("no-holdout", "noop", sentiment__n_train=10, sentiment__n_holdout=0),
        run("nan", "noop", sentiment__n_train=10, sentiment__holdout_accuracy=float("nan")),
        run("ok", "noop", sentiment__n_train=12, sentiment__holdout_accuracy=1.0),
    ]
    assert [[p["run"] for p in s["points"]] for s in learning_curve(runs)] == [["ok"]]
    assert learning_curve([]) == []


def test_the_curve_scores_a_run_as_the_runs_table_does() -> None:
    """Issue 33 item 8: the runs table said 0.80 (accuracy) and the curve 0.44 (macro-F1) for one run."""
    series = learning_curve([run("r", "noop", sentiment__n_train=20, sentiment__n_holdout=5,
                                 sentiment__holdout_accuracy=0.8, sentiment__holdout_macro_f1=0.44)])
    assert series[0]["metric"] == "accuracy" and series[0]["points"][0]["score"] == 0.8


def test_a_dip_on_a_tiny_holdout_stays_within_the_noise() -> None:
    """Issue 33 item 8: on holdouts of 2 to 5 items the curve fell from 1.0 to 0.44, which read as "more
    labels made it worse"; the points' intervals overlap, and the bigger holdout's is the narrower."""
    first, second = learning_curve([
        run("a", "noop", finished=1, sentiment__n_train=8, sentiment__n_holdout=2, sentiment__holdout_accuracy=1.0),
        run("b", "noop", finished=2, sentiment__n_train=20, sentiment__n_holdout=5, sentiment__holdout_accuracy=0.4),
    ])[0]["points"]
    assert (first["n"], second["n"]) == (2, 5)
    assert first["low"] < second["high"]  # the two could be the same model
    assert first["high"] == 1.0 and first["low"] == pytest.approx(0.3424, abs=1e-4)
    assert second["high"] - second["low"] < first["high"] - first["low"] + 0.25


@pytest.mark.parametrize(("score", "n", "low", "high"), [
    (1.0, 2, 0.3424, 1.0),      # 2 of 2: far from certain
    (0.0, 2, 0.0, 0.6576),
    (0.8, 5, 0.3755, 0.9638),
    (0.8, 500, 0.7627, 0.8327),  # the same score on 100 times the items: a tight band
    (0.5, 10, 0.2366, 0.7634),
])
def test_wilson_interval_matches_the_textbook_values(score: float, n: int, low: float, high: float) -> None:
    assert wilson_interval(score, n) == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))


def test_wilson_interval_holds_the_score_and_stays_within_zero_and_one() -> None:
    for n in (1, 2, 3, 7, 40, 1000):
        for hits in range(n + 1):
            low, high = wilson_interval(hits / n, n)
            assert 0.0 <= low <= hits / n <= high <= 1.0
    assert wilson_interval(0.7, 0) == (0.0, 1.0)  # no items: nothing known


def test_the_series_match_the_admin_api_contract() -> None:
    """docs/admin-api.yaml names each point's fields and the metrics (the fuzz test's seeded run draws no
    curve, so its answers do not reach these)."""
    import yaml

    spec = yaml.safe_load((Path(__file__).resolve().parents[5] / "docs" / "admin-api.yaml").read_text("utf-8"))
    line = spec["paths"]["/admin/training/api/learning-curve"]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]["properties"]["series"]["items"]
    point = line["properties"]["points"]["items"]
    series = learning_curve([
        run("a", "noop", sentiment__n_train=8, sentiment__n_holdout=2, sentiment__holdout_accuracy=1.0),
        run("b", "noop", sentiment__n_train=9, sentiment__holdout_accuracy=0.5),
        run("s", "sklearn-token-classification", schemas=("names",), names__n_train=30, names__n_holdout=7,
            names__holdout_f1=0.8),
    ])
    assert {s["metric"] for s in series} == set(line["properties"]["metric"]["enum"])
    for s in series:
        assert set(s) == set(line["required"])
        for p in s["points"]:
            assert set(p) == set(point["required"]) == set(point["properties"])
            assert p["n"] is None or (isinstance(p["n"], int) and p["n"] >= 0)
            assert all(0.0 <= p[k] <= 1.0 for k in ("score", "low", "high"))
