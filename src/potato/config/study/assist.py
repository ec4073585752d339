"""``ai_support``: upstream Potato's AI help for annotators, served by the study's own models.

Upstream asks an outside LLM service (Ollama, vLLM, OpenAI, ...) for hints, keyword boxes,
rationales and highlighted options. Here the first source is the project's own runs
(``endpoint_type: runs``): option highlighting from the shown run's predictions, zero-shot or
fine-tuned, with nothing sent anywhere. An OpenAI-compatible server as the source, and the help that
needs an LLM to write text (hints, keywords, rationales), are refused by name until this server
serves them; every other key of upstream's is honoured or refused by name.
"""

from __future__ import annotations

from typing import Any, Mapping

from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    anything,
    boolean,
    check_keys,
    integer,
    mapping,
    number,
    section,
    show,
    text,
    text_list,
)
from potato.config.schema import AiSupport, OptionHighlighting
from potato.config.upstream import unsupported_message

KEYS = ("ai_support",)
"""The top-level key this module reads."""

RUNS = "runs"
"""``endpoint_type`` for the project's own runs (this server's own value: nothing leaves the machine)."""
SERVED_BY_AN_LLM = ("ollama", "vllm", "openai", "openai_compatible")
"""Upstream's OpenAI-compatible sources."""
HIGHLIGHTED_TYPES = ("radio", "multiselect")
"""Schemes whose options a run's predictions rank."""

_HIGHLIGHTING: Mapping[str, Check] = {
    "enabled": boolean,
    "top_k": integer(1, 10),
    "dim_opacity": number(0.1, 0.9, open_low=False),
    "auto_apply": boolean,
    "schemas": text_list('["sentiment"]', unique=True),
    "prefetch_count": integer(0, 100),
}

_KEYS: Mapping[str, Check] = {
    "enabled": boolean,
    "endpoint_type": text(),
    "option_highlighting": section(_HIGHLIGHTING, "ai_support.option_highlighting",
                                   "{enabled: true, top_k: 3, dim_opacity: 0.4}"),
    "cache_config": anything,
    "ai_config": anything,
    "ai_config_file": text(),
    "features": anything,
    "visual_endpoint_type": anything,
    "visual_ai_config": anything,
    "model_module": anything,
    "annotation_path": anything,
}

_REFUSED: Mapping[str, str] = {
    "features": "AI tools for image and video annotation",
    "visual_endpoint_type": "a second AI service for images and video",
    "visual_ai_config": "a second AI service for images and video",
    "model_module": "output formats of one's own for the AI service's answers",
    "annotation_path": "prompt files of one's own for the AI service",
}
"""Upstream keys refused whenever given."""


def check_ai_support(raw: object, scheme_types: Mapping[str, str | None], findings: Findings) -> AiSupport | None:
    """The section, or None when it is wrong (each problem reported); off when absent or ``enabled``
    is not true (upstream reads nothing else then either)."""
    if raw is None:
        return AiSupport()
    try:
        values, problems = check_keys(mapping(raw, "{enabled: true, endpoint_type: runs, option_highlighting: "
                                                   "{enabled: true}}"), _KEYS, "ai_support")
    except Invalid as bad:
        findings.errors_at("ai_support", bad.problems)
        return None
    if not values.get("enabled", False):
        if problems:
            findings.errors_at("ai_support", problems)
            return None
        return AiSupport()
    for key, what in _REFUSED.items():
        if values.pop(key, None) not in (None, False, {}, []):
            problems.append((f".{key}", unsupported_message(key, what)))
    _check_source(values, problems)
    if problems:  # what follows is said of the project's runs as the source
        findings.errors_at("ai_support", problems)
        return None
    _check_ai_config(values.pop("ai_config", None), problems, findings)
    _check_cache(values.pop("cache_config", None), problems, findings)
    highlighting = _option_highlighting(values.get("option_highlighting"), scheme_types, problems, findings)
    findings.errors_at("ai_support", problems)
    if problems:
        return None
    return AiSupport(enabled=True, source=RUNS, option_highlighting=highlighting)


def _check_source(values: dict[str, Any], problems: list[tuple[str, str]]) -> None:
    """``endpoint_type``: the project's runs; an outside service is refused with what to use now."""
    if "ai_config_file" in values:
        problems.append((".ai_config_file", unsupported_message(
            "ai_config_file", "reading an outside AI service's settings from a file of their own (with "
            f"endpoint_type: {RUNS} no settings are needed)")))
    kind = values.get("endpoint_type")
    if kind is None:
        problems.append((".endpoint_type", f"missing; set endpoint_type: {RUNS} to help annotators with the "
                                           "project's own trained models (nothing leaves this machine)"))
    elif kind in SERVED_BY_AN_LLM:
        problems.append((".endpoint_type", unsupported_message(
            f"endpoint_type: {kind}", "asking an outside LLM server for the help (not yet in this version); set "
            f"endpoint_type: {RUNS} to highlight options from the project's own trained models, zero-shot "
            "(llm-zero-shot) or fine-tuned")))
    elif kind != RUNS:
        problems.append((".endpoint_type", unsupported_message(
            f"endpoint_type: {kind}", f"AI help from {show(kind)}; set endpoint_type: {RUNS} to highlight "
            "options from the project's own trained models")))


def _check_ai_config(raw: object, problems: list[tuple[str, str]], findings: Findings) -> None:
    """``ai_config``: an outside service's settings mean nothing with the project's runs (a warning);
    ``include`` asks for text an LLM writes (hints, keywords, rationales), which runs do not."""
    if raw is None:
        return
    if not isinstance(raw, dict):
        problems.append((".ai_config", f"must be a mapping, e.g. ai_config: {{include: {{all: false}}}}, got {show(raw)}"))
        return
    include = raw.get("include")
    if isinstance(include, dict) and (include.get("all") or include.get("special_include")):
        problems.append((".ai_config.include", unsupported_message(
            "ai_config.include", "hints, keyword boxes and rationales, which an LLM writes as text; the project's "
            "runs rank a question's options instead: use option_highlighting")))
    ignored = sorted(str(key) for key in raw if key != "include")
    if ignored:
        findings.warn("ai_support.ai_config", f"{', '.join(ignored)} set an outside AI service; with endpoint_type: {RUNS} "
                                   "they change nothing and are ignored")


def _check_cache(raw: object, problems: list[tuple[str, str]], findings: Findings) -> None:
    """``cache_config``: a run's predictions are stored when it ends, so there is nothing to cache or
    fetch ahead; the block is checked for shape and otherwise ignored."""
    if raw is None:
        return
    if not isinstance(raw, dict):
        problems.append((".cache_config", f"must be a mapping, e.g. cache_config: {{disk_cache: {{enabled: true}}}}, "
                                          f"got {show(raw)}"))
        return
    findings.warn("ai_support.cache_config", f"is ignored with endpoint_type: {RUNS}: a run's predictions are stored when "
                                  "it ends, so annotators never wait for them")


def _option_highlighting(values: dict[str, Any] | None, scheme_types: Mapping[str, str | None],
                         problems: list[tuple[str, str]], findings: Findings) -> OptionHighlighting | None:
    """The highlighted schemes (default: every radio and multiselect scheme) and how."""
    if not values or not values.get("enabled", False):
        findings.warn("ai_support.option_highlighting", f"is off, so ai_support with endpoint_type: {RUNS} shows nothing "
                                             "beyond the model suggestions; set option_highlighting: {enabled: true}")
        return None
    if values.get("auto_apply", True) is False:
        problems.append((".option_highlighting.auto_apply", unsupported_message(
            "auto_apply: false", "highlights shown only when a page script asks for them (upstream shows no "
            "button for it either); they are shown with each item: set auto_apply: true or leave it out")))
    named = values.get("schemas")
    for i, name in enumerate(named or ()):
        kind = scheme_types.get(name)
        if name not in scheme_types:
            problems.append((f".option_highlighting.schemas[{i}]", f"{show(name)} names no annotation scheme; "
                                                                   f"schemes: {', '.join(scheme_types) or 'none'}"))
        elif kind not in HIGHLIGHTED_TYPES:
            problems.append((f".option_highlighting.schemas[{i}]", f"{show(name)} is a {kind or 'broken'} scheme; "
                                                                   "the project's models rank the options of radio "
                                                                   "and multiselect schemes"))
    if not any(kind in HIGHLIGHTED_TYPES for kind in scheme_types.values()):
        problems.append((".option_highlighting", "no radio or multiselect scheme to highlight options of"))
    return OptionHighlighting(schemas=tuple(named or ()), top_k=values.get("top_k", 3),
                              dim_opacity=float(values.get("dim_opacity", 0.4)))


def highlightable(scheme_types: Mapping[str, str | None], among: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The radio and multiselect schemes (of ``among``, where given): upstream's default."""
    names = among if among is not None else tuple(scheme_types)
    return tuple(n for n in names if scheme_types.get(n) in HIGHLIGHTED_TYPES)
