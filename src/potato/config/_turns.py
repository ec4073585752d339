"""``turn_level`` and ``turn_binding``: a scheme asked once per step or turn of a trace field.

Upstream Potato's keys and meaning: ``turn_binding`` names the instance_display field and filters
its turns (``speakers``, ``agents``, ``step_types``, ``tools``, ``runs``, ``turn_range``; all that
are given must hold) and where the question sits (``placement``: ``inline`` or ``drawer``). The
scheme's own keys checked, :func:`check_binding` reads the binding; :func:`bind_fields` checks it
against the page's fields once both are known.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from potato.config._checks import Findings, Invalid, Problem, check_keys, choice, mapping, show, text, text_list
from potato.display.turns import TURN_FIELD_TYPES
from potato.training.job.schemes import Scheme
from potato.training.job.turns import PLACEMENTS, TURN_TYPES, TurnBinding

_EXAMPLE = "{field: conversation, speakers: [Assistant]}"
_FILTERS = ("speakers", "agents", "step_types", "tools", "runs")


def _turn_range(value: object) -> tuple[int, int]:
    if (not isinstance(value, list) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value) or value[0] > value[1]):
        raise Invalid(f"must be [first, last], two turn numbers counted from 0 with first <= last, e.g. [0, 4]; "
                      f"got {json.dumps(value) if isinstance(value, list) else show(value)}")
    return int(value[0]), int(value[1])


_BINDING_KEYS = {
    "field": text(),
    **{key: text_list('["Assistant"]') for key in _FILTERS},
    "turn_range": _turn_range,
    "placement": choice(PLACEMENTS, "placement"),
}


def check_binding(kind: str, values: dict[str, Any]) -> list[Problem]:
    """Read ``turn_level``, ``turn_binding`` and ``turn_label`` out of ``values`` into ``values["turns"]``
    (a :class:`TurnBinding` whose field may still be ``""``: the page's one field with turns)."""
    level = values.pop("turn_level", False)
    raw = values.pop("turn_binding", None)
    label = values.pop("turn_label", "")
    if not level:
        if raw is not None or label:
            key = ".turn_binding" if raw is not None else ".turn_label"
            return [(key, "applies only with turn_level: true; add turn_level: true to ask this question on each "
                          "turn, or remove it")]
        return []
    if kind not in TURN_TYPES:
        return [(".turn_level", f"a {kind} question cannot be asked per turn; turn_level takes "
                                f"{', '.join(TURN_TYPES)} schemes")]
    if values.get("free_response") is not None:
        return [(".has_free_response", "a question asked on each turn has no free-text box of its own; remove "
                                       "has_free_response, or add a text question with turn_level: true")]
    try:
        given = mapping({} if raw is None else raw, _EXAMPLE)
    except Invalid as bad:
        return [(".turn_binding" + at, detail) for at, detail in bad.problems]
    checked, problems = check_keys(given, _BINDING_KEYS, "turn_binding")
    if problems:
        return [(".turn_binding" + at, detail) for at, detail in problems]
    values["turns"] = TurnBinding(
        field=str(checked.get("field", "")),
        **{key: tuple(str(v) for v in checked.get(key, ())) for key in _FILTERS},
        turn_range=checked.get("turn_range"),
        placement=str(checked.get("placement", "inline")),
        label=str(label or values.get("description") or values.get("name", "")),
    )
    return []


def bind_fields(schemes: tuple[Scheme, ...], fields: tuple[Any, ...], findings: Findings) -> tuple[Scheme, ...] | None:
    """Each turn-level scheme bound to a field of the page whose turns it is asked on; None if one
    names no such field. Without ``field``, the page's one field with turns is meant."""
    with_turns = [f.key for f in fields if f.type in TURN_FIELD_TYPES]
    types = {f.key: f.type for f in fields}
    out: list[Scheme] = []
    ok = True
    index = -1
    for scheme in schemes:
        index += 0 if scheme.free_response_of else 1  # a free-text box is no entry of the file's list
        binding = scheme.turns
        if binding is None:
            out.append(scheme)
            continue
        where = f"annotation_schemes[{index}].turn_binding"
        kinds = ", ".join(TURN_FIELD_TYPES)
        if not binding.field:
            if len(with_turns) != 1:
                findings.error(f"{where}.field", "missing; name the instance_display field whose turns this question "
                               + (f"is asked on: one of {', '.join(with_turns)}" if with_turns else
                                  f"is asked on (a field of type {kinds})"))
                ok = False
                continue
            binding = replace(binding, field=with_turns[0])
        elif binding.field not in types:
            findings.error(f"{where}.field", f"names {binding.field!r}, which is not a field under instance_display."
                                             f"fields ({', '.join(types) or 'none'}); name the field that shows the "
                                             f"trace (of type {kinds})")
            ok = False
            continue
        elif types[binding.field] not in TURN_FIELD_TYPES:
            findings.error(f"{where}.field", f"names {binding.field!r}, a {types[binding.field]} field, which has no "
                                             f"turns; name a field of type {kinds}")
            ok = False
            continue
        out.append(replace(scheme, turns=binding))
    return tuple(out) if ok else None

