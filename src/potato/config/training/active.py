"""``active_learning``: upstream Potato's keys for letting a model choose what is labelled next.

Upstream trains its own scikit-learn classifier inside the server. Here the section is mapped onto
this server's trainers and backends: ``update_frequency`` starts a run every that many labels (as
``model_training.auto_retrain`` does), on the configured backend, so the model may train on a GPU
anywhere while annotators go on; after each run the items nobody has labelled are ordered by the
run's uncertainty. Upstream's own classifier keys choose among our trainers or are refused by name,
as are its persistence and database options. Its LLM cold start (``cold_start_strategy: llm``: an
LLM orders the items before there is a model) is an ``llm-zero-shot`` run when the server first
starts, on the LLM that ``llm.model_name`` names; an LLM behind an endpoint URL, a mock LLM and
confidences the LLM writes as text are refused by name.
"""

from __future__ import annotations

from typing import Any, Mapping

from potato import defaults
from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    anything,
    boolean,
    check_keys,
    choice,
    integer,
    mapping,
    number,
    show,
    text,
    text_list,
)
from potato.config.schema import ActiveLearning, AutoRetrain, UNCERTAINTY_MEASURES
from potato.config.upstream import unsupported_message

_TRAINER_OF = {("LogisticRegression", "TfidfVectorizer"): "sklearn-text-classification"}
"""Upstream's classifier and vectorizer (class names, module paths dropped) -> the trainer that is them."""

_REFUSED: Mapping[str, str] = {
    "use_icl_ensemble": "blending in-context-learning predictions into active learning (trainer: llm-zero-shot "
                        "orders the items by an LLM's own uncertainty)",
    "annotation_routing": "LLM-based annotation routing",
    "model_persistence_enabled": "saving active learning's models in a folder of their own (every run keeps "
                                 "its model in its run folder here)",
    "model_save_directory": "saving active learning's models in a folder of their own",
    "model_retention_count": "saving active learning's models in a folder of their own",
    "database_enabled": "keeping active learning's state in an external database",
    "database_config": "keeping active learning's state in an external database",
    "database": "keeping active learning's state in an external database",
    "schema_configs": "different active learning settings per schema",
    "hybrid_weights": "the hybrid query strategy (uncertainty sampling is what this server does; random_sample_percent "
                      "mixes in items drawn at random)",
    "bald_params": "the BALD query strategy",
}
"""Upstream keys refused when switched on (given and not false, empty or random)."""

_IGNORED: Mapping[str, str] = {
    "classifier_kwargs": "model_training.trainer_params",
    "classifier_params": "model_training.trainer_params",
    "vectorizer_kwargs": "model_training.trainer_params",
    "vectorizer_params": "model_training.trainer_params",
    "calibrate_probabilities": "the decision-calibrate trainer",
}
"""Upstream keys that only warn: what this server uses instead."""

_LLM_IGNORED = ("max_tokens", "temperature", "timeout", "retry_attempts", "retry_delay", "max_instances_per_request",
                "consistency_samples")
"""Upstream's settings for an LLM that writes its answer: nothing is generated here (each label's
likelihood is read), so they change nothing."""
_LLM_KEYS = ("enabled", "endpoint_url", "model_name", "use_mock", "confidence_method", "batch_size", *_LLM_IGNORED)

_KEYS: Mapping[str, Check] = {
    "enabled": boolean,
    "schema_names": text_list('["sentiment"]'),
    "min_annotations_per_instance": integer(1),
    "min_instances_for_training": integer(1),
    "update_frequency": integer(1),
    "max_instances_to_reorder": integer(1),
    "random_sample_percent": number(0, 1, open_low=False),  # upstream reads a share: 0.2 is a fifth
    "resolution_strategy": text(),
    "query_strategy": text(),
    "uncertainty": choice(UNCERTAINTY_MEASURES, "uncertainty"),
    "classifier_name": text(),
    "vectorizer_name": text(),
    "trainer": text(),
    "backend": text(),
    "cold_start_strategy": choice(("random", "llm"), "cold_start_strategy"),
    "cold_start_batch_size": integer(1),
    "llm_enabled": boolean,
    "llm": anything,
    "llm_config": anything,
    **{key: anything for key in (*_REFUSED, *_IGNORED)},
}


def check_active_learning(raw: object, scheme_types: Mapping[str, str | None], training_on: bool | None,
                          findings: Findings) -> ActiveLearning | None:
    """The section, or None when it is wrong (each problem reported); off when absent. ``training_on``:
    model_training's ``enabled``, None where the config has no model_training (upstream's configs
    have none: active learning turns training on with its defaults)."""
    if raw is None:
        return ActiveLearning()
    try:
        values, problems = check_keys(mapping(raw, "{enabled: true, schema_names: [sentiment]}"), _KEYS,
                                      "active_learning")
    except Invalid as bad:
        findings.errors_at("active_learning", bad.problems)
        return None
    for key, what in _REFUSED.items():
        if values.pop(key, None) not in (None, False, {}, [], "random", "uncertainty"):
            problems.append((f".{key}", unsupported_message(key, what)))
    for key, instead in _IGNORED.items():
        if key in values and values.pop(key) not in (None, {}, True):
            findings.warn(f"active_learning.{key}", f"is ignored here; the trainer's settings are in {instead}")
    strategy = values.pop("resolution_strategy", "majority_vote")
    if strategy != "majority_vote":
        problems.append((".resolution_strategy", unsupported_message(
            f"resolution_strategy: {strategy}", "resolving annotators' disagreement other than by majority vote "
            "(this server trains on the label most of an item's annotators chose)")))
    query = values.pop("query_strategy", "uncertainty")
    if query != "uncertainty":
        problems.append((".query_strategy", unsupported_message(
            f"query_strategy: {query}", "query strategies other than uncertainty sampling (choose the measure "
            f"with uncertainty: {', '.join(UNCERTAINTY_MEASURES)})")))
    cold_start, cold_start_params = _cold_start(values, problems, findings)
    trainer = _trainer(values, problems)
    names = values.get("schema_names") or tuple(n for n, kind in scheme_types.items() if kind in ("radio", "multiselect"))
    for i, name in enumerate(values.get("schema_names", ())):
        if name not in scheme_types:
            problems.append((f".schema_names[{i}]", f"{show(name)} names no annotation scheme; schemes: "
                                                    f"{', '.join(scheme_types) or 'none'}"))
        elif scheme_types[name] not in ("radio", "multiselect", "span"):
            problems.append((f".schema_names[{i}]", f"{show(name)} is a {scheme_types[name] or 'broken'} scheme; a "
                                                    "model orders items by radio, multiselect or span schemes"))
    enabled = values.get("enabled", False)
    if enabled and training_on is False:
        problems.append((".enabled", "needs a model to order items by, and model_training says enabled: false; "
                                     "set it to true (or leave model_training out: active learning turns it on)"))
    if enabled and not names:
        problems.append((".schema_names", "no radio, multiselect or span scheme to train on; name one, e.g. "
                                          "schema_names: [sentiment]"))
    findings.errors_at("active_learning", problems)
    if problems:
        return None
    return ActiveLearning(
        enabled=enabled,
        schemas=tuple(names),
        min_annotations_per_item=values.get("min_annotations_per_instance", 1),
        min_items=values.get("min_instances_for_training", defaults.ACTIVE_LEARNING_MIN_ITEMS),
        every_n_labels=values.get("update_frequency", defaults.ACTIVE_LEARNING_EVERY_N_LABELS),
        max_reordered=values.get("max_instances_to_reorder"),
        random_share=float(values.get("random_sample_percent", defaults.ACTIVE_LEARNING_RANDOM_SHARE)),
        uncertainty=values.get("uncertainty", UNCERTAINTY_MEASURES[0]),
        trainer=trainer,
        backend=values.get("backend"),
        cold_start=cold_start,
        cold_start_params=cold_start_params,
    )


def _cold_start(values: dict[str, Any], problems: list[tuple[str, str]],
                findings: Findings) -> tuple[bool, dict[str, object]]:
    """Upstream's LLM cold start as an llm-zero-shot run: (on, its parameters). Its LLM settings
    (``llm``, or ``llm_config`` beside ``llm_enabled``) count only with ``cold_start_strategy: llm``."""
    on = values.pop("cold_start_strategy", "random") == "llm"
    if "cold_start_batch_size" in values:
        values.pop("cold_start_batch_size")
        findings.warn("active_learning.cold_start_batch_size", "is ignored here: the LLM suggests a label for every "
                      "item, and active learning puts the items it is least sure of first")
    enabled = values.pop("llm_enabled", None)
    key = "llm" if "llm" in values else "llm_config"
    settings = values.pop(key, None)
    values.pop("llm_config" if key == "llm" else "llm", None)
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        problems.append((f".{key}", f"must be a mapping of the LLM's settings, e.g. {key}: {{model_name: "
                                    "Qwen/Qwen2.5-1.5B-Instruct}"))
        return False, {}
    enabled = settings.get("enabled", enabled)
    if not on:
        if enabled:
            problems.append((".llm_enabled" if key == "llm_config" or "enabled" not in settings else f".{key}.enabled",
                             unsupported_message("llm_enabled", "LLM confidence scores for active learning beyond "
                                                 "the cold start (cold_start_strategy: llm is supported)")))
        return False, {}
    if enabled is False:
        problems.append((f".{key}.enabled", "is false, but cold_start_strategy: llm needs the LLM; set enabled: true "
                                           "or cold_start_strategy: random"))
    for name in sorted(set(settings) - set(_LLM_KEYS)):
        problems.append((f".{key}.{name}", f"is not an LLM setting upstream Potato knows; valid: {', '.join(_LLM_KEYS)}"))
    if settings.get("endpoint_url"):
        problems.append((f".{key}.endpoint_url", unsupported_message(
            "endpoint_url", "asking an LLM served at a URL (here the LLM runs where the training runs: set "
            "model_name to a Hugging Face Hub name, or a model folder or .gguf file on the training host)")))
    if settings.get("use_mock"):
        problems.append((f".{key}.use_mock", unsupported_message(
            "use_mock", "a stand-in LLM that makes its answers up (here a real LLM reads every item)")))
    method = settings.get("confidence_method", "logprobs")
    if method != "logprobs":
        problems.append((f".{key}.confidence_method", unsupported_message(
            f"confidence_method: {method}", "confidences the LLM writes as text (here each label's probability is "
            "the model's own likelihood of it, as confidence_method: logprobs)")))
    for name in _LLM_IGNORED:
        if name in settings:
            findings.warn(f"active_learning.{key}.{name}", "is ignored here: nothing is generated, each label's "
                          "likelihood is read")
    params: dict[str, object] = {}
    if settings.get("model_name"):
        params["base_model"] = str(settings["model_name"])
    if isinstance(settings.get("batch_size"), int) and not isinstance(settings.get("batch_size"), bool):
        params["batch_size"] = settings["batch_size"]
    return True, params


def _trainer(values: dict[str, Any], problems: list[tuple[str, str]]) -> str | None:
    """Our ``trainer`` key, else the trainer upstream's classifier and vectorizer are (None: the
    project's default trainer)."""
    trainer = values.get("trainer")
    classifier, vectorizer = values.get("classifier_name"), values.get("vectorizer_name")
    if classifier is None and vectorizer is None:
        return str(trainer) if trainer else None
    pair = (str(classifier or "LogisticRegression").rsplit(".", 1)[-1],
            str(vectorizer or "TfidfVectorizer").rsplit(".", 1)[-1])
    mapped = _TRAINER_OF.get(pair)
    if mapped is None:
        key = "classifier_name" if pair[0] != "LogisticRegression" else "vectorizer_name"
        problems.append((f".{key}", unsupported_message(
            f"{key}: {classifier if key == 'classifier_name' else vectorizer}",
            "training active learning's own scikit-learn model (here a run of one of this server's trainers "
            "orders the items: set active_learning.trainer, e.g. trainer: sklearn-text-classification)")))
        return None
    if trainer and trainer != mapped:
        problems.append((".trainer", f"{show(trainer)} is not the {pair[0]} on {pair[1]} that classifier_name and "
                                     f"vectorizer_name ask for ({mapped}); keep one of them"))
    return mapped


def as_auto_retrain(al: ActiveLearning, backend: str | None) -> AutoRetrain:
    """Active learning's runs, started as automatic runs are: every ``every_n_labels`` labels."""
    return AutoRetrain(enabled=True, every_n_labels=al.every_n_labels, trainer=al.trainer, schemas=al.schemas,
                       backend=al.backend or backend, min_items=al.min_items,
                       min_annotations_per_item=al.min_annotations_per_item)
