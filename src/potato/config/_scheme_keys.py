"""Which keys each scheme type takes, and what each type needs and refuses.

The one key table for every scheme, with the types each key applies to, and the per-type checks
that fill in derived values (options, numeric bounds, text box layout). Apart from
:mod:`_schemes`, which walks the list and builds the schemes, so the rules per type are in one place.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from potato.config._checks import (
    Check,
    Invalid,
    Problem,
    anything,
    boolean,
    check_keys,
    choice,
    integer,
    mapping,
    number,
    section,
    show,
    text,
    text_list,
)
from potato.config._labels import key_of, label_options
from potato.config._turns import check_binding
from potato.training.job.turns import TURN_TYPES, TurnBinding
from potato.config.schema import FREE_RESPONSE_INSTRUCTION
from potato.training.job.schemes import (
    FIRST,
    NEUTRAL,
    PAIRWISE_MODES,
    RIGHT,
    SECOND,
    TIE,
    WRONG,
    LabelOption,
    LinkType,
)
from potato.config.upstream import unsupported_message
from potato.dynamic_labels import template_problem

MAX_LIKERT_SIZE = 20
MODES = ("first_error", "per_step")
"""A process reward's two ways of marking: the first wrong step (every later one wrong), or each step."""
REWARD_WORDS = {RIGHT: "Correct", NEUTRAL: "Neutral", WRONG: "Wrong"}
"""A process reward's buttons as upstream words them (``reward_labels`` renames them)."""
_PROCESS_REWARD = ("allow_neutral", "inline_with_trace", "reward_labels", "ai_prelabel", "require_verification")
_PAIRWISE = ("items_key", "show_labels", "allow_tie", "tie_label", "scale", "dimensions", "justification")

KEY_CHECKS: Mapping[str, Check] = {
    "annotation_type": anything,  # checked first, with the feature message for upstream's other types
    "name": text(),
    "description": text(allow_empty=True),
    "labels": anything,
    "max_length": integer(1),
    "sequential_key_binding": boolean,
    "codebook": boolean,
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
    "turn_level": boolean,
    "turn_binding": anything,
    "turn_label": text(allow_empty=True),
    "steps_key": text(),
    "agent_key": text(),
    "source_field": text(),
    "show_diff": boolean,
    "show_edit_distance": boolean,
    "allow_reset": boolean,
    "editable_fields": text_list("[thought, action]", unique=True),
    "require_reason_on_edit": boolean,
    "edit_final_answer": boolean,
    "final_answer_key": text(),
    "verdict_options": text_list("[correct, wrong_tool, wrong_args]", unique=True),
    "flags": text_list("[info_loss, dropped_constraint, garbling, goal_drift]", unique=True),
    "quality_scale": integer(2, 10),
    "type_key": text(),
    "screenshot_key": text(),
    "action_key": text(),
    "coord_space": choice(("normalized", "pixels"), "coord_space"),
    "segments_key": text(),
    "allow_correction": boolean,
    "agent_dimensions": text_list("[role fidelity, contribution]", unique=True),
    "team_dimensions": text_list("[coordination, communication]", unique=True),
    "milestones": text_list("[plan produced, result verified]", unique=True),
    "behaviors": text_list("[collusion, groupthink]", unique=True),
    "allow_note": boolean,
    "calls_key": text(),
    "resource_key": text(),
    "contention_labels": text_list("[deadlock, race_condition, benign]", unique=True),
    "speaker_key": text(),
    "user_speakers": text_list("[user, caller]", unique=True),
    "overlap_labels": text_list("[agent_should_respond, backchannel]", unique=True),
    "rating_scale": integer(2, 10),
    "image_key": text(),
    "rows_key": text(),
    "cols_key": text(),
    "default_rows": integer(1, 40),
    "default_cols": integer(1, 40),
    "roles": text_list("[data, col_header, row_header, empty]", unique=True),
    "show_values": boolean,
    "items_field": text(),
    "groups": text_list("[Science, Politics, Sports]", unique=True),
    "allow_empty_groups": boolean,
    "allow_multiple": boolean,
    "allow_html": boolean,
    "dynamic_labels": boolean,
    "question_field": text(),
    "passage_field": text(allow_empty=True),
    "allow_unanswerable": boolean,
    "highlight_color": text(),
    "profiles_per_set": integer(2, 4),
    "attributes": anything,
    "show_none_option": boolean,
    "profiles_field": text(),
    "span_schema": text(),
    "link_types": anything,
    "visual_display": anything,
    "default_low": number(-float(2**31), open_low=False),
    "default_high": number(-float(2**31), open_low=False),
    "allow_ties": boolean,
    "total_points": integer(1, 1_000_000),
    "min_per_item": integer(0, 1_000_000),
    "input_type": choice(("number", "slider"), "input_type"),
    "target_schema": text(),
    "option_randomization": boolean,
    "scale_type": choice(("likert", "slider"), "scale_type"),
    "agents": text_list("[Planner, Researcher]", unique=True),
    "step_text_key": text(),
    "mode": text(),  # each type's own modes: checked with the type
    "allow_neutral": boolean,
    "inline_with_trace": boolean,
    "reward_labels": section({name: text() for name in REWARD_WORDS}, "reward_labels",
                             "{correct: Valid, incorrect: Flawed}"),
    "ai_prelabel": boolean,
    "require_verification": boolean,
    "items_key": text(),
    "show_labels": boolean,
    "allow_tie": boolean,
    "tie_label": text(),
    "scale": anything,
    "dimensions": anything,
    "justification": anything,
    "options": anything,
    "scale_points": integer(2, 10),
    "scale_labels": text_list('["Poor", "Average", "Good"]'),
    "criteria": anything,
    "show_overall": boolean,
    "turns_key": text(),
    "acts": text_list("[proposal, agreement, decision]", unique=True),
    "linked_acts": text_list("[agreement]", unique=True),
    "hint": text(allow_empty=True),
    "correctness_options": text_list("[correct, incorrect]", unique=True),
    "error_types": anything,
    "severities": anything,
    "show_score": boolean,
    "max_score": number(0, open_low=True),
    "taxonomy": anything,
    "taxonomy_preset": anything,
    "tooltips": anything,
    "auto_select_children": boolean,
    "auto_select_parent": boolean,
    "show_search": boolean,
    **{f"{part}_label": text() for part in ("accept", "reject", "skip")},
    **{f"{part}_key": anything for part in ("accept", "reject", "skip")},
    "auto_advance": boolean,
    "show_progress": boolean,
    "pairs": anything,
    "total": number(0, None, open_low=True),
    "min_per_label": number(0, None, open_low=False),
    "show_distribution_chart": boolean,
    "left_label": text(),
    "right_label": text(),
    "show_value": boolean,
    "precision": integer(0, 6),
}


_ONLY_FOR: Mapping[str, tuple[str, ...]] = {
    "max_length": ("text",), "textarea": ("text",), "multiline": ("text",), "single_line": ("text",),
    "text_box_single_line": ("text",), "rows": ("text",), "placeholder": ("text",),
    "size": ("likert",), "min_label": ("likert",), "max_label": ("likert",),
    "min_value": ("slider", "number", "vas", "confidence", "range_slider"),
    "max_value": ("slider", "number", "vas", "confidence", "range_slider"),
    "min": ("number",),
    "max": ("number",),
    **{key: ("vas", "confidence", "range_slider") for key in ("left_label", "right_label")},
    **{key: ("range_slider",) for key in ("show_values", "default_low", "default_high")},
    **{key: ("card_sort",) for key in ("items_field", "groups", "allow_empty_groups", "allow_multiple")},
    "allow_html": ("pure_display",),
    "dynamic_labels": ("radio", "multiselect"),
    **{key: ("extractive_qa",) for key in ("question_field", "passage_field", "allow_unanswerable", "highlight_color")},
    **{key: ("conjoint",) for key in ("profiles_per_set", "attributes", "show_none_option", "profiles_field")},
    **{key: ("span_link",) for key in ("span_schema", "link_types", "visual_display")},
    **{key: ("vas",) for key in ("show_value", "precision")},
    "starting_value": ("slider",), "step": ("slider", "number", "confidence", "range_slider"),
    "horizontal": ("radio", "multiselect", "likert"),
    "sequential_key_binding": ("radio", "multiselect", "likert", "span", "pairwise", "multirate"),
    "has_free_response": ("radio", "multiselect"),
    "codebook": ("radio", "multiselect"),
    "title": ("span",), "show_span_labels": ("span",), "allow_overlapping": ("span",),
    "allow_discontinuous": ("span",), "entity_linking": ("span",), "target_field": ("span",),
    **{key: ("process_reward",) for key in _PROCESS_REWARD},
    **{key: ("pairwise",) for key in _PAIRWISE if key != "scale"}, "scale": ("pairwise", "agent_scorecard"),
    "mode": ("process_reward", "pairwise", "card_sort"),
    "options": ("multirate",),
    **{key: ("rubric_eval",) for key in ("scale_labels", "criteria", "show_overall")},
    "scale_points": ("rubric_eval", "semantic_differential", "confidence"), "pairs": ("semantic_differential",),
    **{key: ("soft_label",) for key in ("total", "min_per_label", "show_distribution_chart")},
    **{key: ("consensus_tracking", "context_attribution") for key in ("acts", "linked_acts", "hint")},
    "turns_key": ("consensus_tracking", "context_attribution", "voice_interaction"),
    **{key: ("tool_contention",) for key in ("calls_key", "resource_key", "contention_labels")},
    **{key: ("voice_interaction",) for key in ("speaker_key", "user_speakers", "overlap_labels", "rating_scale")},
    **{key: ("table_grid",) for key in ("image_key", "rows_key", "cols_key", "default_rows", "default_cols", "roles")},
    **{key: ("triage",) for key in ("accept_label", "reject_label", "skip_label", "accept_key", "reject_key", "skip_key",
                                    "auto_advance", "show_progress")},
    **{key: ("hierarchical_multiselect",) for key in ("taxonomy", "taxonomy_preset", "tooltips", "auto_select_children",
                                                      "auto_select_parent", "show_search")},
    **{key: ("trajectory_eval",) for key in ("correctness_options", "severities", "show_score", "max_score")},
    "error_types": ("trajectory_eval", "speech_transcript"),
    "steps_key": ("process_reward", "trajectory_eval", "failure_attribution", "trajectory_edit", "tool_call_review",
                  "handoff_review", "multimodal_reasoning", "gui_trajectory", "agent_scorecard", "emergent_behavior",
                  "agent_interaction_graph"),
    "step_text_key": ("process_reward", "trajectory_eval", "trajectory_edit"),
    "agent_key": ("failure_attribution", "handoff_review", "agent_scorecard", "emergent_behavior", "tool_contention",
                  "agent_interaction_graph"),
    "agents": ("failure_attribution", "agent_scorecard"),
    **{key: ("agent_scorecard",) for key in ("agent_dimensions", "team_dimensions", "milestones")},
    **{key: ("emergent_behavior",) for key in ("behaviors", "allow_note")},
    "verdict_options": ("tool_call_review", "multimodal_reasoning", "gui_trajectory"), "allow_ties": ("ranking",),
    "type_key": ("multimodal_reasoning",),
    **{key: ("gui_trajectory",) for key in ("screenshot_key", "action_key", "coord_space")},
    **{key: ("speech_transcript",) for key in ("segments_key", "allow_correction")},
    **{key: ("constant_sum",) for key in ("total_points", "min_per_item", "input_type")},
    **{key: ("confidence",) for key in ("target_schema", "scale_type")},
    "option_randomization": ("radio", "multiselect", "select", "multirate"),
    **{key: ("handoff_review",) for key in ("flags", "quality_scale")},
    "source_field": ("text_edit",),
    **{key: ("text_edit", "trajectory_edit") for key in ("show_diff", "show_edit_distance", "allow_reset")},
    **{key: ("trajectory_edit",) for key in ("editable_fields", "require_reason_on_edit", "edit_final_answer",
                                             "final_answer_key")},
}


_NO_LABELS = ("slider", "number", "vas", "semantic_differential", "process_reward", "rubric_eval",
              "consensus_tracking", "context_attribution", "trajectory_eval", "hierarchical_multiselect", "triage", "failure_attribution",
              "text_edit", "trajectory_edit", "tool_call_review", "handoff_review", "multimodal_reasoning", "gui_trajectory",
              "speech_transcript", "agent_scorecard", "emergent_behavior", "tool_contention", "voice_interaction",
              "agent_interaction_graph", "table_grid", "range_slider", "card_sort", "extractive_qa",
              "conjoint", "span_link")
_TURN_KEYS = ("turn_level", "turn_binding", "turn_label")
"""Read by :func:`check_binding`, which names the types that take them."""


def _listed(kinds: tuple[str, ...]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (pure)."""
    return " and ".join(kinds) if len(kinds) < 3 else f"{', '.join(kinds[:-1])} and {kinds[-1]}"


def scheme_keys(kind: str) -> list[str]:
    """The keys a scheme of type ``kind`` takes, in the table's order (pure)."""
    return [key for key in KEY_CHECKS if kind in _ONLY_FOR.get(key, (kind,))
            and not (key == "labels" and kind in _NO_LABELS) and not (key in _TURN_KEYS and kind not in TURN_TYPES)]


def type_problems(kind: str, raw: Mapping[Any, object], values: dict[str, Any],
                  one_choice: bool = False) -> list[Problem]:
    """What ``kind`` needs and refuses; fills in the derived values (options, bounds, text layout).
    ``one_choice``: a radio question may offer one label (a study page's "I agree")."""
    problems: list[Problem] = [
        (f".{key}", f"applies to {_listed(kinds)} schemes only; remove it from this {kind} scheme")
        for key, kinds in _ONLY_FOR.items() if key in values and kind not in kinds
    ]
    if "label_requirement" in values:
        try:
            values["required"], values["right_labels"] = _label_requirement(values.pop("label_requirement"))
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
        problems += label_options(kind, raw.get("labels"), values, one_choice)
        if values.pop("dynamic_labels", False):
            values["dynamic"] = True
            values["sequential_key_binding"] = True  # a key for each place: the labels change with the item
            problems += [(f".labels[{n}]", problem) for n, o in enumerate(values.get("options", ()))
                         if (problem := template_problem(o.name))]
    elif kind == "ranking":
        problems += label_options("radio", raw.get("labels"), values) + _ranking(values)
    elif kind == "confidence":
        problems += _confidence(raw, values)
    elif kind == "constant_sum":
        problems += label_options("radio", raw.get("labels"), values) or _points(values)
    elif kind == "process_reward":
        problems += _process_reward(raw, values)
    elif kind == "pairwise":
        problems += _pairwise(raw, values)
    elif kind == "triage":
        problems += _triage(raw, values)
    elif kind == "hierarchical_multiselect":
        problems += _tree(raw, values)
    elif kind == "trajectory_eval":
        problems += _trajectory(raw, values)
    elif kind == "soft_label":
        problems += label_options("radio", raw.get("labels"), values) or _soft(values)
    elif kind == "vas" and raw.get("labels") in (None, []):
        problems += _vas(values)
    elif kind == "semantic_differential" and raw.get("labels") in (None, []):
        problems += _differential(values)
    elif kind in ("consensus_tracking", "context_attribution"):
        problems += _consensus(kind, raw, values)
    elif kind == "failure_attribution":
        problems += _attribution(raw, values)
    elif kind == "text_edit":
        problems += _text_edit(raw, values)
    elif kind == "trajectory_edit":
        problems += _trajectory_edit(raw, values)
    elif kind == "table_grid":
        problems += _grid(raw, values)
    elif kind == "range_slider":
        problems += _range(raw, values)
    elif kind == "card_sort":
        problems += _card_sort(raw, values)
    elif kind == "pure_display":
        problems += _pure_display(raw, values)
    elif kind == "span_link":
        problems += _span_link(raw, values)
    elif kind == "conjoint":
        problems += _conjoint(raw, values)
    elif kind == "extractive_qa":
        values["qa_fields"] = (values.pop("question_field", "question"), values.pop("passage_field", ""))
        values["allow_unanswerable"] = values.pop("allow_unanswerable", True)
        values.pop("highlight_color", None)  # the answer is marked the page's own way
        if raw.get("labels") not in (None, []):
            problems.append((".labels", "an extractive_qa scheme's answer is a stretch of its passage; remove labels"))
    elif kind in ("agent_scorecard", "emergent_behavior", "agent_interaction_graph"):
        problems += _team(kind, raw, values)
    elif kind in REVIEWS:
        problems += _review(kind, raw, values)
    elif kind == "rubric_eval":
        problems += _rubric(raw, values)
    elif kind == "multirate":
        problems += _multirate(values.pop("options", None), values) + label_options("radio", raw.get("labels"), values)
    elif raw.get("labels") in ([""], [None]) and kind == "text":
        values.pop("labels", None)  # upstream's one box without a caption: the same as no labels
    elif raw.get("labels") not in (None, []) and kind == "text":
        problems += label_options("multiselect", raw.get("labels"), values)  # one box per label, at least one
    elif raw.get("labels") not in (None, []):
        problems.append((".labels", f"a {kind} scheme takes no labels (annotators pick a number); remove labels, "
                                    "or use annotation_type: radio or likert"))
    if kind == "span":
        problems += _span_features(values)
    problems += check_binding(kind, values)
    if kind == "text":
        problems += _text_layout(values)
    if kind in ("slider", "number"):
        problems += _bounds(kind, values)
    return problems


def _process_reward(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's process reward: each step of the item's list under ``steps_key`` marked correct or
    wrong (and neutral, with ``allow_neutral`` in per_step mode), read as a question asked on each
    step whose answers are those three."""
    if raw.get("labels") not in (None, []):
        return [(".labels", "a process_reward scheme's answers are correct and incorrect (and neutral with "
                            "allow_neutral); remove labels, and rename the buttons with reward_labels")]
    problems: list[Problem] = []
    for key, what in (("ai_prelabel", "an outside LLM's suggested reward for each step"),
                      ("require_verification", "confirming each of an outside LLM's suggested rewards")):
        if values.pop(key, False):
            problems.append((f".{key}", unsupported_message(key, what)))
    try:
        mode = choice(MODES, "mode")(values.pop("mode", "first_error"))
    except Invalid as bad:
        return [(".mode", bad.problems[0][1])]
    neutral = values.pop("allow_neutral", False)
    if neutral and mode == "first_error":
        problems.append((".allow_neutral", "applies only with mode: per_step (in first_error mode every step before "
                                           "the first wrong one is correct and every later one wrong); remove it "
                                           "or set mode: per_step"))
    words = {**REWARD_WORDS, **values.pop("reward_labels", {})}
    values["options"] = tuple(LabelOption(name, text=words[name]) for name in (RIGHT, NEUTRAL, WRONG)
                              if name != NEUTRAL or neutral)
    values["first_error"] = mode == "first_error"
    values["turns"] = TurnBinding(
        field=values.pop("steps_key", "steps"), steps_text=values.pop("step_text_key", "action"), agent_only=True,
        placement="inline" if values.pop("inline_with_trace", False) else "list",
        label=str(values.get("description") or values.get("name", "")))
    return problems


def _text_edit(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's post-editing: the item's text (or its field ``source_field``) shown, and rewritten
    in a box that starts with it; stored with the edit distances the server counts."""
    values["edit_source"] = values.pop("source_field", "")
    if raw.get("labels") not in (None, []):
        return [(".labels", "a text_edit scheme's answer is the rewritten text; remove labels")]
    return []


def _trajectory_edit(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's trajectory correction: each of ``editable_fields`` (default: the ``step_text_key``,
    ``action``) of each step of the item's list under ``steps_key`` rewritten in a box that starts with
    it, and the final answer under ``final_answer_key`` with ``edit_final_answer``."""
    values["edit_steps"] = values.pop("steps_key", "steps")
    values["step_text_key"] = text_key = values.pop("step_text_key", "action")
    values["editable_fields"] = tuple(values.pop("editable_fields", ()) or (text_key,))
    final_key = values.pop("final_answer_key", "final_answer")
    values["final_answer_key"] = final_key if values.pop("edit_final_answer", False) else None
    values["reason_on_edit"] = values.pop("require_reason_on_edit", False)
    if raw.get("labels") not in (None, []):
        return [(".labels", "a trajectory_edit scheme's answer is the steps as rewritten; remove labels")]
    return []


CONFIDENCE_WORDS = ("Guessing", "Somewhat confident", "Fairly confident", "Confident", "Certain")
"""Upstream's confidence scale, least sure first, where a scheme names no labels of its own."""


def _confidence(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's confidence rating of another answer (``target_schema``): a point on a scale of
    ``scale_points`` (5), each named by its ``labels`` (else upstream's words; points beyond them
    "Level n") and stored as its number, "1" the least sure; or, with ``scale_type: slider``, a number
    from ``min_value`` (0, ``left_label``) to ``max_value`` (100, ``right_label``)."""
    values["rates"] = values.pop("target_schema", "")
    values["sequential_key_binding"] = False  # upstream's scale has no keys; the question it rates keeps its own
    if values.pop("scale_type", "likert") == "slider":
        if raw.get("labels") not in (None, []):
            return [(".labels", "a confidence slider has no points to name; remove labels, and name its ends with "
                                "left_label and right_label")]
        values.pop("labels", None)
        values.pop("scale_points", None)
        values.setdefault("min_value", 0)
        values.setdefault("max_value", 100)
        values.setdefault("step", 1)
        values["min_label"] = values.pop("left_label", "Not confident")
        values["max_label"] = values.pop("right_label", "Very confident")
        if values["min_value"] >= values["max_value"]:
            return [(".max_value", f"must be above min_value ({values['min_value']:g}); got {values['max_value']:g}")]
        return []
    given = raw.get("labels") or []
    if not isinstance(given, list):
        return [(".labels", f"must be a list of the scale's names, least sure first, got {show(given)}")]
    words = [str(w.get("name", "")) if isinstance(w, dict) else str(w) for w in given] or list(CONFIDENCE_WORDS)
    points = values.pop("scale_points", len(words) if given else 5)
    words = (words if given else words[:points]) + [f"Level {n}" for n in range(len(words) + 1, points + 1)]
    values.pop("labels", None)
    values["options"] = tuple(LabelOption(str(n), text=f"{n} · {word}") for n, word in enumerate(words, 1))
    return []


def _points(values: dict[str, Any]) -> list[Problem]:
    """Upstream's constant sum: ``total_points`` (100) spread over the labels in whole points, each at
    least ``min_per_item`` (0), in a number box each or, with ``input_type: slider``, a slider each."""
    total, least = values.pop("total_points", 100), values.pop("min_per_item", 0)
    if least * len(values.get("options", ())) > total:
        return [(".min_per_item", f"{least} for each of {len(values['options'])} labels is more than total_points "
                                  f"({total}); lower min_per_item or raise total_points")]
    values.update(total=float(total), min_value=least, sequential_key_binding=False,
                  points_by_slider=values.pop("input_type", "number") == "slider")
    return []


def _ranking(values: dict[str, Any]) -> list[Problem]:
    """Upstream's ranking: its labels put in order, best first, by moving them up and down. Its page
    reads ``allow_ties`` and offers no tie, so only ``false`` is taken."""
    values["sequential_key_binding"] = False  # the arrow keys move the focused label; a number would say nothing
    if values.pop("allow_ties", False):
        return [(".allow_ties", "ties in a ranking are not offered (upstream's page offers none either); remove "
                                "allow_ties, or ask for a rating of each label with annotation_type: multirate")]
    return []


REVIEWS = {
    "tool_call_review": ("verdict_options", ("correct", "wrong_tool", "wrong_args"), ("verdict", "notes")),
    "handoff_review": ("flags", ("info_loss", "dropped_constraint", "garbling", "goal_drift"), ("flags", "quality")),
    "multimodal_reasoning": ("verdict_options", ("coherent", "incoherent", "visual_hallucination", "uncertain"),
                             ("verdict", "notes")),
    "gui_trajectory": ("verdict_options", ("correct", "wrong_element", "wrong_action", "hallucinated"),
                       ("verdict", "notes")),
    "speech_transcript": ("error_types", ("asr_error", "tts_artifact", "mispronunciation", "disfluency"),
                          ("errors", "correction")),
    "tool_contention": ("contention_labels", ("deadlock", "circular_wait", "race_condition", "benign"), ("verdict",)),
    "voice_interaction": ("overlap_labels", ("agent_should_respond", "agent_should_resume", "backchannel", "uncertain"),
                          ("verdict",)),
}
"""Upstream's reviews of an item's parts, one answer each: the key listing the words a part is given,
upstream's words, and what each part's answer holds (:data:`~potato.training.job.schemes.REVIEW_ANSWERS`)."""


def _review(kind: str, raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's reviews of an item's parts (:mod:`potato.reviews`): each tool call, reasoning block or
    GUI step judged with one of ``verdict_options`` and notes; each handoff between agents flagged
    with ``flags`` and rated 1 to ``quality_scale``; each segment of a transcript tagged with its
    ``error_types`` and, with ``allow_correction``, its words as they should be; each contention for a
    resource labelled with one of ``contention_labels``; each overlap of a caller and a voice agent with
    one of ``overlap_labels``, and the call's turn-taking rated 1 to ``rating_scale``."""
    what, words, given = REVIEWS[kind]
    answers: tuple[str, ...] = given
    listed, default = {"speech_transcript": ("segments_key", "segments"), "tool_contention": ("calls_key", "calls"),
                       "voice_interaction": ("turns_key", "turns")}.get(kind, ("steps_key", "steps"))
    values["review_steps"] = values.pop(listed, default)
    reads = {"handoff_review": {"agent": values.pop("agent_key", "agent")},
             "tool_contention": {"agent": values.pop("agent_key", "agent"), "resource": values.pop("resource_key", "resource")},
             "voice_interaction": {"speaker": values.pop("speaker_key", "speaker"),
                                   "users": ",".join(values.pop("user_speakers", ("user", "human", "caller")))},
             "multimodal_reasoning": {"type": values.pop("type_key", "type")},
             "gui_trajectory": {"screenshot": values.pop("screenshot_key", "screenshot"),
                                "action": values.pop("action_key", "action"),
                                "coord_space": values.pop("coord_space", "normalized")}}.get(kind, {})
    values["review_reads"] = tuple(reads.items())
    if kind == "handoff_review":
        values["quality_scale"] = values.pop("quality_scale", 5)
    if kind in ("tool_contention", "voice_interaction"):  # stored by the parts' numbers, as upstream stores them
        values["keyed"] = "contentions" if kind == "tool_contention" else "overlaps"
    if kind == "voice_interaction":
        values["quality_scale"] = values.pop("rating_scale", 5)
    if not values.pop("allow_correction", True):
        answers = answers[:1]
    values["review_answers"] = answers
    words = values.pop(what, words)
    if what == "error_types" and (not isinstance(words, (list, tuple)) or not words
                                  or not all(isinstance(w, str) and w for w in words) or len(set(words)) != len(words)):
        return [(".error_types", f"must be a list of different words, such as [asr_error, disfluency], got {show(words)}")]
    values["options"] = tuple(LabelOption(word, text=word.replace("_", " ")) for word in words)
    values["sequential_key_binding"] = False  # a key could not say which part it answers
    if raw.get("labels") not in (None, []):
        return [(".labels", f"a {kind} scheme's answers are its {what}; remove labels, and list them under {what}")]
    return []


_LINK_TYPE = {"name": text(), "directed": boolean, "allowed_source_labels": text_list("[PERSON]"),
              "allowed_target_labels": text_list("[ORGANIZATION]"), "color": text(), "description": text(allow_empty=True),
              "max_spans": anything}


def _span_link(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's links between the spans of ``span_schema`` (a span scheme of this config, checked
    once all are read), each of one of ``link_types``: its name, ``directed`` (from the first span to
    the last) and the labels those may have. ``visual_display`` is how upstream draws the arcs; the
    links here are listed, and it is ignored."""
    values.pop("visual_display", None)
    problems: list[Problem] = []
    schema = values.pop("span_schema", None)
    if not schema:
        problems.append((".span_schema", "missing; name the span scheme whose spans the links join"))
    values["link_spans"] = schema or ""
    kinds: list[LinkType] = []
    raw_types = values.pop("link_types", None)
    for n, entry in enumerate(raw_types if isinstance(raw_types, list) else []):
        try:
            got = section(_LINK_TYPE, f"link_types[{n}]", "{name: WORKS_FOR, directed: true}")(entry)
        except Invalid as bad:
            problems += [(f".link_types[{n}]" + sub, detail) for sub, detail in bad.problems]
            continue
        if not got.get("name"):
            problems.append((f".link_types[{n}].name", "missing; name the kind of link, such as WORKS_FOR"))
            continue
        kinds.append(LinkType(got["name"], got.get("directed", True), tuple(got.get("allowed_source_labels", ())),
                              tuple(got.get("allowed_target_labels", ()))))
    if not isinstance(raw_types, list) or (not kinds and not problems):
        problems.append((".link_types", "list the kinds of link, such as [{name: WORKS_FOR, directed: true}]"))
    values["link_types"] = tuple(kinds)
    if raw.get("labels") not in (None, []):
        problems.append((".labels", "a span_link scheme's answers are its link_types; remove labels"))
    return problems


_ATTRIBUTE = {"name": text(), "levels": text_list("[Fast, Slow]", unique=True)}


def _conjoint(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's conjoint choice: ``profiles_per_set`` (3) profiles, each a level of every one of
    ``attributes`` (or the item's own under ``profiles_field``), one chosen, or none of them with
    ``show_none_option`` (true)."""
    problems: list[Problem] = []
    attributes = values.pop("attributes", None)
    parsed: list[tuple[str, tuple[str, ...]]] = []
    for n, entry in enumerate(attributes if isinstance(attributes, list) else []):
        try:
            got = section(_ATTRIBUTE, f"attributes[{n}]", "{name: Speed, levels: [Fast, Slow]}")(entry)
        except Invalid as bad:
            problems += [(f".attributes[{n}]" + sub, detail) for sub, detail in bad.problems]
            continue
        if not got.get("name") or not got.get("levels"):
            problems.append((f".attributes[{n}]", "needs a name and levels, such as {name: Speed, levels: [Fast, Slow]}"))
            continue
        parsed.append((got["name"], tuple(got["levels"])))
    values["profiles_field"] = values.pop("profiles_field", None)
    if attributes is not None and not isinstance(attributes, list):
        problems.append((".attributes", f"must be a list such as [{{name: Speed, levels: [Fast, Slow]}}], got {show(attributes)}"))
    elif not parsed and not values["profiles_field"] and not problems:
        problems.append((".attributes", "missing; list the attributes and their levels, such as [{name: Speed, levels: "
                                        "[Fast, Slow]}], or name the item's profiles with profiles_field"))
    values["conjoint_attributes"] = tuple(parsed)
    values["profiles_per_set"] = values.pop("profiles_per_set", 3)
    values["show_none"] = values.pop("show_none_option", True)
    if raw.get("labels") not in (None, []):
        problems.append((".labels", "a conjoint scheme's answers are its profiles; remove labels, and list the "
                                    "attributes and their levels under attributes"))
    return problems


def _pure_display(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's display-only block between the questions: its description, then each of its labels,
    shown as Markdown (a heading such as ``## Scales``), or as HTML kept to harmless elements with
    ``allow_html``; it takes no answer."""
    labels = raw.get("labels") or []
    if not isinstance(labels, list) or not all(isinstance(line, str) for line in labels):
        return [(".labels", f"a pure_display scheme's labels are the lines it shows, as a list of text; got {show(labels)}")]
    values.pop("labels", None)
    values["display_text"] = "\n\n".join([str(values.get("description") or ""), *labels]).strip()
    values["display_html"] = values.pop("allow_html", False)
    return []


def _card_sort(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's card sort, closed: each of the item's cards (its list under ``items_field``) put in
    one of ``groups`` (or several, with ``allow_multiple``); with ``allow_empty_groups: false`` every
    group needs a card. Open mode, where annotators make the groups, is refused by name."""
    mode = values.pop("mode", "closed")
    if mode == "open":
        return [(".mode", unsupported_message("card_sort mode: open", "groups annotators make themselves; list the "
                                              "groups under groups and use mode: closed"))]
    if mode != "closed":
        return [(".mode", f"must be closed (the groups listed under groups) or open, got {show(mode)}")]
    groups = values.pop("groups", ())
    if len(groups) < 2:
        return [(".groups", "list at least two groups to sort the cards into, such as [Science, Politics]")]
    values["options"] = tuple(LabelOption(group) for group in groups)
    values["sort_cards"] = values.pop("items_field", "items")
    values["cards_anywhere"] = values.pop("allow_multiple", False)
    values["groups_filled"] = not values.pop("allow_empty_groups", True)
    values["sequential_key_binding"] = False
    if raw.get("labels") not in (None, []):
        return [(".labels", "a card_sort scheme's answers are its groups; remove labels, and list them under groups")]
    return []


def _range(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's range slider: two thumbs from ``min_value`` (0) to ``max_value`` (100) in steps of
    ``step`` (1), between ``left_label`` and ``right_label``, the values shown (``show_values``);
    they start at ``default_low`` and ``default_high`` (a quarter in from each end)."""
    low, high = values.setdefault("min_value", 0), values.setdefault("max_value", 100)
    if low >= high:
        return [(".max_value", f"must be greater than min_value ({low:g}), got {high:g}")]
    step = values.setdefault("step", 1)
    span = high - low
    start = (values.pop("default_low", low + span // 4), values.pop("default_high", high - span // 4))
    if not low <= start[0] <= start[1] <= high:
        return [(".default_low", f"the thumbs must start within {low:g} to {high:g}, the low one not above the high "
                                 f"one; got {start[0]:g} and {start[1]:g}")]
    values.update(range_start=start, min_label=values.pop("left_label", ""), max_label=values.pop("right_label", ""),
                  show_value=values.pop("show_values", True))
    if raw.get("labels") not in (None, []):
        return [(".labels", "a range_slider scheme takes no labels (annotators pick two numbers); remove labels")]
    return [] if step else [(".step", "must be greater than 0")]


def _grid(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's table grid: a table's image (the item's ``image_key``) with a grid of its cells, its
    size from the item (``rows_key``, ``cols_key``; else ``default_rows`` by ``default_cols``) and
    changeable, each cell marked with one of ``roles`` (the first: a cell not marked)."""
    values["grid_keys"] = (values.pop("image_key", "image"), values.pop("rows_key", "rows"), values.pop("cols_key", "cols"))
    values["grid_size"] = (values.pop("default_rows", 3), values.pop("default_cols", 3))
    roles = values.pop("roles", ("data", "col_header", "row_header", "empty"))
    values["options"] = tuple(LabelOption(role, text=role.replace("_", " ")) for role in roles)
    values["sequential_key_binding"] = False  # keys move between the cells
    if raw.get("labels") not in (None, []):
        return [(".labels", "a table_grid scheme's answers are its roles; remove labels, and list them under roles")]
    if len(roles) < 2:
        return [(".roles", "needs at least two roles, the first for a cell not marked, such as [data, col_header]")]
    return []


AGENT_DIMENSIONS = ("role fidelity", "contribution", "coordination")
TEAM_DIMENSIONS = ("coordination", "communication", "efficiency")
BEHAVIOURS = ("collusion", "groupthink", "cascading_error", "role_drift")
"""Upstream's defaults for a scorecard's dimensions and the emergent behaviours asked about."""


def _team(kind: str, raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's answers about a multi-agent trace's team (:mod:`potato.teams`): a scorecard scores
    each agent (``agents``, else those of the item's steps) on ``agent_dimensions`` and the team on
    ``team_dimensions``, 1 to ``scale``, and checks off ``milestones``; emergent behaviours are, for
    each of ``behaviors``, the turns that take part (and a note, with ``allow_note``); an interaction
    graph marks the agents on the critical path and the passages between agents that mattered."""
    values["team_steps"] = values.pop("steps_key", "steps")
    values["team_agent_key"] = values.pop("agent_key", "agent")
    if raw.get("labels") not in (None, []):
        if kind == "agent_interaction_graph":
            return [(".labels", "an agent_interaction_graph scheme's answers are the item's agents and the passages "
                                "between them; remove labels")]
        what = "agent_dimensions, team_dimensions and milestones" if kind == "agent_scorecard" else "behaviors"
        return [(".labels", f"a {kind} scheme's answers are its {what}; remove labels, and list them there")]
    if kind == "agent_interaction_graph":
        return []
    if kind == "emergent_behavior":
        values["options"] = tuple(LabelOption(b, text=b.replace("_", " ")) for b in values.pop("behaviors", BEHAVIOURS))
        values["allow_note"] = values.pop("allow_note", False)
        return []
    values["agents"] = tuple(values.pop("agents", ()))
    values["agent_dimensions"] = tuple(values.pop("agent_dimensions", AGENT_DIMENSIONS))
    values["team_dimensions"] = tuple(values.pop("team_dimensions", TEAM_DIMENSIONS))
    values["milestones"] = tuple(values.pop("milestones", ()))
    scale = values.pop("scale", 5)
    if isinstance(scale, bool) or not isinstance(scale, int) or not 2 <= scale <= 10:
        return [(".scale", f"must be a whole number of points from 2 to 10, such as 5, got {show(scale)}")]
    values["quality_scale"] = scale
    return []


def _attribution(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's failure attribution: the agent that caused a failure, the decisive step and why,
    once per item; the steps are the item's list under ``steps_key``, each taken by the agent its
    ``agent_key`` names (else its role or speaker), and the agents are ``agents`` where given."""
    values["names_step"] = TurnBinding(field=values.pop("steps_key", "steps"), steps_text="content",
                                       speaker_key=values.pop("agent_key", "agent"))
    values["agents"] = tuple(values.pop("agents", ()))
    if raw.get("labels") not in (None, []):
        return [(".labels", "a failure_attribution scheme's answers are the item's own agents and steps; remove "
                            "labels, and list the agents it may name under agents")]
    return []


def _named(entries: list[Any], at: str, table: Mapping[str, Check], example: str, what: str, missing: str,
           twice: Callable[[str], Problem] | None = None, plain: bool = False) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The entries of a list of named things (a rubric's criteria, a comparison's dimensions...),
    each checked against ``table``, and the problems under ``at[n]``: an entry without a name gets
    ``missing``, a name used twice ``twice(name)``; ``plain`` takes a bare string as a name."""
    out: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for n, entry in enumerate(entries):
        try:
            checked, more = (({"name": entry}, []) if plain and isinstance(entry, str) and entry.strip() else
                             check_keys(mapping(entry, example), table, what))
        except Invalid as bad:
            checked, more = {}, list(bad.problems)
        if "name" not in checked and not more:
            more = [(".name", missing)]
        elif twice is not None and checked.get("name") in [o["name"] for o in out]:
            more = [twice(checked["name"])]
        problems += [(f"{at}[{n}]" + sub, detail) for sub, detail in more]
        if not more:
            out.append(checked)
    return out, problems


_ROW = {"name": text(), "label": text(allow_empty=True), "tooltip": text(allow_empty=True),
        "description": text(allow_empty=True)}


def _multirate(rows: object, values: dict[str, Any]) -> list[Problem]:
    """Upstream's multirate: each of its ``options`` (a row) rated with one of its ``labels``, stored
    as ``{option: label}``."""
    if not isinstance(rows, list) or not rows:
        return [(".options", "missing; a multirate scheme lists what is rated, e.g. options: [Document 1, Document 2], "
                             "or [{name: doc_1, label: Document 1}]")]
    found, problems = _named(rows, ".options", _ROW, "{name: doc_1, label: Document 1}", "an option",
                             "missing; name the option (what is stored), e.g. name: doc_1", plain=True,
                             twice=lambda name: ("", f"{show(name)} appears more than once; list each option only once"))
    out = [LabelOption(row["name"], text=row.get("label", ""), tooltip=row.get("tooltip") or row.get("description", ""))
           for row in found]
    values.update(dimensions=tuple(out), sequential_key_binding=False)
    return problems


TRIAGE = (("accept", "Keep", "1"), ("reject", "Discard", "2"), ("skip", "Unsure", "3"))
"""Upstream's triage: its three answers, their default words and keys."""


def _triage(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's triage: keep, discard or unsure (``accept``, ``reject``, ``skip``), each with its word
    and key; ``auto_advance`` (on by default) saves a pick and shows the next item at once."""
    if raw.get("labels") not in (None, []):
        return [(".labels", "a triage scheme's answers are accept, reject and skip; remove labels, and name them with "
                            "accept_label, reject_label and skip_label")]
    problems: list[Problem] = []
    options = []
    for name, word, key in TRIAGE:
        try:
            given = key_of(values.pop(f"{name}_key", key))
        except Invalid as bad:
            problems.append((f".{name}_key", bad.problems[0][1]))
            continue
        options.append(LabelOption(name, text=values.pop(f"{name}_label", word), key=given))
    values.pop("show_progress", None)  # the page's own progress line is always shown
    values.update(options=tuple(options), auto_advance=values.pop("auto_advance", True))
    return problems


def _tree(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's hierarchical multiselect: any nodes of a tree of labels (``taxonomy``, nested
    mappings ending in lists, or ``taxonomy_preset: mast``), stored as a list of the nodes' names."""
    if raw.get("labels") not in (None, []):
        return [(".labels", "a hierarchical_multiselect scheme's labels are its taxonomy; remove labels")]
    tree = values.pop("taxonomy", None)
    preset = values.pop("taxonomy_preset", None)
    tips: dict[str, str] = {}
    if tree is None and preset is not None:
        if preset not in TAXONOMIES:
            return [(".taxonomy_preset", f"{show(preset)} is not a taxonomy this server ships; valid: "
                                         f"{', '.join(TAXONOMIES)}, or write the tree under taxonomy")]
        tree, tips = TAXONOMIES[preset]
    if not isinstance(tree, (dict, list)) or not tree:
        return [(".taxonomy", "missing; give the tree of labels, e.g. taxonomy: {Science: [Physics, Biology], "
                              "Arts: [Music]}, or taxonomy_preset: mast")]
    given = values.pop("tooltips", {})
    if not isinstance(given, dict):
        return [(".tooltips", f"must map a label to its description, e.g. {{Physics: The study of matter}}, got {show(given)}")]
    tips.update({str(k): str(v) for k, v in given.items()})
    nodes: list[tuple[str, int]] = []

    def walk(branch: dict[Any, Any] | list[Any], depth: int) -> None:
        for name, children in ([(key, branch[key]) for key in list(branch)] if isinstance(branch, dict)
                               else [(b, None) for b in branch]):
            nodes.append((str(name), depth))
            if isinstance(children, (dict, list)) and children:
                walk(children, depth + 1)

    walk(tree, 0)
    names = [name for name, _ in nodes]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return [(".taxonomy", f"names {', '.join(map(show, twice))} more than once; each node is stored by its name, "
                              "so give each its own")]
    values["options"] = tuple(LabelOption(name, tooltip=tips.get(name, "")) for name in names)
    values.update(depths=tuple(depth for _, depth in nodes), auto_children=values.pop("auto_select_children", False),
                  auto_parent=values.pop("auto_select_parent", False), searchable=values.pop("show_search", False),
                  sequential_key_binding=False)
    return []


MAST = {
    "Specification & System Design": [
        "1.1 Disobey task specification", "1.2 Disobey role specification", "1.3 Step repetition",
        "1.4 Loss of conversation history", "1.5 Unaware of termination conditions"],
    "Inter-Agent Misalignment": [
        "2.1 Conversation reset", "2.2 Fail to ask for clarification", "2.3 Task derailment",
        "2.4 Information withholding", "2.5 Ignored other agent's input", "2.6 Reasoning-action mismatch"],
    "Task Verification & Termination": [
        "3.1 Premature termination", "3.2 No or incomplete verification", "3.3 Incorrect verification"],
}
"""The failure modes of multi-agent LLM systems in the MAST taxonomy (Cemri et al., 2025), by their
codes and names as the paper gives them."""
MAST_TIPS = {
    "1.1 Disobey task specification": "Breaks a constraint or requirement the task states.",
    "1.2 Disobey role specification": "Acts outside the role it was given.",
    "1.3 Step repetition": "Repeats a step already done.",
    "1.4 Loss of conversation history": "Loses earlier context and contradicts or ignores it.",
    "1.5 Unaware of termination conditions": "Does not see when the task is done and should stop.",
    "2.1 Conversation reset": "Restarts the conversation, throwing progress away.",
    "2.2 Fail to ask for clarification": "Goes on with an unclear request instead of asking.",
    "2.3 Task derailment": "Drifts off the task onto something else.",
    "2.4 Information withholding": "Keeps back what another agent needs.",
    "2.5 Ignored other agent's input": "Disregards another agent's input or correction.",
    "2.6 Reasoning-action mismatch": "Does something other than what its reasoning says.",
    "3.1 Premature termination": "Stops before the task is complete.",
    "3.2 No or incomplete verification": "Accepts a result checked partly or not at all.",
    "3.3 Incorrect verification": "Checks the result and reaches the wrong verdict.",
}
TAXONOMIES: Mapping[str, tuple[Any, dict[str, str]]] = {"mast": (MAST, MAST_TIPS)}
"""The trees ``taxonomy_preset`` names, with a line on each node."""


_SEVERITY = {"name": text(), "weight": number(-float(2**31), open_low=False)}
_ERROR_TYPE = {"name": text(), "label": text(), "subtypes": text_list("[logical_error, factual_error]", unique=True)}
SEVERITIES = (("minor", -1.0), ("major", -5.0), ("critical", -10.0))


def _trajectory(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's trajectory evaluation: each step of the item's list under ``steps_key`` judged
    (``correctness_options``) and, where it is not right, what went wrong: an error type and subtype
    of ``error_types``, a severity of ``severities`` and a rationale. ``show_score`` shows the score
    the severities' weights leave of ``max_score``."""
    if raw.get("labels") not in (None, []):
        return [(".labels", "a trajectory_eval scheme's answers are its correctness_options; remove labels")]
    problems: list[Problem] = []
    types: list[tuple[str, tuple[str, ...]]] = []
    for n, entry in enumerate(values.pop("error_types", []) or []):
        try:
            kind, more = (({"name": entry}, []) if isinstance(entry, str) else
                          check_keys(mapping(entry, "{name: reasoning, subtypes: [logical_error]}"), _ERROR_TYPE,
                                     "an error type"))
        except Invalid as bad:
            kind, more = {}, list(bad.problems)
        name = kind.get("name", kind.get("label"))
        if name is None and not more:
            more = [(".name", "missing; name the error type, e.g. name: reasoning")]
        problems += [(f".error_types[{n}]" + sub, detail) for sub, detail in more]
        if not more:
            types.append((str(name), tuple(kind.get("subtypes", ()))))
    found, more = _named(values.pop("severities", [{"name": s, "weight": w} for s, w in SEVERITIES]), ".severities",
                         _SEVERITY, "{name: major, weight: -5}", "a severity",
                         "missing; name the severity, e.g. name: major")
    problems += more
    severities = [(severity["name"], float(severity.get("weight", 0))) for severity in found]
    options = values.pop("correctness_options", ("correct", "incorrect", "partially_correct"))
    values["options"] = tuple(LabelOption(o, text=o.replace("_", " ")) for o in options)
    values.update(error_types=tuple(types), severities=tuple(severities),
                  max_score=float(values.pop("max_score", 100)) if values.pop("show_score", True) else None)
    values["turns"] = TurnBinding(field=values.pop("steps_key", "steps"), steps_text=values.pop("step_text_key", "action"),
                                  placement="list", label=str(values.get("description") or values.get("name", "")))
    return problems


ACTS = {"consensus_tracking": ("proposal", "agreement", "disagreement", "decision", "concession"),
        "context_attribution": ("used_context_correctly", "hallucinated_context", "ignored_context")}
LINKED_ACTS = {"consensus_tracking": ("agreement", "disagreement", "concession"),
               "context_attribution": ("used_context_correctly", "hallucinated_context")}
"""Upstream's default acts, and those that name the turn they answer (or draw on), by type."""
CONTEXT_HINT = ("Tag how each turn uses earlier context. used context correctly and hallucinated context then ask "
                "for the earlier turn being (mis)used; ignored context stands alone.")


def _consensus(kind: str, raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's tags on each turn of the item's list under ``turns_key``, one of ``acts`` each; one
    of ``linked_acts`` may name the turn it answers. Consensus tracking tags a negotiation's moves;
    context attribution, how an agent used (or invented) what was said before, with its own acts."""
    if raw.get("labels") not in (None, []):
        return [(".labels", f"a {kind} scheme's answers are its acts; remove labels, and list them under acts")]
    acts = tuple(values.pop("acts", ACTS[kind]))
    linked = tuple(values.pop("linked_acts", tuple(a for a in LINKED_ACTS[kind] if a in acts)))
    stray = [a for a in linked if a not in acts]
    if stray:
        return [(".linked_acts", f"names {', '.join(map(show, stray))}, which is not one of the acts ({', '.join(acts)}); "
                                 "list only acts")]
    values["options"] = tuple(LabelOption(a, text=a.replace("_", " ")) for a in acts)
    values["linked_labels"] = linked
    hint = values.pop("hint", CONTEXT_HINT if kind == "context_attribution" else "")
    values["turns"] = TurnBinding(field=values.pop("turns_key", "conversation"), steps_text="text", placement="inline",
                                  label=str(hint or values.get("description") or values.get("name", "")))
    return []


RUBRIC_WORDS = ("Poor", "Below Average", "Average", "Good", "Excellent")
"""Upstream's words for a five-point rubric's points; other sizes are named by their number."""
_CRITERION = {"name": text(), "description": text(allow_empty=True)}


def _rubric(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's rubric: each of its ``criteria`` rated from 1 to ``scale_points`` (each point named by
    ``scale_labels``), stored as ``{criterion: point}``; ``show_overall`` adds an overall row."""
    if raw.get("labels") not in (None, []):
        return [(".labels", "a rubric_eval scheme's points are 1 to scale_points; remove labels, and name the points "
                            "with scale_labels")]
    points = values.pop("scale_points", 5)
    words = list(values.pop("scale_labels", RUBRIC_WORDS[:points] if points <= len(RUBRIC_WORDS) else []))
    if words and len(words) != points:
        return [(".scale_labels", f"names {len(words)} points for a scale of {points} (scale_points); give one label "
                                  "per point")]
    values["options"] = tuple(LabelOption(str(n), text=f"{n} {words[n - 1]}" if words else str(n))
                              for n in range(1, points + 1))
    criteria = values.pop("criteria", None)
    if not isinstance(criteria, list) or not criteria:
        return [(".criteria", "missing; a rubric_eval scheme lists its criteria, e.g. [{name: accuracy, description: "
                              "Are the claims correct?}]")]
    overall = [{"name": "overall", "description": "Overall"}] * values.pop("show_overall", False)
    found, problems = _named(criteria + overall, ".criteria", _CRITERION, "{name: accuracy, description: ...}",
                             "a criterion", "missing; name the criterion, e.g. name: accuracy",
                             twice=lambda name: (".name", f"{show(name)} names two criteria; give each its own name"))
    rows = [LabelOption(c["name"], text=c["name"], tooltip=c.get("description", "")) for c in found]
    values.update(dimensions=tuple(rows), sequential_key_binding=False)
    return problems


_SCALE = {"min": number(-float(2**31), open_low=False), "max": number(-float(2**31), open_low=False),
          "step": number(0, open_low=True), "default": number(-float(2**31), open_low=False),
          "labels": section({"min": text(allow_empty=True), "max": text(allow_empty=True),
                             "center": text(allow_empty=True)}, "scale.labels", "{min: A is better, max: B is better}")}
_JUSTIFICATION = {"required": boolean, "reason_categories": text_list('["More accurate", "Safer"]', unique=True),
                  "min_rationale_chars": integer(0, 10_000), "rationale_placeholder": text(allow_empty=True)}
_DIMENSION = {"name": text(), "description": text(allow_empty=True), "allow_tie": boolean, "tie_label": text()}


def _pairwise(raw: Mapping[Any, object], values: dict[str, Any]) -> list[Problem]:
    """Upstream's pairwise comparison of the item's two options (A and B, as its text shows them):
    which is better (``binary``, with a tie where ``allow_tie``), by how much (``scale``), or which is
    better on each of several ``dimensions`` (``multi_dimension``)."""
    try:
        mode = choice(PAIRWISE_MODES, "mode")(values.pop("mode", "binary"))
    except Invalid as bad:
        return [(".mode", bad.problems[0][1])]
    names = raw.get("labels", [FIRST, SECOND])
    if not (isinstance(names, list) and len(names) == 2 and all(isinstance(n, str) and n.strip() for n in names)):
        return [(".labels", f"names the two options compared, e.g. [Response A, Response B]; got {show(names)}")]
    values.pop("labels", None)
    values["items_key"] = values.pop("items_key", "text")  # checked against the page once it is known
    shown = names if values.pop("show_labels", True) else [FIRST, SECOND]
    problems: list[Problem] = []
    why = values.pop("justification", None)
    if why not in (None, False, {}):
        try:
            values["justification"] = section(_JUSTIFICATION, "justification", "{required: true, reason_categories: "
                                              "[More accurate], min_rationale_chars: 20}")(why)
        except Invalid as bad:
            problems += [(".justification" + sub, detail) for sub, detail in bad.problems]
    tie, tie_label = values.pop("allow_tie", False), values.pop("tie_label", None)
    values["pairwise_mode"] = mode
    if mode == "binary":
        values["options"] = (LabelOption(FIRST, text=shown[0]), LabelOption(SECOND, text=shown[1])) + (
            (LabelOption(TIE, text=tie_label or "No preference"),) if tie else ())
    elif mode == "scale":
        if tie:
            problems.append((".allow_tie", "applies to binary and multi_dimension comparisons; a scale's middle "
                                           "is its tie: remove allow_tie"))
        try:
            scale = section(_SCALE, "scale", "{min: -3, max: 3, step: 1, default: 0}")(values.pop("scale", {}))
        except Invalid as bad:
            return problems + [(".scale" + sub, detail) for sub, detail in bad.problems]
        low, high = scale.get("min", -3), scale.get("max", 3)
        start = scale.get("default", 0)
        if low >= high:
            return problems + [(".scale.max", f"must be greater than scale.min ({low:g}), got {high:g}")]
        if not low <= start <= high:
            return problems + [(".scale.default", f"must lie between scale.min and scale.max, got {start:g}")]
        words = scale.get("labels", {})
        values.update(min_value=low, max_value=high, step=scale.get("step", 1), starting_value=start,
                      min_label=f"{shown[0]}: {words.get('min', names[0] + ' is better')}",
                      max_label=f"{shown[1]}: {words.get('max', names[1] + ' is better')}",
                      center_label=words.get("center", "Equal"))
    else:
        dimensions = values.pop("dimensions", None)
        if not isinstance(dimensions, list) or not dimensions:
            return problems + [(".dimensions", "missing; a multi_dimension comparison lists its dimensions, e.g. "
                                               "[{name: helpfulness, description: Which is more helpful?}]")]
        found, more = _named(dimensions, ".dimensions", _DIMENSION, "{name: helpfulness, allow_tie: true}",
                             "a dimension", "missing; name the dimension, e.g. name: helpfulness",
                             twice=lambda name: (".name", f"{show(name)} names two dimensions; give each its own name"))
        problems += more
        dims = [LabelOption(d["name"], text=d["name"].replace("_", " ").title(), tooltip=d.get("description", ""))
                for d in found]
        ties = [d["name"] for d in found if d.get("allow_tie", tie)]
        values["options"] = (LabelOption(FIRST, text=shown[0]), LabelOption(SECOND, text=shown[1]),
                             LabelOption(TIE, text=tie_label or "Tie"))
        values.update(dimensions=tuple(dims), tie_dimensions=tuple(ties), sequential_key_binding=False)
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


def _free_response(value: object) -> str | None:
    """Upstream's ``has_free_response: true`` or ``{instruction: ...}``: the box's prompt ("" for a
    box without one, as upstream shows it), None for no box."""
    if isinstance(value, bool):
        return FREE_RESPONSE_INSTRUCTION if value else None
    raw = mapping(value, "true, or {instruction: \"Other (please specify)\"}")
    values, problems = check_keys(raw, {"instruction": text(allow_empty=True)}, "has_free_response")
    if problems:
        raise Invalid(problems=problems)
    return str(values.get("instruction", FREE_RESPONSE_INSTRUCTION))


def _label_requirement(value: object) -> tuple[bool, tuple[str, ...]]:
    """(required, the answers that let a participant go on): upstream's ``required_label`` (or its
    docs' ``right_label``) makes a question required and names the answers it needs."""
    if isinstance(value, bool):
        return value, ()
    raw = mapping(value, "{required: true}")
    one_or_more = text_list('["I agree"]')
    values, problems = check_keys(raw, {"required": boolean, "required_label": _names(one_or_more),
                                        "right_label": _names(one_or_more)}, "label_requirement")
    if problems:
        raise Invalid(problems=problems)
    right = tuple(values.get("required_label", ())) + tuple(values.get("right_label", ()))
    return bool(values.get("required", False)) or bool(right), right


def _names(check: Check) -> Check:
    """One name or a list of them."""
    return lambda value: check([value] if isinstance(value, str) else value)


def _text_layout(values: dict[str, Any]) -> list[Problem]:
    """Upstream's ways of asking for a one-line box or a taller one, as one ``multiline`` and ``rows``."""
    textarea = values.pop("textarea", None)
    if textarea is not None:
        if not isinstance(textarea, dict):
            return [(".textarea", f"must be a mapping such as {{on: true, rows: 4}}, got {show(textarea)}")]
        if True in textarea and "on" not in textarea:  # YAML 1.1 reads an unquoted `on:` as the key true
            textarea = {("on" if key is True else key): textarea[key] for key in list(textarea)}  # each key read
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


def _vas(values: dict[str, Any]) -> list[Problem]:
    """Upstream's visual analogue scale: a line from ``left_label`` to ``right_label`` with no marks on
    it, from ``min_value`` (0) to ``max_value`` (100) in steps of ``10 ** -precision`` (precision 1:
    tenths), its number shown only with ``show_value``; it starts in the middle, as upstream's does,
    and is stored, like a slider's, once it is moved."""
    low, high = values.setdefault("min_value", 0), values.setdefault("max_value", 100)
    if low >= high:
        return [(".max_value", f"must be greater than min_value ({low:g}), got {high:g}")]
    precision = values.pop("precision", 1)
    values.update(step=10.0 ** -precision, starting_value=round((low + high) / 2, precision),
                  min_label=values.pop("left_label", ""),
                  max_label=values.pop("right_label", ""), show_value=values.pop("show_value", False))
    return []


def _soft(values: dict[str, Any]) -> list[Problem]:
    """Upstream's soft label: a share of ``total`` (100) for each label, each at least ``min_per_label``
    (0), adding up to ``total``: how likely each label is, or how annotators would split."""
    total, least = values.pop("total", 100), values.pop("min_per_label", 0)
    if least * len(values.get("options", ())) > total:
        return [(".min_per_label", f"{least:g} for each of {len(values['options'])} labels is more than total "
                                   f"({total:g}); lower min_per_label or raise total")]
    values.update(total=float(total), min_value=least, show_value=values.pop("show_distribution_chart", True),
                  sequential_key_binding=False)
    return []


def _differential(values: dict[str, Any]) -> list[Problem]:
    """Upstream's semantic differential: each of its ``pairs`` of opposite words a row, rated on
    ``scale_points`` (7) points from the left word to the right one, stored as ``{"Good__Bad": "3"}``
    (the pair joined by two underscores, as upstream's page names it; 1 is the left pole)."""
    pairs = values.pop("pairs", None)
    shape = "e.g. pairs: [[Good, Bad], [Strong, Weak]]"
    if not isinstance(pairs, list) or not pairs:
        return [(".pairs", f"missing; a semantic_differential scheme lists pairs of opposite words, {shape}")]
    rows: list[LabelOption] = []
    for n, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(w, str) and w.strip() for w in pair)):
            return [(f".pairs[{n}]", f"must be two words, the left pole and the right, {shape}; got {show(pair)}")]
        name = f"{pair[0]}__{pair[1]}"
        if name in (row.name for row in rows):
            return [(f".pairs[{n}]", f"{show(pair[0])} and {show(pair[1])} are paired twice; list each pair only once")]
        rows.append(LabelOption(name, text=pair[0], tooltip=pair[1]))
    points = values.pop("scale_points", 7)
    values.update(dimensions=tuple(rows), options=tuple(LabelOption(str(i)) for i in range(1, points + 1)),
                  sequential_key_binding=False)
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
