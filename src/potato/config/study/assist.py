"""``ai_support``: upstream Potato's AI help for annotators, served by the study's own models or by
an LLM server the admin names.

Two sources. ``endpoint_type: runs``: option highlighting from the shown run's predictions,
zero-shot or fine-tuned, with nothing sent anywhere. ``endpoint_type`` ollama, vllm, openai or
openai_compatible: an OpenAI-compatible chat server is asked, in the background, which options fit
each item (``ai_config``: model, base_url, the key from the environment or a file). The help that
an LLM writes for the annotator (hints, keywords, rationales: ``ai_config.include``) comes from the
server only; every other key of upstream's is honoured or refused by name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

import yaml

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
    section,
    show,
    text,
    text_list,
)
from potato.config._files import resolve
from potato.config.schema import AiSupport, AssistHoldout, LlmService, OptionHighlighting
from potato.config.upstream import unsupported_message

KEYS = ("ai_support",)
"""The top-level key this module reads."""

RUNS = "runs"
"""``endpoint_type`` for the project's own runs (this server's own value: nothing leaves the machine)."""
DEFAULT_URLS: Mapping[str, str | None] = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
    "openai": "https://api.openai.com/v1",
    "openai_compatible": None,
}
"""Upstream's OpenAI-compatible sources and where each listens unless ``base_url`` says otherwise."""
SERVED_BY_AN_LLM = tuple(DEFAULT_URLS)
TRAIN_ON = ("all", "unhelped")
"""``assist_holdout.train_on``: every annotator's labels, or only the control group's."""
HIGHLIGHTED_TYPES = ("radio", "multiselect")
"""Schemes whose options a run's predictions (or an LLM) rank."""
NEEDS_A_KEY = ("openai",)
HELP_KINDS = ("hint", "keyword", "rationale")
"""What ``ai_config.include.all`` turns on (:data:`potato.study.llm_help.HELP_KINDS`)."""
ENV_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
"""``${NAME}``: upstream's way to take a value (the key, above all) from the environment."""

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
    "assist_holdout": section({"share": number(0, 1, open_low=True, open_high=True),
                               "train_on": choice(TRAIN_ON, "ai_support.assist_holdout.train_on")},
                              "ai_support.assist_holdout", "{share: 0.2}"),
}

_SERVICE: Mapping[str, Check] = {
    "model": text(),
    "base_url": text(),
    "api_key": text(),
    "api_key_file": text(),
    "temperature": number(0, 2, open_low=False),
    "max_tokens": integer(1, 100000),
    "timeout": number(0, 600, open_low=True),
    "calls_per_minute": integer(1, 100000),
    "max_calls": integer(1),
    "include": section({"all": boolean, "special_include": anything}, "ai_support.ai_config.include",
                       "{all: true}"),
    "think": boolean,
    "hint_prompt": text(),
    "keyword_prompt": text(),
}
"""``ai_config`` with an LLM server: upstream's keys, and the two limits this server adds."""

_CACHE: Mapping[str, Check] = {
    "disk_cache": section({"enabled": boolean, "path": text()}, "ai_support.cache_config.disk_cache",
                          "{enabled: true, path: annotation_output/ai_cache.json}"),
    "prefetch": section({"warm_up_page_count": integer(0, 10000), "on_next": integer(0, 10000),
                         "on_prev": integer(0, 10000)}, "ai_support.cache_config.prefetch",
                        "{warm_up_page_count: 0, on_next: 3, on_prev: 1}"),
}

_REFUSED: Mapping[str, str] = {
    "features": "AI tools for image and video annotation",
    "visual_endpoint_type": "a second AI service for images and video",
    "visual_ai_config": "a second AI service for images and video",
    "model_module": "output formats of one's own for the AI service's answers",
    "annotation_path": "prompt files of one's own for the AI service",
}
"""Upstream keys refused whenever given."""

Problems = list[tuple[str, str]]


def check_ai_support(raw: object, scheme_types: Mapping[str, str | None], findings: Findings,
                     config_dir: Path | None = None) -> AiSupport | None:
    """The section, or None when it is wrong (each problem reported); off when absent or ``enabled``
    is not true (upstream reads nothing else then either). ``ai_config_file`` is read relative to
    ``config_dir``, as upstream reads it: the one file this check opens."""
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
    if "ai_config_file" in values and not problems:
        if not _merge_ai_config_file(values, config_dir or Path("."), problems, findings):
            _check_shapes(values, problems)  # off, but a mistake in what is there is still said now
            if problems:
                findings.errors_at("ai_support", problems)
                return None
            return AiSupport()  # upstream's examples ship only the file's .example: AI help is off
    kind = _check_source(values, problems)
    if problems:
        findings.errors_at("ai_support", problems)
        return None
    service = None
    help_kinds: tuple[str, ...] = ()
    if kind == RUNS:
        _check_runs_ai_config(values.pop("ai_config", None), problems, findings)
    else:
        raw_ai = values.pop("ai_config", None)
        service = check_service(str(kind), raw_ai, values.pop("cache_config", None),
                                 values.get("option_highlighting"), config_dir or Path("."), problems, findings)
        include = raw_ai.get("include") if isinstance(raw_ai, dict) else None
        help_kinds = HELP_KINDS if isinstance(include, dict) and include.get("all") is True else ()
    if kind == RUNS:
        _check_runs_cache(values.pop("cache_config", None), problems, findings)
    highlighting = _option_highlighting(values.get("option_highlighting"), scheme_types, str(kind), problems, findings,
                                        quiet=bool(help_kinds))
    holdout = _holdout(values.get("assist_holdout"), problems)
    findings.errors_at("ai_support", problems)
    if problems:
        return None
    return AiSupport(enabled=True, source=str(kind), option_highlighting=highlighting, service=service,
                     holdout=holdout, help_kinds=help_kinds,
                     help_schemas=highlightable(scheme_types) if help_kinds else ())


def _holdout(values: Mapping[str, Any] | None, problems: Problems) -> AssistHoldout | None:
    """``assist_holdout`` (this server's key): the control group's share; ``share`` is required."""
    if values is None:
        return None
    if "share" not in values:
        problems.append((".assist_holdout.share", "missing; say which share of annotators sees no AI help, e.g. "
                                                  "share: 0.2"))
        return None
    return AssistHoldout(share=float(values["share"]), train_on=values.get("train_on", "all"))


def _merge_ai_config_file(values: dict[str, Any], config_dir: Path, problems: Problems, findings: Findings) -> bool:
    """Upstream's ``ai_config_file``: a YAML file whose ``endpoint_type`` is ai_support's and whose other
    keys join ``ai_config`` (the file's win). A missing file turns the help off with a warning, as
    upstream does: its examples ship only ``ai-config.yaml.example``. False when the help is off."""
    path = resolve(config_dir, values.pop("ai_config_file"))
    if not path.is_file():
        findings.warn("ai_support.ai_config_file", f"{path} does not exist, so AI help is off; write the service's "
                                                   "settings there (endpoint_type, model, base_url) to turn it on")
        return False
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError, RecursionError) as exc:
        problems.append((".ai_config_file", f"{path} cannot be read as YAML ({str(exc).splitlines()[0]}); fix the "
                                            "file or remove ai_config_file"))
        return True
    if not isinstance(loaded, dict):
        problems.append((".ai_config_file", f"{path} must hold a mapping such as endpoint_type: ollama, model: "
                                            f"qwen3:0.6b; got {show(loaded)}"))
        return True
    loaded = dict(loaded)
    if "endpoint_type" in loaded:
        values["endpoint_type"] = loaded.pop("endpoint_type")
    inline = values.get("ai_config")
    values["ai_config"] = {**(inline if isinstance(inline, dict) else {}), **loaded}
    return True


def _check_shapes(values: Mapping[str, Any], problems: Problems) -> None:
    """``ai_config`` and ``cache_config`` checked for their keys and values alone (no source to judge
    them by)."""
    for key, table in (("ai_config", _SERVICE), ("cache_config", _CACHE)):
        raw = values.get(key)
        if raw is None:
            continue
        try:
            _, found = check_keys(mapping(raw, "{...}"), table, f"ai_support.{key}")
        except Invalid as bad:
            found = bad.problems
        problems.extend((f".{key}" + at, detail) for at, detail in found)


def _check_source(values: dict[str, Any], problems: Problems) -> str | None:
    """``endpoint_type``: the project's runs or an OpenAI-compatible server; others are refused with
    what to use."""
    kind = values.get("endpoint_type")
    if kind is None:
        problems.append((".endpoint_type", f"missing; set endpoint_type: {RUNS} to help annotators with the "
                                           "project's own trained models (nothing leaves this machine), or "
                                           "openai_compatible with ai_config.base_url to ask an LLM server"))
    elif kind not in (RUNS, *SERVED_BY_AN_LLM):
        problems.append((".endpoint_type", unsupported_message(
            f"endpoint_type: {kind}", f"AI help from {show(kind)}; set endpoint_type: {RUNS} to highlight options "
            "from the project's own trained models, or openai_compatible with ai_config.base_url for any server "
            "that speaks OpenAI's chat API (many gateways serve other vendors' models that way)")))
    return kind


def check_service(kind: str, raw: object, cache: object, highlighting: Mapping[str, Any] | None, config_dir: Path,
                  problems: Problems, findings: Findings, at: str = "ai_support",
                  inner: str = ".ai_config") -> LlmService | None:
    """``ai_config`` (and ``cache_config``'s prefetch) for an OpenAI-compatible server, under ``at``
    (``ai_support``, or ``chat_support``, which names its server the same way)."""
    example = "{model: qwen3:0.6b, base_url: http://localhost:11434}"
    try:
        values, found = check_keys(mapping(raw if raw is not None else {}, example), _SERVICE, f"{at}{inner}")
    except Invalid as bad:
        problems.extend((inner + at, detail) for at, detail in bad.problems)
        return None
    problems.extend((inner + at, detail) for at, detail in found)
    include = values.get("include") or {}
    if include.get("special_include"):
        problems.append((inner + ".include.special_include", unsupported_message(
            "special_include", "choosing the assistants per item position and question; use include: {all: "
            "true} for hints, keywords and rationales beside every radio and multiselect question")))
    for key in ("think", "hint_prompt", "keyword_prompt"):
        if key in values:
            findings.warn(f"{at}{inner}.{key}", "is not used: this server writes its own prompts (Ollama's "
                                                         "thinking stays as the model has it); it is ignored")
    model = values.get("model")
    if not model:
        problems.append((inner + ".model", f"missing; name the model the server at {kind} serves, e.g. model: "
                                             "qwen3:0.6b"))
    base_url = _base_url(kind, values.get("base_url"), problems, inner)
    key_env, key_file = _key_source(kind, values, config_dir, problems, inner)
    if base_url and (key_env or key_file) and _plain_http_elsewhere(base_url):
        findings.warn(f"{at}{inner}.base_url", f"{base_url} is plain http to another machine, so the key "
                                                       "travels unencrypted; use https")
    ahead, warm_up = _prefetch(cache, highlighting, problems, findings)
    if problems or not model or not base_url:
        return None
    return LlmService(kind=kind, base_url=base_url, model=str(model), temperature=float(values.get("temperature", 0.1)),
                      max_tokens=values.get("max_tokens", 100), timeout=float(values.get("timeout", 30)),
                      key_env=key_env, key_file=key_file, calls_per_minute=values.get("calls_per_minute", 60),
                      max_calls=values.get("max_calls"), ahead=ahead, warm_up=warm_up)


def _base_url(kind: str, given: str | None, problems: Problems, inner: str = ".ai_config") -> str | None:
    """Where ``/chat/completions`` is: ``base_url`` (a server's root gets ``/v1``, as Ollama's
    native address does) or the source's usual address; ``${NAME}`` is read from the environment."""
    url = given if given is not None else DEFAULT_URLS[kind]
    if url is None:
        problems.append((inner + ".base_url", "missing; endpoint_type: openai_compatible needs the server's address, "
                                                "e.g. base_url: http://127.0.0.1:8000/v1"))
        return None
    named = ENV_REFERENCE.match(url)
    if named:
        url = os.environ.get(named.group(1), "")
        if not url:
            problems.append((inner + ".base_url", f"${{{named.group(1)}}} is not set in the server's environment; "
                                                    "set it or write the address itself"))
            return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment \
            or parts.username or parts.password:
        problems.append((inner + ".base_url", f"{show(url)} is not a server address; write it as "
                                                "http://host:port/v1 (no user, key or query in it: the key goes in "
                                                "api_key)"))
        return None
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{path or '/v1'}"


def _key_source(kind: str, values: Mapping[str, Any], config_dir: Path,
                problems: Problems, inner: str = ".ai_config") -> tuple[str | None, Path | None]:
    """Where the key is read at each call: ``api_key: ${NAME}`` (the environment) or ``api_key_file``.
    A key written into the config itself is refused: configs are shared, copied and committed."""
    key, key_file = values.get("api_key"), values.get("api_key_file")
    env = None
    if key is not None:
        named = ENV_REFERENCE.match(key)
        if not named:
            problems.append((inner + ".api_key", "holds the key itself, and configs get shared and committed; put "
                                                   "it in an environment variable and write api_key: ${OPENAI_API_KEY}, "
                                                   "or in a file only the server's account reads and write "
                                                   "api_key_file: /path/to/key"))
        else:
            env = named.group(1)
            if not os.environ.get(env):
                problems.append((inner + ".api_key", f"${{{env}}} is not set in the server's environment; set it "
                                                       "where the server starts (it is read at each call)"))
    path = resolve(config_dir, key_file) if key_file is not None else None
    if path is not None and not path.is_file():
        problems.append((inner + ".api_key_file", f"{path} does not exist; write the key there (one line, readable "
                                                    "by the server's account only)"))
    if kind in NEEDS_A_KEY and env is None and path is None and key is None:
        problems.append((inner + ".api_key", f"missing; {kind} needs a key: write api_key: ${{OPENAI_API_KEY}} and "
                                               "set it in the server's environment"))
    return env, path


def _plain_http_elsewhere(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "http" and parts.hostname not in ("localhost", "127.0.0.1", "::1")


def _prefetch(cache: object, highlighting: Mapping[str, Any] | None, problems: Problems,
              findings: Findings) -> tuple[int, int]:
    """How many items ahead of each annotator are asked about, and how many at start. Answers are
    always kept (in the project's database): ``disk_cache`` changes nothing, its ``path`` is unused."""
    values: dict[str, Any] = {}
    if cache is not None:
        try:
            values, found = check_keys(mapping(cache, "{disk_cache: {enabled: true}, prefetch: {on_next: 3}}"), _CACHE,
                                       "ai_support.cache_config")
        except Invalid as bad:
            found = bad.problems
        problems.extend((".cache_config" + at, detail) for at, detail in found)
    if (values.get("disk_cache") or {}).get("path"):
        findings.warn("ai_support.cache_config.disk_cache.path", "is not used: the LLM's answers are always kept, in "
                                                                 "the project's database (readable by the server's "
                                                                 "account only)")
    prefetch = values.get("prefetch") or {}
    counts = [n for n in (prefetch.get("on_next"), (highlighting or {}).get("prefetch_count")) if n is not None]
    return (max(counts) if counts else 5), prefetch.get("warm_up_page_count", 0)


def _check_runs_ai_config(raw: object, problems: Problems, findings: Findings) -> None:
    """``ai_config`` with the project's runs: an outside service's settings mean nothing (a warning);
    ``include`` asks for text an LLM writes (hints, keywords, rationales), which runs do not."""
    if raw is None:
        return
    if not isinstance(raw, dict):
        problems.append((".ai_config", f"must be a mapping, e.g. ai_config: {{include: {{all: false}}}}, got {show(raw)}"))
        return
    include = raw.get("include")
    if isinstance(include, dict) and (include.get("all") or include.get("special_include")):
        problems.append((".ai_config.include", "hints, keywords and rationales are written by an LLM, and "
                                               f"endpoint_type: {RUNS} has none; name an LLM server (endpoint_type: "
                                               "ollama, vllm, openai or openai_compatible) or use "
                                               "option_highlighting alone"))
    ignored = sorted(str(key) for key in raw if key != "include")
    if ignored:
        findings.warn("ai_support.ai_config", f"{', '.join(ignored)} set an outside AI service; with endpoint_type: {RUNS} "
                                   "they change nothing and are ignored")


def _check_runs_cache(raw: object, problems: Problems, findings: Findings) -> None:
    """``cache_config`` with the project's runs: a run's predictions are stored when it ends, so there
    is nothing to cache or fetch ahead; the block is checked for shape and otherwise ignored."""
    if raw is None:
        return
    if not isinstance(raw, dict):
        problems.append((".cache_config", f"must be a mapping, e.g. cache_config: {{disk_cache: {{enabled: true}}}}, "
                                          f"got {show(raw)}"))
        return
    findings.warn("ai_support.cache_config", f"is ignored with endpoint_type: {RUNS}: a run's predictions are stored when "
                                  "it ends, so annotators never wait for them")


def _option_highlighting(values: dict[str, Any] | None, scheme_types: Mapping[str, str | None], kind: str,
                         problems: Problems, findings: Findings, quiet: bool = False) -> OptionHighlighting | None:
    """The highlighted schemes (default: every radio and multiselect scheme) and how; ``quiet``: other
    help is on, so no highlighting is no warning."""
    if not values or not values.get("enabled", False):
        if quiet:
            return None
        shows = "beyond the model suggestions" if kind == RUNS else "(it asks the LLM server nothing)"
        findings.warn("ai_support.option_highlighting", f"is off, so ai_support with endpoint_type: {kind} shows "
                                                        f"nothing {shows}; set option_highlighting: {{enabled: true}}")
        return None
    if values.get("auto_apply", True) is False:
        problems.append((".option_highlighting.auto_apply", unsupported_message(
            "auto_apply: false", "highlights shown only when a page script asks for them (upstream shows no "
            "button for it either); they are shown with each item: set auto_apply: true or leave it out")))
    named = values.get("schemas")
    ranker = "the project's models rank" if kind == RUNS else "the LLM is asked about"
    for i, name in enumerate(named or ()):
        scheme_type = scheme_types.get(name)
        if name not in scheme_types:
            problems.append((f".option_highlighting.schemas[{i}]", f"{show(name)} names no annotation scheme; "
                                                                   f"schemes: {', '.join(scheme_types) or 'none'}"))
        elif scheme_type not in HIGHLIGHTED_TYPES:
            problems.append((f".option_highlighting.schemas[{i}]", f"{show(name)} is a {scheme_type or 'broken'} "
                                                                   f"scheme; {ranker} the options of radio and "
                                                                   "multiselect schemes"))
    if not any(t in HIGHLIGHTED_TYPES for t in scheme_types.values()):
        problems.append((".option_highlighting", "no radio or multiselect scheme to highlight options of"))
    schemas = tuple(named or ())
    if kind != RUNS and not schemas:  # nothing to be written back: every such scheme is asked about
        schemas = highlightable(scheme_types)
    return OptionHighlighting(schemas=schemas, top_k=values.get("top_k", 3),
                              dim_opacity=float(values.get("dim_opacity", 0.4)))


def highlightable(scheme_types: Mapping[str, str | None], among: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The radio and multiselect schemes (of ``among``, where given): upstream's default."""
    names = among if among is not None else tuple(scheme_types)
    return tuple(n for n in names if scheme_types.get(n) in HIGHLIGHTED_TYPES)
