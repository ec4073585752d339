"""Which options stay bright (issue 44, option highlighting from the project's runs): the shown run's
most likely ``top_k``, from the probabilities the writeback keeps; an item without them stays plain."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.config.schema import AiSupport, OptionHighlighting
from potato.server.training.runs.store import RunState
from potato.server.training.runs.writeback import option_probabilities, suggestions_for, write_back
from potato.study.assist import option_highlights, top_options
from potato.training.job.schemes import Scheme, SchemeType

ON = AiSupport(enabled=True, source="runs", option_highlighting=OptionHighlighting(("sentiment", "aspects"), top_k=2))


def test_the_most_likely_options_first_and_ties_by_name() -> None:
    assert top_options({"a": 0.1, "b": 0.6, "c": 0.3}, 2) == ["b", "c"]
    assert top_options({"z": 0.5, "y": 0.5}, 1) == ["y"]
    assert top_options({"a": 1.0}, 3) == ["a"]


def test_only_highlighted_schemas_with_the_runs_probabilities() -> None:
    suggestions = {"sentiment": {"label": "negative", "probabilities": {"positive": 0.2, "negative": 0.8}},
                   "aspects": {"label": ["price"]},  # a run from before the probabilities were kept
                   "other": {"label": "x", "probabilities": {"x": 1.0}}}
    assert option_highlights(ON, suggestions) == {"sentiment": ["negative", "positive"]}
    assert option_highlights(AiSupport(), suggestions) == {}


def test_only_the_schemes_own_labels_with_real_probabilities_are_kept() -> None:
    radio = Scheme(SchemeType.RADIO, "sentiment", labels=("positive", "negative"))
    kept = option_probabilities({"positive": 0.7, "negative": 0.3, "<b>x</b>": 0.9, "neutral": "high"}, radio)
    assert json.loads(kept) == {"positive": 0.7, "negative": 0.3}
    assert option_probabilities({"positive": 1.5}, radio) is None
    assert option_probabilities("not a mapping", radio) is None
    assert option_probabilities({"PER": 0.9}, Scheme(SchemeType.SPAN, "names", labels=("PER",))) is None


@pytest.fixture
def app(make_project: Callable[..., Path]) -> Iterator[Any]:
    from potato.config import load_config
    from potato.server import close_app, create_app
    from tests.harness.runs import training_config

    application = create_app(load_config(make_project(**training_config())),
                             {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    yield application
    close_app(application)


def test_the_writeback_keeps_each_suggestions_probabilities(app: Any, tmp_path: Path) -> None:
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    run = store.create("sklearn-text-classification", ["sentiment"], "local", {})
    store.move(run.id, RunState.PREPARING)
    store.move(run.id, RunState.RUNNING)
    item = next(iter(project.items)).id
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(json.dumps({"item_id": item, "schema": "sentiment", "label": "negative", "confidence": 0.8,
                                       "probabilities": {"positive": 0.2, "negative": 0.8}}) + "\n")
    write_back(project, store.get(run.id), predictions, {})
    shown = suggestions_for(project, item)
    assert shown["sentiment"]["probabilities"] == {"positive": 0.2, "negative": 0.8}
