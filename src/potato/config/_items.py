"""``item_properties``, and the one field of an item that spans are marked on.

Separate because the span rule ties three sections together (the schemes, ``item_properties.text_key``
and ``instance_display``) and can only be judged once each of them is valid on its own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from potato.config._checks import Check, Findings, Invalid, section, text
from potato.config.schema import ItemProperties
from potato.training.schemes import Scheme, SchemeType
from potato.config.upstream import unsupported_message


def span_target(raw_schemes: object, schemes: tuple[Scheme, ...], items: ItemProperties, page: dict[str, Any],
                findings: Findings) -> dict[str, Any] | None:
    """Spans are marked on the item's own text (``item_properties.text_key``): a scheme's
    ``target_field`` or a field's ``span_target`` may name that field and no other, and where
    ``instance_display`` lists fields, that one must be among them so the annotator sees what they mark."""
    text_key = items.text_key
    ok = True
    for index, raw in enumerate(raw_schemes if isinstance(raw_schemes, list) else []):
        target = raw.get("target_field") if isinstance(raw, dict) else None
        if target is not None and target != text_key:
            findings.error(f"annotation_schemes[{index}].target_field", unsupported_message(
                f"target_field: {target}", f"marking spans of a field other than the item's text ({text_key}, "
                "from item_properties.text_key)"))
            ok = False
    fields = page["page"].display_fields
    for index, field in enumerate(fields):
        if field.span_target and field.key != text_key:
            findings.error(f"instance_display.fields[{index}].span_target", unsupported_message(
                "span_target", f"marking spans of a field other than the item's text ({text_key}, from "
                "item_properties.text_key)"))
            ok = False
    spans = [s.name for s in schemes if s.annotation_type is SchemeType.SPAN]
    if spans and fields and text_key not in [f.key for f in fields]:
        findings.error("instance_display.fields", f"shows no field {text_key!r}, the item's text that the span "
                       f"scheme {spans[0]!r} marks; add {{key: {text_key}, type: text, span_target: true}}")
        ok = False
    if not ok:
        return None
    if spans and fields:
        marked = tuple(replace(f, span_target=f.key == text_key) for f in fields)
        page = {**page, "page": replace(page["page"], display_fields=marked)}
    return page


_ITEM_PROPERTIES: Mapping[str, Check] = {"id_key": text(), "text_key": text()}


def check_item_properties(raw: object, findings: Findings) -> ItemProperties | None:
    if raw is None:
        return ItemProperties()
    upstream_only = {"category_key": "assigning items to annotators by category",
                     "kwargs": "extra item fields passed to custom displays"}
    try:
        if isinstance(raw, dict):
            for key in [k for k in raw if k in upstream_only]:
                findings.error(f"item_properties.{key}", unsupported_message(key, upstream_only[key]))
            raw = {k: v for k, v in raw.items() if k not in upstream_only}
        values = section(_ITEM_PROPERTIES, "item_properties", '{id_key: "id", text_key: "text"}')(raw)
    except Invalid as bad:
        findings.errors_at("item_properties", bad.problems)
        return None
    return ItemProperties(**values)
