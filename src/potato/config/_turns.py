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

from potato.config._checks import (
    Findings,
    Invalid,
    Problem,
    anything,
    check_keys,
    choice,
    integer,
    mapping,
    show,
    text,
    text_list,
)
from potato.display.turns import TURN_FIELD_TYPES
from potato.training.job.schemes import LabelOption, Scheme, SchemeType
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
    def names(key: str) -> tuple[str, ...]:
        return tuple(str(v) for v in checked.get(key, ()))

    values["turns"] = TurnBinding(
        field=str(checked.get("field", "")), speakers=names("speakers"), agents=names("agents"),
        step_types=names("step_types"), tools=names("tools"), runs=names("runs"),
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
        if binding.steps_text is not None:
            warn = scheme.annotation_type is SchemeType.PROCESS_REWARD  # it asked for inline_with_trace
            out.append(replace(scheme, turns=_steps_placed(binding, types, f"annotation_schemes[{index}]", findings, warn)))
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



ENTRY_DRAWN = ("coding_trace", "cot_trace", "multi_agent_discussion", "dialogue")
"""The field types that draw one turn per entry of their list, so that a step read entry by entry can
be put beside the turn drawn for it."""


def _steps_placed(binding: TurnBinding, types: dict[str, str], where: str, findings: Findings,
                  warn: bool) -> TurnBinding:
    """Steps read entry by entry put beside the field that draws them where the page draws one turn
    per step; else listed in the question's own box (with a warning where ``inline_with_trace`` asked
    for them beside it)."""
    if binding.placement != "inline":
        return binding
    kind = types.get(binding.field)
    if kind in ENTRY_DRAWN:
        return binding
    if not warn:
        return replace(binding, placement="list")
    findings.warn(f"{where}.inline_with_trace",
                  (f"no instance_display field shows {binding.field!r}" if kind is None else
                   f"the {kind} field {binding.field!r} does not draw one turn per step") +
                  f", so the steps are listed under the question instead; show {binding.field!r} in a field of "
                  f"type {', '.join(ENTRY_DRAWN)}, or remove inline_with_trace")
    return replace(binding, placement="list")


_RATING_KEYS = {"speakers": text_list('["Agent"]'), "schema_name": text(), "scheme": anything, "schemes": anything}
_SCALE_KEYS = {"type": choice(("likert",), "per_turn_ratings scale type"), "size": integer(2, 20),
               "labels": text_list('["Poor", "Excellent"]')}
_RATING_EXAMPLE = "{speakers: [Agent], schema_name: turn_quality, scheme: {type: likert, size: 5, labels: [Poor, Excellent]}}"


def turn_ratings(schemes: tuple[Scheme, ...], fields: tuple[Any, ...], findings: Findings) -> tuple[Scheme, ...] | None:
    """``schemes`` and, after them, a question for each scale of a dialogue field's ``per_turn_ratings``
    (upstream's way of rating each turn of some speakers on a scale of points): a likert question asked
    on those turns. None where one is wrong."""
    names = {s.name for s in schemes}
    added: list[Scheme] = []
    ok = True
    for index, field in enumerate(fields):
        raw = field.options.get("per_turn_ratings") if field.type == "dialogue" else None
        if raw in (None, False, {}, []):
            continue
        where = f"instance_display.fields[{index}].display_options.per_turn_ratings"
        try:
            checked, problems = check_keys(mapping(raw, _RATING_EXAMPLE), _RATING_KEYS, "per_turn_ratings")
        except Invalid as bad:
            checked, problems = {}, list(bad.problems)
        if "scheme" in checked:
            entries: Any = [{"schema_name": checked.get("schema_name", "per_turn_ratings"), "scheme": checked["scheme"]}]
        elif isinstance(checked.get("schemes"), list) and checked["schemes"]:
            entries = checked["schemes"]
        else:
            entries = []
            if not problems:
                problems.append(("", f"names no scale; give scheme (and schema_name) or schemes, e.g. {_RATING_EXAMPLE}"))
        for n, entry in enumerate(entries):
            at = "" if "scheme" in checked else f".schemes[{n}]"
            scale, more = _scale(entry, names)
            problems += [(at + sub, detail) for sub, detail in more]
            if scale is not None:
                names.add(scale.name)
                added.append(replace(scale, turns=TurnBinding(field=field.key, speakers=tuple(checked.get("speakers", ())),
                                                              label=scale.description)))
        for sub, detail in problems:
            findings.error(where + sub, detail)
            ok = False
    return schemes + tuple(added) if ok else None


def _scale(entry: object, names: set[str]) -> tuple[Scheme | None, list[Problem]]:
    """One scale of ``per_turn_ratings.schemes``: its name and its likert points (1 to ``size``, the
    first and last named by ``labels``)."""
    try:
        checked, problems = check_keys(mapping(entry, "{schema_name: turn_quality, scheme: {type: likert, size: 5}}"),
                                       {"schema_name": text(), "scheme": anything}, "a per-turn scale")
        scale, more = check_keys(mapping(checked.get("scheme", {}), "{type: likert, size: 5, labels: [Poor, Excellent]}"),
                                 _SCALE_KEYS, "a per-turn scale's scheme")
    except Invalid as bad:
        return None, list(bad.problems)
    problems += [(".scheme" + sub, detail) for sub, detail in more]
    name = str(checked.get("schema_name", "per_turn_ratings"))
    if name in names:
        problems.append((".schema_name", f"{show(name)} is already the name of a question; give each scale its own "
                                         "schema_name"))
    ends = list(scale.get("labels", ()))
    if len(ends) > 2:
        problems.append((".scheme.labels", f"names the two ends of the scale, e.g. [Poor, Excellent]; got {len(ends)} labels"))
    if problems:
        return None, problems
    points = tuple(LabelOption(str(i)) for i in range(1, int(scale.get("size", 5)) + 1))
    return Scheme(annotation_type=SchemeType.LIKERT, name=name, labels=tuple(o.name for o in points), options=points,
                  description=name.replace("_", " ").title(),
                  min_label=ends[0] if ends else "", max_label=ends[1] if len(ends) > 1 else "",
                  sequential_key_binding=False, rated_turns=True), []
