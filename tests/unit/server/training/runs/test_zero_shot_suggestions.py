"""Issue 34: before anyone has labelled, an llm-zero-shot run's predictions become suggestions on every
item (with the default writeback.include_unlabeled: false) and give active learning its first order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.assignment import ORDER_KEY
from potato.config import load_config
from potato.server.training.runs import activelearning
from potato.server.training.runs.recorder import RunRecorder
from potato.server.training.runs.store import RunState
from potato.server.training.runs.writeback import suggestions_for


@pytest.fixture
def app(make_project: Callable[..., Path]) -> Iterator[Any]:
    from potato.server import close_app, create_app

    config = load_config(make_project(
        n_items=10,
        model_training={"enabled": True, "writeback": {"schemas": ["sentiment"], "include_unlabeled": False}},
        active_learning={"enabled": True, "schema_names": ["sentiment"], "random_sample_percent": 0.0}))
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    yield application
    close_app(application)


def finished_run(app: Any, tmp_path: Path, trainer: str, rows: list[dict[str, Any]]) -> str:
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    run = store.create(trainer, ["sentiment"], "local", {})
    store.move(run.id, RunState.PREPARING)
    store.move(run.id, RunState.RUNNING)
    path = tmp_path / f"{run.id}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    metrics = {"n_train": 0, "n_holdout": 0}  # nothing labelled: no holdout score
    state = RunRecorder(project, store, store.get(run.id)).finish(0, {"status": "succeeded", "metrics": metrics},
                                                                 None, path, None)
    assert state is RunState.SUCCEEDED, store.get(run.id).message
    return str(run.id)


def predictions(ids: list[str]) -> list[dict[str, Any]]:
    """Sentiment for each item, less sure the further down the list (so the order is known)."""
    out = []
    for k, item_id in enumerate(ids):
        p = 0.95 - 0.4 * k / len(ids)
        out.append({"item_id": item_id, "schema": "sentiment", "label": "positive", "confidence": p,
                    "probabilities": {"positive": p, "negative": 1 - p}})
    return out


def test_zero_shot_suggests_on_every_item_and_orders_them_with_no_label(app: Any, tmp_path: Path) -> None:
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    ids = list(project.items.ids)
    assert project.db.conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 0
    run_id = finished_run(app, tmp_path, "llm-zero-shot", predictions(ids))
    run = store.get(run_id)
    assert run.metrics["suggestions/written"] == len(ids) and run.metrics["suggestions/unlabelled_skipped"] == 0
    assert all(suggestions_for(project, i)["sentiment"]["label"] == "positive" for i in ids)
    order = activelearning.current(project)
    assert order["run_id"] == run_id and order["ordered"] == len(ids)  # every item: nobody labelled any
    stored = project.db.conn.execute("SELECT value FROM meta WHERE key = ?", (ORDER_KEY,)).fetchone()[0]
    assert json.loads(stored)["ids"] == list(reversed(ids))  # the least sure first


def test_a_trainer_that_learns_from_labels_keeps_to_labelled_items(app: Any, tmp_path: Path) -> None:
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    run_id = finished_run(app, tmp_path, "noop", predictions(list(project.items.ids)))
    assert store.get(run_id).metrics["suggestions/written"] == 0
