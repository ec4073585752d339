"""The chat panel (``chat_support``), the pure part: the system prompt that puts the item before the
LLM, and the turns sent with each question.

Upstream's default prompt in substance: the task, its labels and the item's text, and the rule
that the assistant helps the annotator think, without choosing the label for them. An admin's
``system_prompt.template`` may use {task_name}, {task_description}, {annotation_labels},
{instance_text} and {instance_id}; nothing else in it is read as a placeholder, so braces in a
template (or in an item) are kept as written.
"""

from __future__ import annotations

from typing import Mapping, Sequence

DEFAULT_TEMPLATE = ('You are an annotation assistant for the task "{task_name}". Task description: {task_description}\n'
                    "Available labels: {annotation_labels}\n"
                    "The annotator is currently looking at this text:\n---\n{instance_text}\n---\n"
                    "Help the annotator think the item through: point at what in the text matters and how the labels "
                    "differ. Do NOT tell the annotator which label to choose.")
PLACES = ("task_name", "task_description", "annotation_labels", "instance_text", "instance_id")


def system_prompt(template: str | None, values: Mapping[str, str]) -> str:
    out = template or DEFAULT_TEMPLATE
    for name in PLACES:
        out = out.replace("{" + name + "}", values.get(name, ""))
    return out


def chat_messages(system: str, history: Sequence[tuple[str, str]], question: str) -> list[dict[str, str]]:
    """The system prompt, the earlier turns (role, content) and the new question."""
    return [{"role": "system", "content": system}, *({"role": r, "content": c} for r, c in history),
            {"role": "user", "content": question}]
