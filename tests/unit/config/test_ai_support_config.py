"""``ai_support`` as upstream Potato writes it (issue 44): served from the project's own runs
(``endpoint_type: runs``) or an OpenAI-compatible server, each upstream key honoured or refused by name with what to use instead."""

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
        "trained models (nothing leaves this machine), or openai_compatible with ai_config.base_url to ask an LLM "
        "server"]
    [anthropic] = _errors({"enabled": True, "endpoint_type": "anthropic"})
    assert anthropic.startswith("ai_support.endpoint_type: 'endpoint_type: anthropic' is a Potato feature this "
                                "server does not support")
    assert "openai_compatible with ai_config.base_url" in anthropic


LLM = {"enabled": True, "endpoint_type": "ollama", "ai_config": {"model": "qwen3:0.6b"},
       "option_highlighting": {"enabled": True}}


def test_an_llm_server_is_upstreams_endpoint_with_its_usual_address() -> None:
    report = report_of(upstream(ai_support=LLM))
    assert report.errors == []
    assist = report.config.ai_support
    assert (assist.source, assist.service.base_url, assist.service.model) == (
        "ollama", "http://localhost:11434/v1", "qwen3:0.6b")
    assert assist.option_highlighting.schemas == ("sentiment",)
    assert not report.config.model_training.enabled  # nothing to train: the LLM is asked instead
    assert (assist.service.temperature, assist.service.max_tokens, assist.service.ahead) == (0.1, 100, 5)


def test_an_llm_servers_address_limits_and_prefetch_are_read() -> None:
    report = report_of(upstream(ai_support={
        **LLM, "endpoint_type": "openai_compatible",
        "ai_config": {"model": "m", "base_url": "http://127.0.0.1:8000/", "temperature": 0.3, "max_tokens": 256,
                      "timeout": 5, "calls_per_minute": 10, "max_calls": 500},
        "option_highlighting": {"enabled": True, "prefetch_count": 2},
        "cache_config": {"disk_cache": {"enabled": True}, "prefetch": {"warm_up_page_count": 4, "on_next": 3,
                                                                       "on_prev": 1}}}))
    assert report.errors == [] and not [w for w in messages(report.warnings) if w.startswith("ai_support")]
    service = report.config.ai_support.service
    assert service.base_url == "http://127.0.0.1:8000/v1"  # a server's root: OpenAI's API under /v1
    assert (service.timeout, service.calls_per_minute, service.max_calls, service.ahead, service.warm_up) == (
        5.0, 10, 500, 3, 4)
    assert _errors({**LLM, "endpoint_type": "openai_compatible"}) == [
        "ai_support.ai_config.base_url: missing; endpoint_type: openai_compatible needs the server's address, e.g. "
        "base_url: http://127.0.0.1:8000/v1"]
    assert _errors({**LLM, "ai_config": {}}) == [
        "ai_support.ai_config.model: missing; name the model the server at ollama serves, e.g. model: qwen3:0.6b"]
    assert _errors({**LLM, "ai_config": {"model": "m", "base_url": "ftp://x"}})[0].startswith(
        "ai_support.ai_config.base_url: 'ftp://x' is not a server address")


def test_include_all_puts_hints_keywords_and_rationales_beside_each_choice_question() -> None:
    report = report_of(upstream(ai_support={**LLM, "ai_config": {"model": "m", "include": {"all": True}},
                                            "option_highlighting": {"enabled": False}}))
    assert report.errors == [] and not [w for w in messages(report.warnings) if w.startswith("ai_support")]
    assist = report.config.ai_support
    assert (assist.help_kinds, assist.help_schemas, assist.option_highlighting) == (
        ("hint", "keyword", "rationale"), ("sentiment",), None)


def test_the_key_comes_from_the_environment_or_a_file_never_the_config(tmp_path: Any, monkeypatch: Any) -> None:
    openai = {**LLM, "endpoint_type": "openai", "ai_config": {"model": "gpt-4o-mini"}}
    assert _errors(openai) == [
        "ai_support.ai_config.api_key: missing; openai needs a key: write api_key: ${OPENAI_API_KEY} and set it in "
        "the server's environment"]
    [written] = _errors({**openai, "ai_config": {"model": "m", "api_key": "sk-abc123"}})
    assert written.startswith("ai_support.ai_config.api_key: holds the key itself") and "sk-abc123" not in written
    monkeypatch.delenv("POTATO_TEST_KEY", raising=False)
    assert _errors({**openai, "ai_config": {"model": "m", "api_key": "${POTATO_TEST_KEY}"}}) == [
        "ai_support.ai_config.api_key: ${POTATO_TEST_KEY} is not set in the server's environment; set it where the "
        "server starts (it is read at each call)"]
    monkeypatch.setenv("POTATO_TEST_KEY", "sk-secret")
    service = report_of(upstream(ai_support={**openai, "ai_config": {"model": "m", "api_key": "${POTATO_TEST_KEY}"}})
                        ).config.ai_support.service
    assert service.key_env == "POTATO_TEST_KEY" and "sk-secret" not in repr(service)
    key = tmp_path / "key"
    key.write_text("sk-file\n")
    service = report_of(upstream(ai_support={**openai, "ai_config": {"model": "m", "api_key_file": str(key)}})
                        ).config.ai_support.service
    assert service.key_file == key and "sk-file" not in repr(service)
    warned = messages(report_of(upstream(ai_support={
        **openai, "ai_config": {"model": "m", "api_key_file": str(key), "base_url": "http://gpu.lab:8000/v1"}})).warnings)
    assert ("ai_support.ai_config.base_url: http://gpu.lab:8000/v1 is plain http to another machine, so the key "
            "travels unencrypted; use https") in warned


def test_ai_config_file_is_read_beside_the_config_and_a_missing_one_turns_the_help_off(tmp_path: Any) -> None:
    from potato.config.validate import validate

    raw = upstream(ai_support={"enabled": True, "ai_config_file": "ai-config.yaml",
                               "ai_config": {"temperature": 0.7, "include": {"all": False}},
                               "option_highlighting": {"enabled": True}})
    config_path = tmp_path / "config.yaml"
    report = validate(raw, config_path)
    assert report.errors == [] and not report.config.ai_support.enabled
    assert messages(report.warnings)[-1:] == [
        f"ai_support.ai_config_file: {tmp_path / 'ai-config.yaml'} does not exist, so AI help is off; write the "
        "service's settings there (endpoint_type, model, base_url) to turn it on"]
    (tmp_path / "ai-config.yaml").write_text("endpoint_type: vllm\nmodel: qwen\nbase_url: http://127.0.0.1:9/v1\n")
    report = validate(raw, config_path)
    assert report.errors == []
    service = report.config.ai_support.service
    assert (service.kind, service.model, service.base_url, service.temperature) == (
        "vllm", "qwen", "http://127.0.0.1:9/v1", 0.7)
    (tmp_path / "ai-config.yaml").write_text("- not a mapping\n")
    assert messages(validate(raw, config_path).errors)[0].startswith(
        f"ai_support.ai_config_file: {tmp_path / 'ai-config.yaml'} must hold a mapping")


def test_what_needs_an_llm_that_writes_text_is_refused_by_name() -> None:
    assert _errors({**RUNS, "ai_config": {"include": {"all": True}}}) == [
        "ai_support.ai_config.include: hints, keywords and rationales are written by an LLM, and endpoint_type: runs "
        "has none; name an LLM server (endpoint_type: ollama, vllm, openai or openai_compatible) or use "
        "option_highlighting alone"]
    [auto] = _errors({**RUNS, "option_highlighting": {"enabled": True, "auto_apply": False}})
    assert "set auto_apply: true or leave it out" in auto
    assert _errors({**RUNS, "features": {"keyword_highlight": True}})[0].startswith(
        "ai_support.features: 'features' is a Potato feature this server does not support")
    [special] = _errors({**LLM, "ai_config": {"model": "m", "include": {"special_include": {"0": {"0": ["hint"]}}}}})
    assert special.startswith("ai_support.ai_config.include.special_include: 'special_include' is a Potato feature "
                              "this server does not support") and "use include: {all: true}" in special


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
