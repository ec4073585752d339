"""Which run annotators' suggestions come from when a run wrote no predictions for a schema (issue 33
item 2). The shown run per schema changed with every succeeded run, predictions or not: an empty
upload made a run with 0 suggestions the source, and the earlier runs' suggestions vanished. A run
now replaces the shown run only for the schemas it predicted, and says whose suggestions stay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.config import load_config
from potato.server.training.runs.recorder import RunRecorder
from potato.server.training.runs.store import RunState
from potato.server.training.runs.writeback import WritebackStats, kept_note, shown_runs, suggestions_for


@pytest.fixture
def app(make_project: Callable[..., Path]) -> Iterator[Any]:
    from potato.server import close_app, create_app

    config = load_config(make_project(model_training={
        "enabled": True,
        "writeback": {"schemas": ["sentiment", "aspects"], "include_unlabeled": True, "min_confidence": 0.0},
    }))
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    yield application
    close_app(application)


def finished_run(app: Any, tmp_path: Path, rows: list[dict[str, Any]] | None) -> str:
    """A run on both schemas that succeeded with ``rows`` as its predictions (None: it sent none)."""
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    run = store.create("noop", ["sentiment", "aspects"], "local", {})
    store.move(run.id, RunState.PREPARING)
    store.move(run.id, RunState.RUNNING)
    path = None
    if rows is not None:
        path = tmp_path / f"{run.id}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    state = RunRecorder(project, store, store.get(run.id)).finish(
        0, {"status": "succeeded", "metrics": {"holdout_accuracy": 0.8}}, None, path, None)
    assert state is RunState.SUCCEEDED
    return str(run.id)


def rows(schema: str, label: Any, n: int = 5) -> list[dict[str, Any]]:
    return [{"item_id": f"r{i:03d}", "schema": schema, "label": label, "confidence": 0.9} for i in range(n)]


def test_a_run_that_skips_a_schema_leaves_that_schemas_suggestions_to_the_run_before(app: Any,
                                                                                   tmp_path: Path) -> None:
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    first = finished_run(app, tmp_path, rows("sentiment", "positive") + rows("aspects", ["price"]))
    second = finished_run(app, tmp_path, rows("sentiment", "negative"))  # no prediction for aspects
    shown = shown_runs(project)
    assert shown["sentiment"]["run_id"] == second and shown["aspects"]["run_id"] == first
    seen = suggestions_for(project, "r001")
    assert seen["sentiment"]["label"] == "negative" and seen["aspects"]["label"] == ["price"]
    run = store.get(second)
    assert run.message == f"This run wrote no predictions for aspects, so annotators keep the suggestions of run {first}."
    assert run.message in (store.run_dir(second) / "run.log").read_text()
    assert run.metrics["suggestions/written"] == 5


def test_a_run_with_no_predictions_at_all_keeps_every_schema_and_a_full_one_takes_over(app: Any,
                                                                                      tmp_path: Path) -> None:
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    first = finished_run(app, tmp_path, rows("sentiment", "positive"))
    empty = finished_run(app, tmp_path, [])
    none = finished_run(app, tmp_path, None)
    assert shown_runs(project)["sentiment"]["run_id"] == first and "aspects" not in shown_runs(project)
    for run_id in (empty, none):
        run = store.get(run_id)
        assert run.message == (f"This run wrote no predictions for sentiment, so annotators keep the suggestions of "
                               f"run {first}. This run wrote no predictions for aspects; no earlier run has "
                               "suggestions for it either.")
        assert run.metrics["suggestions/written"] == 0
        assert "Run succeeded." in (store.run_dir(run_id) / "run.log").read_text()
    full = finished_run(app, tmp_path, rows("sentiment", "negative") + rows("aspects", ["quality"]))
    assert {s["run_id"] for s in shown_runs(project).values()} == {full} and store.get(full).message is None


def test_what_the_note_says(tmp_path: Path) -> None:
    assert kept_note(WritebackStats(schemas=["sentiment"], predicted={"sentiment": 3})) is None
    stats = WritebackStats(schemas=["a", "b", "c"], invalid=2, kept={"a": "run-1", "b": "run-1", "c": None})
    assert kept_note(stats) == ("This run wrote no valid predictions (2 invalid lines) for a, b, so annotators keep "
                                "the suggestions of run run-1. This run wrote no valid predictions (2 invalid lines) "
                                "for c; no earlier run has suggestions for it either.")
