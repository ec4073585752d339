"""A scheme's labels: plain names or upstream's mappings, and the key that picks each one.

Apart from the per-type checks because labels are shared by every type that has them, and keys
are assigned across all schemes at once (a key may pick only one label on the page).
"""

from __future__ import annotations

from typing import Any, Mapping

from potato.config._checks import Check, Findings, Invalid, Problem, anything, check_keys, show, text
from potato.training.job.schemes import LabelOption

PAGE_KEYS: Mapping[str, str] = {
    "a": "accept the model's suggestion, which annotators then do with its Accept button",
    "g": "go to an item, which annotators then do in its Go to item box",
    "d": "switch dark mode, which annotators then do with the ◐ button at the top",
}
"""The annotation page's own letter keys. Upstream Potato's page does not use them, so its configs may
give one to a label: the label keeps it (a key that chose a label in upstream's page chooses it here)
and the page does without the shortcut, with a warning that says where its action went."""
MAX_SEQUENTIAL_KEY = 9

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


def label_options(kind: str, raw: object, values: dict[str, Any], one_choice: bool = False) -> list[Problem]:
    """Labels as plain names or upstream's mappings; at least two to choose between (one for
    multiselect, and for a radio question that is one choice to make, as a consent's "I agree")."""
    need = 1 if kind in ("multiselect", "span") or (one_choice and kind == "radio") else 2
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
                key = key_of(values[field])
            except Invalid as bad:
                problems.append((f".{field}", bad.problems[0][1]))
    if problems:
        raise Invalid(problems=problems)
    return LabelOption(name=values["name"], text=values.get("text", ""),
                       tooltip=values.get("tooltip") or values.get("description", ""),
                       key=key, color=values.get("color", ""))


def key_of(value: object) -> str:
    """One key, as a label's ``key_value`` names it (a digit may be a number); :class:`Invalid` says why not."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 9:
        value = str(value)
    if not isinstance(value, str) or len(value) != 1 or not value.isprintable() or value.isspace():
        raise Invalid(f"must be one key (a letter, digit or sign), got {show(value)}")
    return value.lower()


def assign_keys(built: list[dict[str, Any]], page_keys: Mapping[str, str],
                findings: Findings) -> dict[tuple[int, str], str] | None:
    """The key of each (scheme index, label): a label's own ``key_value``, else the next of 1-9 for
    schemes with sequential keys, in page order. Two labels on one key would make it pick both."""
    taken: dict[str, str] = {}
    keys: dict[tuple[int, str], str] = {}
    ok = True
    for index, values in enumerate(built):
        if values.get("turns") is not None:  # asked on many turns at once: a key could not say which
            continue
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
        if (not values.get("sequential_key_binding", True) or values["annotation_type"] in ("select", "text")
                or values.get("turns") is not None):
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
