"""Issue 24, active learning: upstream's ``active_learning`` section mapped onto this server's trainers,
backends and queues; the uncertainty measures and the order they give."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.config.upstream import unsupported_message
from potato.server.training.runs.activelearning import order, uncertainty
from tests.harness.upstream import upstream

CONFIG = Path("/projects/al/config.yaml")
UPSTREAM_AL = {"enabled": True, "schema_names": ["sentiment"], "min_annotations_per_instance": 1,
               "min_instances_for_training": 20, "update_frequency": 10, "max_instances_to_reorder": 100,
               "random_sample_percent": 0.2, "resolution_strategy": "majority_vote",
               "classifier_name": "sklearn.linear_model.LogisticRegression",
               "vectorizer_name": "sklearn.feature_extraction.text.TfidfVectorizer"}


def config_with(al: dict[str, Any], **extra: Any) -> Any:
    return validate(upstream(active_learning=al, model_training={"enabled": True, **extra}), CONFIG)


def test_upstreams_section_maps_onto_automatic_runs_of_our_trainer() -> None:
    report = config_with(UPSTREAM_AL)
    assert report.errors == []
    al = report.config.active_learning
    assert (al.enabled, al.schemas, al.min_items, al.every_n_labels, al.max_reordered, al.random_share,
            al.uncertainty, al.trainer) == (True, ("sentiment",), 20, 10, 100, 0.2, "least_confidence",
                                            "sklearn-text-classification")
    auto = report.config.model_training.auto_retrain
    assert (auto.enabled, auto.every_n_labels, auto.trainer, auto.schemas, auto.backend, auto.min_items) == (
        True, 10, "sklearn-text-classification", ("sentiment",), "local", 20)


def test_defaults_are_upstreams_and_every_trainable_scheme() -> None:
    al = config_with({"enabled": True}).config.active_learning
    assert (al.schemas, al.min_items, al.every_n_labels, al.max_reordered, al.random_share) == (
        ("sentiment",), 10, 5, None, 0.2)


def test_upstreams_active_learning_example_runs_unchanged() -> None:
    """examples/advanced/active-learning as upstream writes it: no model_training (its active learning
    trains by itself) and assignment_strategy: active_learning beside the section."""
    raw = upstream(assignment_strategy="active_learning", active_learning={
        "enabled": True, "query_strategy": "uncertainty", "min_instances_for_training": 5, "update_frequency": 5,
        "random_sample_percent": 0.2, "schema_names": ["sentiment"]})
    report = validate(raw, CONFIG)
    assert report.errors == []
    assert report.config.model_training.enabled and report.config.model_training.auto_retrain.every_n_labels == 5
    assert report.config.assignment.strategy == "fixed_order" and report.config.active_learning.random_share == 0.2
    alone = validate(upstream(assignment_strategy="active_learning"), CONFIG)
    assert [e.path for e in alone.errors] == ["assignment_strategy"]


@pytest.mark.parametrize(("change", "path", "message"), [
    ({"classifier_name": "sklearn.ensemble.RandomForestClassifier"}, "active_learning.classifier_name",
     unsupported_message("classifier_name: sklearn.ensemble.RandomForestClassifier",
                         "training active learning's own scikit-learn model (here a run of one of this server's "
                         "trainers orders the items: set active_learning.trainer, e.g. trainer: "
                         "sklearn-text-classification)")),
    ({"resolution_strategy": "consensus"}, "active_learning.resolution_strategy",
     unsupported_message("resolution_strategy: consensus", "resolving annotators' disagreement other than by "
                         "majority vote (this server trains on the label most of an item's annotators chose)")),
    ({"query_strategy": "badge"}, "active_learning.query_strategy",
     unsupported_message("query_strategy: badge", "query strategies other than uncertainty sampling (choose the "
                         "measure with uncertainty: least_confidence, margin, entropy)")),
    ({"llm_enabled": True}, "active_learning.llm_enabled",
     unsupported_message("llm_enabled", "LLM confidence scores for active learning beyond the cold start "
                         "(cold_start_strategy: llm is supported)")),
    ({"cold_start_strategy": "llm", "llm": {"enabled": True, "endpoint_url": "http://localhost:8080/v1"}},
     "active_learning.llm.endpoint_url",
     unsupported_message("endpoint_url", "asking an LLM served at a URL (here the LLM runs where the training "
                         "runs: set model_name to a Hugging Face Hub name, or a model folder or .gguf file on the "
                         "training host)")),
    ({"cold_start_strategy": "llm", "llm": {"enabled": True, "use_mock": True}}, "active_learning.llm.use_mock",
     unsupported_message("use_mock", "a stand-in LLM that makes its answers up (here a real LLM reads every item)")),
    ({"cold_start_strategy": "llm", "llm": {"confidence_method": "verbalized"}},
     "active_learning.llm.confidence_method",
     unsupported_message("confidence_method: verbalized", "confidences the LLM writes as text (here each label's "
                         "probability is the model's own likelihood of it, as confidence_method: logprobs)")),
    ({"schema_names": ["note"]}, "active_learning.schema_names[0]",
     "'note' is a text scheme; a model orders items by radio, multiselect or span schemes"),
    ({"random_sample_percent": 20}, "active_learning.random_sample_percent",
     "must be a number at least 0 and at most 1, got 20"),
])
def test_what_this_server_does_not_do_is_refused_by_name(change: dict[str, Any], path: str, message: str) -> None:
    raw = upstream(active_learning={**UPSTREAM_AL, **change}, model_training={"enabled": True},
                   annotation_schemes=[*upstream()["annotation_schemes"],
                                       {"annotation_type": "text", "name": "note"}])
    errors = [(e.path, e.message) for e in validate(raw, CONFIG).errors]
    assert errors == [(path, f"{path}: {message}")]


def test_active_learning_needs_training_and_replaces_auto_retrain() -> None:
    training_off = validate(upstream(active_learning={"enabled": True}, model_training={"enabled": False}), CONFIG)
    assert [(e.path, e.message) for e in training_off.errors] == [
        ("active_learning.enabled", "active_learning.enabled: needs a model to order items by, and model_training "
         "says enabled: false; set it to true (or leave model_training out: active learning turns it on)")]
    both = config_with({"enabled": True}, auto_retrain={"enabled": True})
    assert [e.path for e in both.errors] == ["model_training.auto_retrain"]


def test_uncertainty_measures() -> None:
    sure = {"label": "a", "confidence": 0.9, "probabilities": {"a": 0.9, "b": 0.05, "c": 0.05}}
    torn = {"label": "a", "confidence": 0.45, "probabilities": {"a": 0.45, "b": 0.44, "c": 0.11}}
    for measure in ("least_confidence", "margin", "entropy"):
        assert uncertainty(torn, measure) > uncertainty(sure, measure), measure
    assert uncertainty(torn, "least_confidence") == pytest.approx(0.55)
    assert uncertainty(torn, "margin") == pytest.approx(0.99)
    even = {"label": "a", "confidence": 0.5, "probabilities": {"a": 0.5, "b": 0.5}}
    assert uncertainty(even, "entropy") == pytest.approx(1.0)  # normalised: 1 is a coin toss
    # margin and entropy fall back to least confidence without the probabilities
    assert uncertainty({"label": "a", "confidence": 0.7}, "entropy") == pytest.approx(0.3)
    # multiselect: the label nearest its own 50/50 decides the margin
    multi = {"label": ["x"], "confidence": 0.8, "probabilities": {"x": 0.8, "y": 0.45}}
    assert uncertainty(multi, "margin") == pytest.approx(0.9)
    assert uncertainty({"confidence": float("nan")}, "margin") is None


def test_the_order_puts_the_most_uncertain_first_with_a_random_share() -> None:
    pool = [f"i{n}" for n in range(20)]
    unsure = {f"i{n}": n / 20 for n in range(20)}  # i19 the most uncertain
    assert order(unsure, pool, 5, 0.0, "run-1") == ["i19", "i18", "i17", "i16", "i15"]
    mixed = order(unsure, pool, 10, 0.2, "run-1")
    assert len(mixed) == len(set(mixed)) == 10
    picked_by_doubt = [mixed[k] for k in range(10) if (k + 1) % 5 != 0]  # every fifth place is random
    assert picked_by_doubt == [i for i in sorted(pool, key=lambda i: -unsure[i]) if i in picked_by_doubt]
    assert mixed == order(unsure, pool, 10, 0.2, "run-1")  # the same run gives the same order
    assert order(unsure, pool[:3], 10, 0.0, "r") == ["i2", "i1", "i0"]
    assert math.isclose(sum(1 for k in range(100) if math.floor((k + 1) * 0.2) > math.floor(k * 0.2)), 20)


def test_upstreams_llm_cold_start_is_an_llm_zero_shot_run_on_the_named_model() -> None:
    """Issue 34: cold_start_strategy: llm (an LLM orders the items before the first model) is an
    llm-zero-shot run; llm.model_name is its base_model; settings for generated text change nothing."""
    report = config_with({**UPSTREAM_AL, "cold_start_strategy": "llm", "cold_start_batch_size": 20,
                          "llm": {"enabled": True, "model_name": "Qwen/Qwen2.5-1.5B-Instruct", "temperature": 0.1,
                                  "confidence_method": "logprobs", "batch_size": 4}})
    assert report.errors == []
    al = report.config.active_learning
    assert al.cold_start and al.cold_start_params == {"base_model": "Qwen/Qwen2.5-1.5B-Instruct", "batch_size": 4}
    assert sorted(w.path for w in report.warnings if w.path.startswith("active_learning")) == [
        "active_learning.cold_start_batch_size", "active_learning.llm.temperature"]
    assert not config_with(UPSTREAM_AL).config.active_learning.cold_start
    off = config_with({**UPSTREAM_AL, "cold_start_strategy": "llm", "llm": {"enabled": False}})
    assert [e.path for e in off.errors] == ["active_learning.llm.enabled"]


def test_the_cold_start_run_is_queued_once_when_the_server_first_starts(make_project: Any) -> None:
    """Issue 34: the first start queues one llm-zero-shot run on the schemas; a restart does not queue
    another (each gunicorn worker asks; one claims it)."""
    from potato.config import load_config
    from potato.project import Project
    from potato.server.training.run_requests import cold_start
    from potato.server.training.runs.store import RunStore, Trigger

    config_path = make_project(active_learning={"enabled": True, "schema_names": ["sentiment"],
                                                "cold_start_strategy": "llm",
                                                "llm": {"enabled": True, "model_name": "/models/smol.gguf"}},
                               model_training={"enabled": True})
    project = Project.open(load_config(config_path))
    store = RunStore(project.db, project.config.training_dir / "runs")
    run = cold_start(project, store)
    assert run is not None
    assert (run.trainer, run.schemas, run.trigger, run.params["base_model"]) == (
        "llm-zero-shot", ["sentiment"], Trigger.AUTO, "/models/smol.gguf")
    assert cold_start(project, store) is None
    again = Project.open(load_config(config_path))
    assert cold_start(again, RunStore(again.db, again.config.training_dir / "runs")) is None
    assert [r.trainer for r in store.list()] == ["llm-zero-shot"]

