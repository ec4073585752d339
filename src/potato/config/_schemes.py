"""``annotation_schemes``: each question, its labels, and the keys that pick them.

Written for configs as upstream Potato writes them: labels may be plain names or mappings
(``name``, ``tooltip``, ``key_value``...), likert scales are named by their size and end labels,
and upstream's scheme keys are either honoured here or refused by name (see :mod:`upstream`).

This module walks the list and builds each :class:`Scheme`; what each type takes is in
:mod:`_scheme_keys`, labels and their keys in :mod:`_labels`, and ``display_logic`` in
:mod:`_display_logic`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from potato import defaults
from potato.config._checks import Findings, Invalid, Problem, check_keys, choice, mapping, show, subset
from potato.config._display_logic import check_display_logic
from potato.config._labels import PAGE_KEYS, assign_keys
from potato.config._scheme_keys import KEY_CHECKS, scheme_keys, type_problems
from potato.config.schema import free_response_name, justification_name
from potato.training.job.schemes import NUMERIC_TYPES, Scheme, SchemeType
from potato.config.upstream import SCHEME_KEYS, SCHEME_TYPES, unsupported_message

SCHEME_TYPE_NAMES = tuple(t.value for t in SchemeType)

_EXAMPLE = "{annotation_type: radio, name: sentiment, labels: [positive, negative]}"


def check_schemes(raw: object, findings: Findings, go_to_item: bool = True,
                  where: str = "annotation_schemes", one_choice: bool = False,
                  places: Sequence[int] | None = None, earlier: Sequence[str] = ()) -> tuple[Scheme, ...] | None:
    """Every scheme, or None if any is invalid (a missing ``annotation_schemes`` was already reported).
    ``go_to_item``: whether the page has its Go to item box (and so its key); ``where``: the config's
    place of the list, for messages (a study page's questions are schemes too); ``one_choice``: a
    radio question may offer a single label (a study page's "I agree"); ``places``: each scheme's
    index in the file, where entries that are not schemes were taken out of ``raw``; ``earlier``: the
    questions of the study pages before this one, which ``display_logic`` may name too."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        findings.error(
            where,
            f"must be a non-empty list of schemes, each with annotation_type, name and labels; got {show(raw)}",
        )
        return None
    def place(index: int) -> str:
        return f"{where}[{places[index] if places else index}]"

    built: list[dict[str, Any]] = []
    first_use: dict[str, int] = {}
    for index, item in enumerate(raw):
        at = place(index)
        values, problems = _scheme_values(item, at, findings, one_choice)
        name = values.get("name")
        if name in first_use:
            problems.append((".name", f"{show(name)} is already the name of {place(first_use[name])}; "
                                      "give each scheme its own name"))
        elif name is not None:
            first_use[name] = index
        findings.errors_at(at, problems)
        if not problems:
            built.append(values)
    if len(built) != len(raw):
        return None
    page_keys = {key: does for key, does in PAGE_KEYS.items() if go_to_item or key != "g"}
    keys = assign_keys(built, page_keys, findings)
    names = [values["name"] for values in built]
    names += [name for name in earlier if name not in names]
    for index, values in enumerate(built):
        if "display_logic" in values:
            logic = check_display_logic(values.pop("display_logic"), values["name"], names,
                                        f"{place(index)}.display_logic", findings)
            if logic is None:
                keys = None
            values["display_logic_checked"] = logic
    for index, values in enumerate(built):
        labels = [o.name for o in values.get("options", ())]
        wrong = [r for r in values.get("right_labels", ()) if r not in labels]
        if wrong:
            findings.error(f"{place(index)}.label_requirement", f"names {', '.join(map(show, wrong))}, which is not "
                                                                  f"one of the labels ({', '.join(labels)})")
            keys = None
        if values.get("justification") is not None and justification_name(values["name"]) in names:
            findings.error(f"{place(index)}.justification",
                           f"is stored as {show(justification_name(values['name']))}, which is already the name of "
                           "another scheme; rename that scheme")
            keys = None
        if values.get("free_response") is not None and free_response_name(values["name"]) in names:
            findings.error(f"{place(index)}.has_free_response",
                           f"its box is stored as {show(free_response_name(values['name']))}, which is already "
                           "the name of another scheme; rename that scheme")
            keys = None
    if keys is None:
        return None
    schemes: list[Scheme] = []
    for index, values in enumerate(built):
        schemes.append(_scheme(values, index, keys))
        if values.get("free_response") is not None:
            schemes.append(_free_response_box(schemes[-1], values["free_response"]))
        if values.get("justification") is not None:
            schemes.append(_justification_box(schemes[-1], values["justification"]))
    return tuple(schemes)


def _free_response_box(parent: Scheme, instruction: str) -> Scheme:
    """The text scheme behind a radio or multiselect scheme's free-text box: asked with it (the same
    display_logic), never required, and shown on the page inside it."""
    return Scheme(annotation_type=SchemeType.TEXT, name=free_response_name(parent.name), description=instruction,
                  multiline=False, display_logic=parent.display_logic, free_response_of=parent.name)


def _justification_box(parent: Scheme, given: Mapping[str, Any]) -> Scheme:
    """The scheme behind a pairwise comparison's justification (its reasons and rationale): asked with
    it, stored apart so the comparison's answer stays one choice for the preference models."""
    return Scheme(annotation_type=SchemeType.TEXT, name=justification_name(parent.name), description="Justification",
                  labels=tuple(given.get("reason_categories", ())), justification=True,
                  required=given.get("required", False), min_length=given.get("min_rationale_chars", 0),
                  placeholder=given.get("rationale_placeholder", "Explain your preference..."),
                  display_logic=parent.display_logic, free_response_of=parent.name)


def scheme_types(raw: object) -> dict[str, str | None]:
    """Scheme names (type or None if bad) that other keys may name, even when a scheme has errors."""
    out: dict[str, str | None] = {}
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                kind = item.get("annotation_type")
                out.setdefault(str(item["name"]), kind if kind in SCHEME_TYPE_NAMES else None)
    return out


STEP_ANSWERS = ("process_reward", "consensus_tracking", "context_attribution", "trajectory_eval")
"""The types asked on each step or turn of a trace whatever the config says."""
LEARNT_BY_STEP = ("radio", "multiselect", "likert", "select", "triage", *STEP_ANSWERS)
"""A question asked on each step whose answers a step classifier learns (each step's answer one
label, or labels, of a list); a text, number or slider on each turn is not learnt."""


def training_types(raw: object) -> dict[str, str | None]:
    """Like :func:`scheme_types`, with likert and select read as the radio answers they are to a trainer,
    a question asked on each turn or step whose answers are labels as ``per_step`` (a step
    classifier learns it, and its suggestions are an answer per step), any other question asked
    on each turn as ``turn_level`` (none learns it), and a pairwise comparison as ``pairwise`` where
    its answer is A, B or a tie (a preference model learns it), else as None."""
    radio_like = {"likert": "radio", "select": "radio", "triage": "radio"}
    per_turn = {str(item["name"]) for item in raw if isinstance(item, dict) and isinstance(item.get("name"), str)
                and (item.get("turn_level") is True or item.get("annotation_type") in STEP_ANSWERS)} \
        if isinstance(raw, list) else set()
    compared = {str(item["name"]) for item in raw if isinstance(item, dict) and isinstance(item.get("name"), str)
                and item.get("annotation_type") == "pairwise" and item.get("mode", "binary") != "binary"} \
        if isinstance(raw, list) else set()
    dynamic = {str(item["name"]) for item in raw if isinstance(item, dict) and isinstance(item.get("name"), str)
               and item.get("dynamic_labels") is True} if isinstance(raw, list) else set()  # no fixed classes to learn
    return {name: ("per_step" if kind in LEARNT_BY_STEP else "turn_level") if name in per_turn
            else None if name in compared or name in dynamic else radio_like.get(kind or "", kind)
            for name, kind in scheme_types(raw).items()}


def _scheme_values(item: object, at: str, findings: Findings,
                   one_choice: bool = False) -> tuple[dict[str, Any], list[Problem]]:
    """One scheme's checked keys and its problems; upstream-only keys are reported as features."""
    try:
        given = mapping(item, _EXAMPLE)
    except Invalid as bad:
        return {}, list(bad.problems)
    problems: list[Problem] = []
    features = [k for k in given if isinstance(k, str) and k in SCHEME_KEYS and k not in KEY_CHECKS]
    for key in features:
        feature = SCHEME_KEYS[key]
        (findings.error if feature.error else findings.warn)(f"{at}.{key}", unsupported_message(key, feature.what))
    raw = subset(given, lambda k: k not in features)
    if isinstance(raw.get("layout"), dict):
        findings.warn(f"{at}.layout", "changes only how the choices are laid out, and this server lays them out its "
                                      "own way: it is ignored")
    kind = raw.get("annotation_type")
    if isinstance(kind, str) and kind in SCHEME_TYPE_NAMES:  # the keys this type takes, not every type's
        values, more = check_keys(raw, KEY_CHECKS, f"a {kind} scheme", listed=scheme_keys(kind))
    else:
        values, more = check_keys(raw, KEY_CHECKS, "an annotation scheme")
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
    problems += type_problems(kind, raw, values, one_choice)
    return values, problems


def _scheme(values: dict[str, Any], index: int, keys: Mapping[tuple[int, str], str]) -> Scheme:
    kind = SchemeType(values["annotation_type"])
    options = tuple(replace(o, key=keys.get((index, o.name), "")) for o in values.get("options", ()))
    numeric = (kind in NUMERIC_TYPES or values.get("pairwise_mode") == "scale"
               or (kind is SchemeType.CONFIDENCE and not values.get("options")))  # a confidence slider
    shares = kind in (SchemeType.SOFT_LABEL, SchemeType.CONSTANT_SUM)
    bounded = numeric or kind is SchemeType.RANGE_SLIDER  # a number, or a range's two
    return Scheme(
        annotation_type=kind,
        name=values["name"],
        description=values.get("description", ""),
        labels=tuple(o.name for o in options),
        max_length=values.get("max_length", defaults.TEXT_MAX_LENGTH),
        options=options,
        sequential_key_binding=values.get("sequential_key_binding", True),
        required=values.get("required", False),
        right_labels=values.get("right_labels", ()),
        codebook=values.get("codebook", False),
        horizontal=values.get("horizontal", False),
        multiline=values.get("multiline", True),
        rows=values.get("rows", 3),
        placeholder=values.get("placeholder", ""),
        show_value=values.get("show_value", True),
        total=values.get("total"),
        min_label=values.get("min_label", ""),
        max_label=values.get("max_label", ""),
        min_value=values.get("min_value") if bounded or shares else None,
        max_value=values.get("max_value") if bounded else None,
        step=values.get("step") if bounded else None,
        starting_value=values.get("starting_value") if numeric else None,
        display_logic=values.get("display_logic_checked"),
        allow_overlapping=values.get("allow_overlapping", False),
        show_span_labels=values.get("show_span_labels", True),
        turns=values.get("turns"),
        first_error=values.get("first_error", False),
        pairwise_mode=values.get("pairwise_mode", ""),
        dimensions=values.get("dimensions", ()),
        tie_dimensions=values.get("tie_dimensions", ()),
        center_label=values.get("center_label", ""),
        items_key=values.get("items_key", ""),
        linked_labels=values.get("linked_labels", ()),
        error_types=values.get("error_types", ()),
        severities=values.get("severities", ()),
        max_score=values.get("max_score"),
        depths=values.get("depths", ()),
        auto_children=values.get("auto_children", False),
        auto_parent=values.get("auto_parent", False),
        searchable=values.get("searchable", False),
        auto_advance=values.get("auto_advance", False),
        names_step=values.get("names_step"),
        agents=values.get("agents", ()),
        edit_source=values.get("edit_source"),
        show_diff=values.get("show_diff", True),
        show_edit_distance=values.get("show_edit_distance", True),
        allow_reset=values.get("allow_reset", True),
        edit_steps=values.get("edit_steps"),
        step_text_key=values.get("step_text_key", "action"),
        editable_fields=values.get("editable_fields", ()),
        final_answer_key=values.get("final_answer_key"),
        reason_on_edit=values.get("reason_on_edit", False),
        review_steps=values.get("review_steps"),
        team_steps=values.get("team_steps"),
        team_agent_key=values.get("team_agent_key", "agent"),
        agent_dimensions=values.get("agent_dimensions", ()),
        team_dimensions=values.get("team_dimensions", ()),
        milestones=values.get("milestones", ()),
        allow_note=values.get("allow_note", False),
        review_answers=values.get("review_answers", ()),
        keyed=values.get("keyed"),
        grid_keys=values.get("grid_keys"),
        grid_size=values.get("grid_size", (3, 3)),
        range_start=values.get("range_start", (0, 0)),
        dynamic=values.get("dynamic", False),
        link_spans=values.get("link_spans"),
        link_types=values.get("link_types", ()),
        conjoint_attributes=values.get("conjoint_attributes", ()),
        profiles_field=values.get("profiles_field"),
        profiles_per_set=values.get("profiles_per_set", 0),
        show_none=values.get("show_none", True),
        qa_fields=values.get("qa_fields"),
        allow_unanswerable=values.get("allow_unanswerable", True),
        display_text=values.get("display_text"),
        display_html=values.get("display_html", False),
        sort_cards=values.get("sort_cards"),
        cards_anywhere=values.get("cards_anywhere", False),
        groups_filled=values.get("groups_filled", False),
        review_reads=values.get("review_reads", ()),
        quality_scale=values.get("quality_scale", 0),
        points_by_slider=values.get("points_by_slider", False),
        rates=values.get("rates", ""),
        shuffled=values.get("option_randomization", False),
    )
