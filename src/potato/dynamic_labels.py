"""Labels taken from each item (pure): upstream's ``dynamic_labels``, whose label names are templates
such as ``{{instance_obj.labels[0]}}`` filled from the item being shown.

A template names a key of the item and, for a list, a place in it; a label whose template the item
cannot fill is not offered on that item. An answer holds the labels as the item fills them, and is
checked against them, so it always says what the annotator read.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

TEMPLATE = re.compile(r"\{\{\s*instance_obj\.([A-Za-z_]\w*)(?:\[(\d+)\])?\s*\}\}")
"""One template in a label's name: ``{{instance_obj.key}}`` or ``{{instance_obj.key[n]}}``."""


class BadDynamicLabel(ValueError):
    """An answer naming a label the item does not offer; the message lists those it does."""


def template_problem(name: str) -> str | None:
    """Why a label name is no template an item can fill, or None (pure)."""
    if not TEMPLATE.search(name):
        return f"{name!r} holds no {{{{instance_obj.<key>}}}} or {{{{instance_obj.<key>[n]}}}} to fill from the item"
    rest = TEMPLATE.sub("", name)
    if "{{" in rest or "}}" in rest:
        return (f"{name!r} holds a template other than {{{{instance_obj.<key>}}}} or {{{{instance_obj.<key>[n]}}}}, "
                "which this server cannot fill")
    return None


def _filled(match: re.Match[str], data: Mapping[str, Any]) -> str | None:
    value = data.get(match.group(1))
    if match.group(2) is not None:
        n = int(match.group(2))
        value = value[n] if isinstance(value, list) and n < len(value) else None
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def item_labels(names: Sequence[str], data: Mapping[str, Any]) -> list[str]:
    """The labels an item offers: each template filled from ``data``, in order; one the item cannot
    fill, or a label already offered, is left out."""
    out: list[str] = []
    for name in names:
        missing = False

        def fill(match: re.Match[str]) -> str:
            nonlocal missing
            got = _filled(match, data)
            missing = missing or got is None
            return got or ""

        label = TEMPLATE.sub(fill, name).strip()
        if not missing and label and label not in out:
            out.append(label)
    return out


def checked_labels(value: Any, offered: Sequence[str]) -> Any:
    """``value`` (a label, or a list of them) when each is one the item offers."""
    for label in value if isinstance(value, list) else [value]:
        if label not in offered:
            raise BadDynamicLabel(f"this item offers {', '.join(map(repr, offered)) or 'no labels'}; not {label!r}")
    return value
