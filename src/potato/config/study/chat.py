"""``chat_support``: upstream's chat panel beside the item, answered by an LLM server the admin
names the way ``ai_support`` names it (endpoint_type, ai_config)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from potato.config._checks import Check, Findings, Invalid, anything, boolean, check_keys, integer, mapping, section, \
    show, text
from potato.config.schema import ChatSupport
from potato.config.study.assist import SERVED_BY_AN_LLM, check_service
from potato.config.upstream import unsupported_message

KEYS = ("chat_support",)

_KEYS: Mapping[str, Check] = {
    "enabled": boolean,
    "endpoint_type": text(),
    "ai_config": anything,
    "ui": section({"title": text(), "placeholder": text(), "sidebar_width": integer(200, 800),
                   "max_history_per_instance": integer(1, 1000)}, "chat_support.ui", "{title: Ask AI}"),
    "system_prompt": section({"template": text()}, "chat_support.system_prompt",
                             "{template: \"You help annotators of {task_name} ...\"}"),
}


def check_chat(raw: object, findings: Findings, config_dir: Path) -> ChatSupport | None | bool:
    """The chat panel; None when off, False when something is wrong (reported)."""
    if raw is None:
        return None
    try:
        values, problems = check_keys(mapping(raw, "{enabled: true, endpoint_type: ollama, ai_config: {model: "
                                                   "llama3.2}}"), _KEYS, "chat_support")
    except Invalid as bad:
        findings.errors_at("chat_support", bad.problems)
        return False
    if not values.get("enabled", False):
        if problems:
            findings.errors_at("chat_support", problems)
            return False
        return None
    kind = values.get("endpoint_type")
    if kind is None:
        problems.append((".endpoint_type", "missing; name the LLM server: endpoint_type: ollama, vllm, openai or "
                                           "openai_compatible (with ai_config.base_url)"))
    elif kind not in SERVED_BY_AN_LLM:
        problems.append((".endpoint_type", unsupported_message(
            f"endpoint_type: {kind}", f"a chat with {show(kind)}; use openai_compatible with ai_config.base_url for "
            "any server that speaks OpenAI's chat API")))
    if problems:
        findings.errors_at("chat_support", problems)
        return False
    service = check_service(str(kind), values.get("ai_config"), None, None, config_dir, problems, findings,
                            at="chat_support")
    findings.errors_at("chat_support", problems)
    if problems or service is None:
        return False
    ui: dict[str, Any] = values.get("ui") or {}
    return ChatSupport(service=service, title=ui.get("title", "Ask AI"),
                       placeholder=ui.get("placeholder", "Ask about this annotation..."),
                       sidebar_width=ui.get("sidebar_width", 380), max_history=ui.get("max_history_per_instance", 50),
                       template=(values.get("system_prompt") or {}).get("template"))
