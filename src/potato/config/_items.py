"""``item_properties``, and the fields of an item that spans are marked on.

Separate because the span rule ties three sections together (the schemes, ``item_properties.text_key``
and ``instance_display``) and can only be judged once each of them is valid on its own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from potato.config._checks import Check, Findings, Invalid, section, subset, text
from potato.config.schema import ItemProperties
from potato.training.job.schemes import Scheme, SchemeType
from potato.config.upstream import unsupported_message


def span_target(raw_schemes: object, schemes: tuple[Scheme, ...], items: ItemProperties, page: dict[str, Any],
                findings: Findings) -> tuple[tuple[Scheme, ...], dict[str, Any]] | None:
    """The fields spans are marked on, and each span scheme with the fields it marks.

    Without ``instance_display`` spans mark the item's own text (``item_properties.text_key``). With
    it, each field with ``span_target: true`` is marked (a premise and a hypothesis, a dialogue);
    where none has it, the item's text is, and it must be among the fields so the annotator sees
    what they mark. A scheme's ``target_field`` narrows it to one of those fields."""
    text_key = items.text_key
    fields = page["page"].display_fields
    spans = [s.name for s in schemes if s.annotation_type is SchemeType.SPAN]
    if spans and fields and not any(f.span_target for f in fields):
        if text_key not in [f.key for f in fields]:
            findings.error("instance_display.fields", f"shows no field {text_key!r}, the item's text that the span "
                           f"scheme {spans[0]!r} marks; add {{key: {text_key}, type: text, span_target: true}}")
            return None
        fields = tuple(replace(f, span_target=f.key == text_key) for f in fields)
        page = {**page, "page": replace(page["page"], display_fields=fields)}
    names = {f.key: ("" if f.key == text_key and f.type == "text" else f.key) for f in fields if f.span_target}
    marked = tuple(names.values()) or ("",)
    raw_list = raw_schemes if isinstance(raw_schemes, list) else []
    ok = True
    out = []
    for index, scheme in enumerate(schemes):
        raw = raw_list[index] if index < len(raw_list) and isinstance(raw_list[index], dict) else {}
        if scheme.annotation_type is not SchemeType.SPAN:
            out.append(scheme)
            continue
        own = marked
        target = raw.get("target_field")
        if target is not None:
            if target not in names and not (target == text_key and not fields):
                shown = ", ".join(names) or text_key
                findings.error(f"annotation_schemes[{index}].target_field", f"names {target!r}, which is not a field "
                               f"spans are marked on ({shown}); name one of them, or give that field span_target: "
                               "true under instance_display.fields")
                ok = False
                continue
            own = (names.get(target, ""),)
        out.append(replace(scheme, span_fields=own, text_key=text_key))
    if not ok:
        return None
    return tuple(out), page


_ITEM_PROPERTIES: Mapping[str, Check] = {"id_key": text(), "text_key": text()}


def check_item_properties(raw: object, findings: Findings) -> ItemProperties | None:
    if raw is None:
        return ItemProperties()
    upstream_only = {"category_key": "assigning items to annotators by category"}
    try:
        if isinstance(raw, dict) and "kwargs" in raw:
            # Upstream hands these fields to a custom page template; its default page shows none of them.
            findings.warn("item_properties.kwargs", "passes item fields to a custom page template, which this server "
                                                    "does not use (upstream's default page does not show them either): "
                                                    "it is ignored. To show a field, list it under instance_display.fields")
            raw = subset(raw, lambda k: k != "kwargs")
        if isinstance(raw, dict):
            for key in [k for k in raw if k in upstream_only]:
                findings.error(f"item_properties.{key}", unsupported_message(key, upstream_only[key]))
            raw = subset(raw, lambda k: k not in upstream_only)
        values = section(_ITEM_PROPERTIES, "item_properties", '{id_key: "id", text_key: "text"}')(raw)
    except Invalid as bad:
        findings.errors_at("item_properties", bad.problems)
        return None
    return ItemProperties(**values)
