"""``annotation_schemes``: each question, its labels, and the keys that pick them.

Written for configs as upstream Potato writes them: labels may be plain names or mappings
(``name``, ``tooltip``, ``key_value``...), likert scales are named by their size and end labels,
and upstream's scheme keys are either honoured here or refused by name (see :mod:`upstream`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Mapping

from potato import defaults
from potato.errors import did_you_mean
from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    Problem,
    anything,
    boolean,
    check_keys,
    choice,
    integer,
    mapping,
    number,
    show,
    text,
)
from potato.conditions import NEEDS_NO_VALUE, NEEDS_NUMBER, NEEDS_RANGE, OPERATORS, Condition, DisplayLogic
from potato.config.schema import (
    FREE_RESPONSE_INSTRUCTION,
    NUMERIC_TYPES,
    LabelOption,
    Scheme,
    SchemeType,
    free_response_name,
)
from potato.config.upstream import SCHEME_KEYS, SCHEME_TYPES, unsupported_message

SCHEME_TYPE_NAMES = tuple(t.value for t in SchemeType)
PAGE_KEYS: Mapping[str, str] = {
    "a": "accept the model's suggestion, which annotators then do with its Accept button",
    "g": "go to an item, which annotators then do in its Go to item box",
    "d": "switch dark mode, which annotators then do with the ◐ button at the top",
}
"""The annotation page's own letter keys. Upstream Potato's page does not use them, so its configs may
give one to a label: the label keeps it (a key that chose a label in upstream's page chooses it here)
and the page does without the shortcut, with a warning that says where its action went."""
MAX_SEQUENTIAL_KEY = 9
MAX_LIKERT_SIZE = 20

_LABEL_KEYS: Mapping[str, Check] = {
    "name": text(numbers=True),
    "text": text(numbers=True),
    "tooltip": text(allow_empty=True),
    "description": text(allow_empty=True),
    "key_value": anything,
    "key_binding": anything,
    "color": text(),
    "abbreviation": text(),
}

_SCHEME_KEYS: Mapping[str, Check] = {
    "annotation_type": anything,  # checked first, with the feature message for upstream's other types
    "name": text(),
    "description": text(allow_empty=True),
    "labels": anything,
    "max_length": integer(1),
    "sequential_key_binding": boolean,
    "label_requirement": anything,
    "horizontal": boolean,
    "layout": anything,
    "textarea": anything,
    "multiline": boolean,
    "single_line": boolean,
    "text_box_single_line": boolean,
    "rows": integer(1, 40),
    "placeholder": text(allow_empty=True),
    "size": integer(2, MAX_LIKERT_SIZE),
    "min_label": text(allow_empty=True, numbers=True),
    "max_label": text(allow_empty=True, numbers=True),
    "min_value": number(-float(2**31), open_low=False),
    "max_value": number(-float(2**31), open_low=False),
    "min": number(-float(2**31), open_low=False),
    "max": number(-float(2**31), open_low=False),
    "starting_value": number(-float(2**31), open_low=False),
    "step": number(0, open_low=True),
    "display_logic": anything,
    "has_free_response": anything,
    "title": text(allow_empty=True),
    "show_span_labels": boolean,
    "allow_overlapping": boolean,
    "allow_discontinuous": boolean,
    "entity_linking": anything,
    "target_field": text(),
}

_EXAMPLE = "{annotation_type: radio, name: sentiment, labels: [positive, negative]}"


def check_schemes(raw: object, findings: Findings, go_to_item: bool = True) -> tuple[Scheme, ...] | None:
    """Every scheme, or None if any is invalid (a missing ``annotation_schemes`` was already reported).
    ``go_to_item``: whether the page has its Go to item box (and so its key)."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        findings.error(
            "annotation_schemes",
            f"must be a non-empty list of schemes, each with annotation_type, name and labels; got {show(raw)}",
        )
        return None
    built: list[dict[str, Any]] = []
    first_use: dict[str, int] = {}
    for index, item in enumerate(raw):
        at = f"annotation_schemes[{index}]"
        values, problems = _scheme_values(item, at, findings)
        name = values.get("name")
        if name in first_use:
            problems.append((".name", f"{show(name)} is already the name of annotation_schemes[{first_use[name]}]; "
                                      "give each scheme its own name"))
        elif name is not None:
            first_use[name] = index
        findings.errors_at(at, problems)
        if not problems:
            built.append(values)
    if len(built) != len(raw):
        return None
    page_keys = {key: does for key, does in PAGE_KEYS.items() if go_to_item or key != "g"}
    keys = _assign_keys(built, page_keys, findings)
    names = [values["name"] for values in built]
    for index, values in enumerate(built):
        if "display_logic" in values:
            logic = _display_logic(values.pop("display_logic"), values["name"], names,
                                   f"annotation_schemes[{index}].display_logic", findings)
            if logic is None:
                keys = None
            values["display_logic_checked"] = logic
    for index, values in enumerate(built):
        if values.get("free_response") and free_response_name(values["name"]) in names:
            findings.error(f"annotation_schemes[{index}].has_free_response",
                           f"its box is stored as {show(free_response_name(values['name']))}, which is already "
                           "the name of another scheme; rename that scheme")
            keys = None
    if keys is None:
        return None
    schemes: list[Scheme] = []
    for index, values in enumerate(built):
        schemes.append(_scheme(values, index, keys))
        if values.get("free_response"):
            schemes.append(_free_response_box(schemes[-1], values["free_response"]))
    return tuple(schemes)


def _free_response_box(parent: Scheme, instruction: str) -> Scheme:
    """The text scheme behind a radio or multiselect scheme's free-text box: asked with it (the same
    display_logic), never required, and shown on the page inside it."""
    return Scheme(annotation_type=SchemeType.TEXT, name=free_response_name(parent.name), description=instruction,
                  multiline=False, display_logic=parent.display_logic, free_response_of=parent.name)


def scheme_types(raw: object) -> dict[str, str | None]:
    """Scheme names (type or None if bad) that other keys may name, even when a scheme has errors."""
    out: dict[str, str | None] = {}
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                kind = item.get("annotation_type")
                out.setdefault(str(item["name"]), kind if kind in SCHEME_TYPE_NAMES else None)
    return out


def training_types(raw: object) -> dict[str, str | None]:
    """Like :func:`scheme_types`, with likert and select read as the radio answers they are to a trainer."""
    radio_like = {"likert": "radio", "select": "radio"}
    return {name: radio_like.get(kind or "", kind) for name, kind in scheme_types(raw).items()}


def _scheme_values(item: object, at: str, findings: Findings) -> tuple[dict[str, Any], list[Problem]]:
    """One scheme's checked keys and its problems; upstream-only keys are reported as features."""
    try:
        raw = dict(mapping(item, _EXAMPLE))
    except Invalid as bad:
        return {}, list(bad.problems)
    problems: list[Problem] = []
    for key in [k for k in raw if isinstance(k, str) and k in SCHEME_KEYS and k not in _SCHEME_KEYS]:
        feature = SCHEME_KEYS[key]
        (findings.error if feature.error else findings.warn)(f"{at}.{key}", unsupported_message(key, feature.what))
        del raw[key]
    kind = raw.get("annotation_type")
    if isinstance(kind, str) and kind in SCHEME_TYPE_NAMES:  # the keys this type takes, not every type's
        values, more = check_keys(raw, _SCHEME_KEYS, f"a {kind} scheme", listed=scheme_keys(kind))
    else:
        values, more = check_keys(raw, _SCHEME_KEYS, "an annotation scheme")
    if not (isinstance(kind, str) and kind in SCHEME_TYPES):  # upstream's other types: their own keys are
        problems += more                                        # not typos; the type is the one thing named
    if kind is None:
        problems.append((".annotation_type", f"missing; valid types: {', '.join(SCHEME_TYPE_NAMES)}"))
    elif not isinstance(kind, str) or kind not in SCHEME_TYPE_NAMES:
        if isinstance(kind, str) and kind in SCHEME_TYPES:
            problems.append((".annotation_type", unsupported_message(kind, SCHEME_TYPES[kind])))
        else:
            try:
                choice(SCHEME_TYPE_NAMES, "annotation_type")(kind)
            except Invalid as bad:
                problems.append((".annotation_type", bad.problems[0][1]))
        kind = None
    if raw.get("name") is None:
        problems.append((".name", "missing; name the scheme, e.g. name: sentiment"))
    if kind is None:
        return values, problems
    values["annotation_type"] = kind
    problems += _type_problems(kind, raw, values)
    return values, problems


_ONLY_FOR: Mapping[str, tuple[str, ...]] = {
    "max_length": ("text",), "textarea": ("text",), "multiline": ("text",), "single_line": ("text",),
    "text_box_single_line": ("text",), "rows": ("text",), "placeholder": ("text",),
    "size": ("likert",), "min_label": ("likert",), "max_label": ("likert",),
    "min_value": ("slider", "number"), "max_value": ("slider", "number"), "min": ("number",), "max": ("number",),
    "starting_value": ("slider",), "step": ("slider", "number"),
    "horizontal": ("radio", "multiselect", "likert"),
    "sequential_key_binding": ("radio", "multiselect", "likert", "span"),
    "has_free_response": ("radio", "multiselect"),
    "title": ("span",), "show_span_labels": ("span",), "allow_overlapping": ("span",),
    "allow_discontinuous": ("span",), "entity_linking": ("span",), "target_field": ("span",),
}


_NO_LABELS = ("slider", "number")


def scheme_keys(kind: str) -> list[str]:
    """The keys a scheme of type ``kind`` takes, in the table's order (pure)."""
    return [key for key in _SCHEME_KEYS if kind in _ONLY_FOR.get(key, (kind,))
            and not (key == "labels" and kind in _NO_LABELS)]


def _type_problems(kind: str, raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """What ``kind`` needs and refuses; fills in the derived values (options, bounds, text layout)."""
    problems: list[Problem] = [
        (f".{key}", f"applies to {' and '.join(kinds)} schemes only; remove it from this {kind} scheme")
        for key, kinds in _ONLY_FOR.items() if key in values and kind not in kinds
    ]
    if "label_requirement" in values:
        try:
            values["required"] = _label_requirement(values.pop("label_requirement"))
        except Invalid as bad:
            problems += [(".label_requirement" + sub, detail) for sub, detail in bad.problems]
    if "has_free_response" in values and kind in ("radio", "multiselect"):
        try:
            values["free_response"] = _free_response(values.pop("has_free_response"))
        except Invalid as bad:
            problems += [(".has_free_response" + sub, detail) for sub, detail in bad.problems]
    if "layout" in values:
        layout = values.pop("layout")
        if not isinstance(layout, dict):
            problems.append((".layout", f"must be a mapping such as {{columns: 2}}, got {show(layout)}"))
    if kind == "likert" and raw.get("labels") is None:
        missing = [k for k in ("size", "min_label", "max_label") if raw.get(k) is None]
        if missing:
            problems.append((f".{missing[0]}", "missing; a likert scheme needs size, min_label and max_label, "
                                              "e.g. size: 5, min_label: Disagree, max_label: Agree"))
        else:
            values["options"] = tuple(LabelOption(str(i)) for i in range(1, values.get("size", 2) + 1))
    elif kind in ("radio", "multiselect", "select", "likert", "span"):
        problems += _options(kind, raw.get("labels"), values)
    elif raw.get("labels") not in (None, []) and kind == "text":
        problems += _options("multiselect", raw.get("labels"), values)  # one box per label, at least one
    elif raw.get("labels") not in (None, []):
        problems.append((".labels", f"a {kind} scheme takes no labels (annotators pick a number); remove labels, "
                                    "or use annotation_type: radio or likert"))
    if kind == "span":
        problems += _span_features(values)
    if kind == "text":
        problems += _text_layout(values)
    if kind in ("slider", "number"):
        problems += _bounds(kind, values)
    return problems


def _span_features(values: dict[str, Any]) -> list[Problem]:
    """Upstream's span keys this server does not draw are refused by name when they are switched on."""
    problems: list[Problem] = []
    if values.pop("allow_discontinuous", False):
        problems.append((".allow_discontinuous", unsupported_message(
            "allow_discontinuous", "spans made of several separate stretches of text")))
    linking = values.pop("entity_linking", None)
    if linking not in (None, False, {}) and not (isinstance(linking, dict) and not linking.get("enabled", False)):
        problems.append((".entity_linking", unsupported_message(
            "entity_linking", "linking spans to entries of a knowledge base")))
    if "title" in values and not values.get("description"):
        values["description"] = values["title"]  # upstream shows its title above the labels
    values.pop("title", None)
    return problems


def _free_response(value: object) -> str:
    """Upstream's ``has_free_response: true`` or ``{instruction: ...}``: the box's prompt, "" for none."""
    if isinstance(value, bool):
        return FREE_RESPONSE_INSTRUCTION if value else ""
    raw = mapping(value, "true, or {instruction: \"Other (please specify)\"}")
    values, problems = check_keys(raw, {"instruction": text()}, "has_free_response")
    if problems:
        raise Invalid(problems=problems)
    return str(values.get("instruction", FREE_RESPONSE_INSTRUCTION))


def _label_requirement(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raw = mapping(value, "{required: true}")
    values, problems = check_keys(raw, {"required": boolean}, "label_requirement")
    if problems:
        raise Invalid(problems=problems)
    return bool(values.get("required", False))


def _options(kind: str, raw: object, values: dict[str, Any]) -> list[Problem]:
    """Labels as plain names or upstream's mappings; at least two to choose between (one for multiselect)."""
    need = 1 if kind in ("multiselect", "span") else 2
    example = 'e.g. labels: ["positive", "negative"]'
    if raw is None:
        return [(".labels", f"missing; a {kind} scheme needs at least {need} label{'s' if need > 1 else ''}, {example}")]
    if not isinstance(raw, list):
        return [(".labels", f"must be a list of labels, {example}, got {show(raw)}")]
    options: list[LabelOption] = []
    problems: list[Problem] = []
    for i, entry in enumerate(raw):
        try:
            option = _option(entry)
        except Invalid as bad:
            problems += [(f".labels[{i}]" + sub, detail) for sub, detail in bad.problems]
            continue
        if any(o.name == option.name for o in options):
            problems.append((f".labels[{i}]", f"{show(option.name)} appears more than once; list each only once"))
        options.append(option)
    if not problems and len(options) < need:
        got = "missing" if not options else f"has {len(options)} label"
        problems.append((".labels", f"{got}; a {kind} scheme needs at least {need} label{'s' if need > 1 else ''}, {example}"))
    values["options"] = tuple(options)
    return problems


def _option(entry: object) -> LabelOption:
    if isinstance(entry, (int, float)) and not isinstance(entry, bool):
        entry = str(entry)
    if isinstance(entry, str):
        return LabelOption(text()(entry))
    if not isinstance(entry, dict):
        raise Invalid(f"must be a label name or a mapping such as {{name: positive, tooltip: ...}}, got {show(entry)}")
    values, problems = check_keys(entry, _LABEL_KEYS, "a label")
    if entry.get("name") is None:
        problems.append((".name", "missing; each label mapping needs a name (what is stored), e.g. name: positive"))
    key = ""
    for field in ("key_value", "key_binding"):
        if field in values:
            try:
                key = _key(values[field])
            except Invalid as bad:
                problems.append((f".{field}", bad.problems[0][1]))
    if problems:
        raise Invalid(problems=problems)
    return LabelOption(name=values["name"], text=values.get("text", ""),
                       tooltip=values.get("tooltip") or values.get("description", ""),
                       key=key, color=values.get("color", ""))


def _key(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 9:
        value = str(value)
    if not isinstance(value, str) or len(value) != 1 or not value.isprintable() or value.isspace():
        raise Invalid(f"must be one key (a letter, digit or sign), got {show(value)}")
    return value.lower()


def _text_layout(values: dict[str, Any]) -> list[Problem]:
    """Upstream's ways of asking for a one-line box or a taller one, as one ``multiline`` and ``rows``."""
    textarea = values.pop("textarea", None)
    if textarea is not None:
        if not isinstance(textarea, dict):
            return [(".textarea", f"must be a mapping such as {{on: true, rows: 4}}, got {show(textarea)}")]
        checked, problems = check_keys(textarea, {"on": boolean, "rows": integer(1, 40), "cols": integer(1)},
                                       "textarea")
        if problems:
            return [(".textarea" + sub, detail) for sub, detail in problems]
        values.setdefault("multiline", checked.get("on", True))
        if "rows" in checked:
            values.setdefault("rows", checked["rows"])
    for one_line in ("single_line", "text_box_single_line"):
        if one_line in values:
            values.setdefault("multiline", not values.pop(one_line))
    return []


def _bounds(kind: str, values: dict[str, Any]) -> list[Problem]:
    low = values.pop("min", values.get("min_value"))
    high = values.pop("max", values.get("max_value"))
    values["min_value"], values["max_value"] = low, high
    if kind == "slider" and (low is None or high is None):
        return [(".min_value" if low is None else ".max_value",
                 "missing; a slider needs min_value and max_value, e.g. min_value: 0, max_value: 100")]
    if low is not None and high is not None and low >= high:
        return [(".max_value", f"must be greater than min_value ({low:g}), got {high:g}")]
    start = values.get("starting_value")
    if start is not None and ((low is not None and start < low) or (high is not None and start > high)):
        return [(".starting_value", f"must lie between min_value and max_value, got {start:g}")]
    if kind == "slider":
        values.setdefault("step", 1.0)
    return []


def _assign_keys(built: list[dict[str, Any]], page_keys: Mapping[str, str],
                 findings: Findings) -> dict[tuple[int, str], str] | None:
    """The key of each (scheme index, label): a label's own ``key_value``, else the next of 1-9 for
    schemes with sequential keys, in page order. Two labels on one key would make it pick both."""
    taken: dict[str, str] = {}
    keys: dict[tuple[int, str], str] = {}
    ok = True
    for index, values in enumerate(built):
        for option in values.get("options", ()):
            if option.key:
                where = f"annotation_schemes[{index}] label {show(option.name)}"
                if option.key in taken:
                    findings.error(f"annotation_schemes[{index}].labels",
                                   f"key {show(option.key)} of label {show(option.name)} is also the key of "
                                   f"{taken[option.key]}; give each label its own key")
                    ok = False
                taken[option.key] = where
                keys[(index, option.name)] = option.key
                if option.key in page_keys:
                    findings.warn(f"annotation_schemes[{index}].labels",
                                  f"key {show(option.key)} of label {show(option.name)} is also the page's key to "
                                  f"{page_keys[option.key]}; on this project the key chooses the label")
    number = 1
    for index, values in enumerate(built):
        if not values.get("sequential_key_binding", True) or values["annotation_type"] in ("select", "text"):
            continue
        for option in values.get("options", ()):
            if (index, option.name) in keys:
                continue
            while str(number) in taken and number <= MAX_SEQUENTIAL_KEY:
                number += 1
            if number > MAX_SEQUENTIAL_KEY:
                break
            keys[(index, option.name)] = taken[str(number)] = str(number)
            number += 1
    return keys if ok else None


def _scheme(values: dict[str, Any], index: int, keys: Mapping[tuple[int, str], str]) -> Scheme:
    kind = SchemeType(values["annotation_type"])
    options = tuple(replace(o, key=keys.get((index, o.name), "")) for o in values.get("options", ()))
    numeric = kind in NUMERIC_TYPES
    return Scheme(
        annotation_type=kind,
        name=values["name"],
        description=values.get("description", ""),
        labels=tuple(o.name for o in options),
        max_length=values.get("max_length", defaults.TEXT_MAX_LENGTH),
        options=options,
        sequential_key_binding=values.get("sequential_key_binding", True),
        required=values.get("required", False),
        horizontal=values.get("horizontal", False),
        multiline=values.get("multiline", True),
        rows=values.get("rows", 3),
        placeholder=values.get("placeholder", ""),
        min_label=values.get("min_label", ""),
        max_label=values.get("max_label", ""),
        min_value=values.get("min_value") if numeric else None,
        max_value=values.get("max_value") if numeric else None,
        step=values.get("step") if numeric else None,
        starting_value=values.get("starting_value") if numeric else None,
        display_logic=values.get("display_logic_checked"),
        allow_overlapping=values.get("allow_overlapping", False),
        show_span_labels=values.get("show_span_labels", True),
    )


_CONDITION_KEYS: Mapping[str, Check] = {"schema": text(), "operator": anything, "value": anything,
                                        "case_sensitive": boolean}


def _display_logic(raw: object, own: str, names: list[str], at: str, findings: Findings) -> DisplayLogic | None:
    """``{show_when: [{schema, operator, value}], logic: all|any}``, each condition naming another scheme."""
    try:
        values, problems = check_keys(mapping(raw, "{show_when: [{schema: sentiment, operator: equals, value: negative}]}"),
                                      {"show_when": anything, "logic": choice(("all", "any"), "logic")},
                                      "display_logic")
    except Invalid as bad:
        findings.errors_at(at, bad.problems)
        return None
    conditions: list[Condition] = []
    raw_conditions = values.get("show_when")
    if not isinstance(raw_conditions, list) or not raw_conditions:
        problems.append((".show_when", "must be a list of conditions such as [{schema: sentiment, operator: equals, "
                                       f"value: negative}}], got {show(raw_conditions)}"))
        raw_conditions = []
    for i, entry in enumerate(raw_conditions):
        where = f".show_when[{i}]"
        try:
            cond_values, cond_problems = check_keys(mapping(entry, "{schema: sentiment, operator: equals, value: x}"),
                                                    _CONDITION_KEYS, "a condition")
        except Invalid as bad:
            problems += [(where + sub, detail) for sub, detail in bad.problems]
            continue
        problems += [(where + sub, detail) for sub, detail in cond_problems]
        schema, op, value = cond_values.get("schema"), cond_values.get("operator"), cond_values.get("value")
        if schema is None:
            problems.append((where + ".schema", "missing; name the scheme whose answer decides"))
        elif schema == own:
            problems.append((where + ".schema", f"is this scheme itself; name another scheme (schemes: {', '.join(names)})"))
        elif schema not in names:
            problems.append((where + ".schema", f"{show(schema)} names no annotation scheme{did_you_mean(schema, names)}; "
                                                f"schemes: {', '.join(names)}"))
        if op not in OPERATORS:
            near = did_you_mean(op, OPERATORS) if isinstance(op, str) else ""
            problems.append((where + ".operator", f"{show(op)} is not an operator{near}; valid: {', '.join(OPERATORS)}"))
        else:
            problem = _condition_value_problem(op, value)
            if problem:
                problems.append((where + ".value", problem))
        if not cond_problems and schema is not None and op in OPERATORS:
            conditions.append(Condition(schema, op, value, cond_values.get("case_sensitive", False)))
    findings.errors_at(at, problems)
    if problems:
        return None
    return DisplayLogic(tuple(conditions), any=values.get("logic") == "any")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _condition_value_problem(op: str, value: object) -> str | None:
    if op in NEEDS_NO_VALUE:
        return None
    if value is None:
        return f"missing; the {op} operator compares with a value"
    if op in NEEDS_RANGE and not (isinstance(value, list) and len(value) == 2 and all(map(_is_number, value))):
        return f"must be [low, high] for {op}, e.g. [1, 3], got {show(value)}"
    if op in NEEDS_NUMBER and not _is_number(value):
        return f"must be a number for {op}, got {show(value)}"
    if op == "matches":
        try:
            re.compile(str(value))
        except re.error as exc:
            return f"is not a valid regular expression ({exc})"
    return None
