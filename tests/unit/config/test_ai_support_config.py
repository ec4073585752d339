"""``ai_support`` as upstream Potato writes it (issue 44): served from the project's own runs
(``endpoint_type: runs``), each upstream key honoured or refused by name with what to use instead."""

from __future__ import annotations

from typing import Any

from tests.unit.test_upstream_configs import messages, report_of, upstream

RUNS = {"enabled": True, "endpoint_type": "runs", "option_highlighting": {"enabled": True}}


def _errors(ai_support: Any, **top: Any) -> list[str]:
    return messages(report_of(upstream(ai_support=ai_support, **top)).errors)


def test_option_highlighting_from_the_projects_runs_with_upstreams_defaults() -> None:
    report = report_of(upstream(ai_support=RUNS))
    assert report.errors == []
    assist = report.config.ai_support
    assert (assist.enabled, assist.source) == (True, "runs")
    assert assist.option_highlighting.top_k == 3 and assist.option_highlighting.dim_opacity == 0.4
    assert assist.option_highlighting.schemas == ("sentiment",)  # every radio and multiselect scheme
    training = report.config.model_training  # an upstream config has none: training turns on, writing back rankings
    assert training.enabled and training.writeback.schemas == ("sentiment",) and training.writeback.include_unlabeled


def test_upstreams_option_highlight_keys_are_read() -> None:
    report = report_of(upstream(ai_support={**RUNS, "option_highlighting": {
        "enabled": True, "top_k": 2, "dim_opacity": 0.25, "auto_apply": True, "schemas": ["sentiment"],
        "prefetch_count": 10}}))
    assert report.errors == []
    highlighting = report.config.ai_support.option_highlighting
    assert (highlighting.top_k, highlighting.dim_opacity, highlighting.schemas) == (2, 0.25, ("sentiment",))
    assert _errors({**RUNS, "option_highlighting": {"enabled": True, "top_k": 11}}) == [
        "ai_support.option_highlighting.top_k: must be a whole number from 1 to 10, got 11"]
    assert _errors({**RUNS, "option_highlighting": {"enabled": True, "dim_opacity": 1}})[0].startswith(
        "ai_support.option_highlighting.dim_opacity: must be a number at least 0.1 and at most 0.9")


def test_a_source_this_server_does_not_serve_says_what_to_use() -> None:
    assert _errors({"enabled": True}) == [
        "ai_support.endpoint_type: missing; set endpoint_type: runs to help annotators with the project's own "
        "trained models (nothing leaves this machine)"]
    [ollama] = _errors({"enabled": True, "endpoint_type": "ollama", "ai_config": {"model": "llama3"}})
    assert ollama.startswith("ai_support.endpoint_type: 'endpoint_type: ollama' is a Potato feature this server "
                             "does not support: asking an outside LLM server for the help")
    assert "set endpoint_type: runs" in ollama
    assert _errors({"enabled": True, "endpoint_type": "anthropic"})[0].startswith(
        "ai_support.endpoint_type: 'endpoint_type: anthropic' is a Potato feature this server does not support")


def test_what_needs_an_llm_that_writes_text_is_refused_by_name() -> None:
    [include] = _errors({**RUNS, "ai_config": {"include": {"all": True}}})
    assert include.startswith("ai_support.ai_config.include: 'ai_config.include' is a Potato feature this server "
                              "does not support: hints, keyword boxes and rationales")
    assert "use option_highlighting" in include
    [auto] = _errors({**RUNS, "option_highlighting": {"enabled": True, "auto_apply": False}})
    assert "set auto_apply: true or leave it out" in auto
    assert _errors({**RUNS, "features": {"keyword_highlight": True}})[0].startswith(
        "ai_support.features: 'features' is a Potato feature this server does not support")
    assert "ai_config_file" in _errors({**RUNS, "ai_config_file": "ai-config.yaml"})[0]


def test_settings_for_an_outside_service_are_ignored_with_a_warning() -> None:
    report = report_of(upstream(ai_support={**RUNS, "ai_config": {"model": "x", "temperature": 0.2},
                                            "cache_config": {"disk_cache": {"enabled": True}}}))
    assert report.errors == []
    warned = messages(report.warnings)
    assert ("ai_support.ai_config: model, temperature set an outside AI service; with endpoint_type: runs they "
            "change nothing and are ignored") in warned
    assert any(w.startswith("ai_support.cache_config: is ignored with endpoint_type: runs") for w in warned)


def test_highlighting_needs_what_the_runs_write_back() -> None:
    named = {**RUNS, "option_highlighting": {"enabled": True, "schemas": ["sentiment"]}}
    training = {"enabled": True, "writeback": {"schemas": []}}
    assert _errors(named, model_training=training) == [
        "ai_support.option_highlighting.schemas: sentiment is not written back, so no run's ranking of its options "
        "reaches the page; add it to model_training.writeback.schemas"]
    assert _errors(RUNS, model_training=training) == [
        "ai_support.option_highlighting: no radio or multiselect scheme is written back, so no run's ranking "
        "reaches the page; add one to model_training.writeback.schemas"]
    assert _errors(RUNS, model_training={"enabled": False}) == [
        "ai_support.endpoint_type: runs needs the project's trained models, and model_training says enabled: false; "
        "set it to true"]


def test_ai_support_turned_off_is_off() -> None:
    report = report_of(upstream(ai_support={"enabled": False, "endpoint_type": "ollama"}))
    assert report.errors == [] and not report.config.ai_support.enabled
