"""AI help for annotators from the project's own runs (``ai_support``), the pure part: which of a
question's options stay bright when option highlighting is on.

The options are ranked by the shown run's probabilities (zero-shot or fine-tuned): the ``top_k``
most likely stay as they are, the rest are dimmed. An item without the run's probabilities (under
``min_confidence``, left out by the writeback, a run from before they were kept) gets no
highlighting: annotators then see the question as it is, never a guess.
"""

from __future__ import annotations

from typing import Any, Mapping

from potato.config.schema import AiSupport


def top_options(probabilities: Mapping[str, float], top_k: int) -> list[str]:
    """The ``top_k`` most probable options, most probable first (ties in the options' names' order)."""
    ranked = sorted(probabilities.items(), key=lambda pair: (-pair[1], pair[0]))
    return [label for label, _ in ranked[:top_k]]


def option_highlights(assist: AiSupport, suggestions: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Per highlighted schema with the run's probabilities for this item, the options that stay bright."""
    highlighting = assist.option_highlighting
    if not assist.enabled or highlighting is None:
        return {}
    out: dict[str, list[str]] = {}
    for schema in highlighting.schemas:
        probabilities = (suggestions.get(schema) or {}).get("probabilities")
        if isinstance(probabilities, dict) and probabilities:
            out[schema] = top_options(probabilities, highlighting.top_k)
    return out
