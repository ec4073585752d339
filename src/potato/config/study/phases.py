"""Upstream Potato's ``phases`` and ``training`` blocks, and the question files they name.

Each phase's file is read here, at validation: a consent file that is missing or not JSON is an
error naming the file and the fix before any participant arrives, not a page that fails later.
Questions are written as upstream writes them, as schemes (``name``, ``description``,
``annotation_type``, ``labels``) or in its docs' shorter form (``id``, ``text``, ``schema``,
``choices``), and are checked as the annotation schemes are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from potato.config._checks import (Findings, Invalid, boolean, check_keys, choice, integer, mapping, show, subset,
                                   text)
from potato.config._files import read_project_file
from potato.config._schemes import check_schemes
from potato.study.phases import GoldItem, Note, PassRule, Phase, PhaseKind, Phases
from potato.training.job.schemes import CHOICE_TYPES, Scheme, SchemeType

KEYS = ("phases", "training", "export_include_phase_data")
KINDS = tuple(k.value for k in PhaseKind)
_PHASE_KEYS = {"type": choice(KINDS, "phase type"), "file": text(), "instrument": text(), "instruments": lambda v: v}
_CRITERIA = {"min_correct": integer(0), "require_all_correct": boolean, "max_mistakes": integer(-1),
             "max_mistakes_per_question": integer(-1), "allow_retry": boolean}
_TRAINING = {"enabled": boolean, "data_file": text(), "annotation_schemes": lambda v: v,
             "passing_criteria": lambda v: v, "allow_retry": boolean,
             "failure_action": choice(("move_to_done", "repeat_training"), "failure_action")}
SHORT_TYPES = {"checkbox": "multiselect"}
"""Upstream's docs' question types that are another name for one of ours."""
INSTRUMENT_HELP = ("upstream's built-in survey instruments are not shipped here; put the instrument's questions in a "
                   "file of your project and name it with file: (e.g. file: surveys/tipi.json)")


def check(raw: Mapping[Any, object], schemes: tuple[Scheme, ...] | None, base: Path,
          findings: Findings) -> tuple[bool, Phases | None]:
    """(no errors, the study's phases); phases are None for a study that is its items alone."""
    block, training = raw.get("phases"), raw.get("training")
    if "export_include_phase_data" in raw and not isinstance(raw["export_include_phase_data"], bool):
        findings.error("export_include_phase_data", f"must be true or false, got {show(raw['export_include_phase_data'])}")
        return False, None
    rule, training_values = _training(training, findings)
    if rule is None:
        return False, None
    enabled = training_values.get("enabled", False)
    if block is None and not enabled:
        if training is not None:
            findings.warn("training.enabled", "is not true, so there is no training phase; the block is ignored")
        return True, None
    order_names, blocks = _order(block, enabled, findings)
    if order_names is None or schemes is None:
        return False, None
    phases: list[Phase] = []
    ok = True
    for name in order_names:
        earlier = [q.name for p in phases for q in p.questions]  # a question may hang on an earlier page's answer
        phase = _phase(name, blocks.get(name), training_values, schemes, base, findings, earlier)
        ok = ok and phase is not None
        if phase is not None:
            phases.append(phase)
    return ok, Phases(tuple(phases), rule) if ok else None


def _training(value: object, findings: Findings) -> tuple[PassRule | None, dict[str, Any]]:
    if value is None:
        return PassRule(), {}
    try:
        values, problems = check_keys(mapping(value, "{enabled: true, data_file: training.json}"), _TRAINING, "training")
        criteria, more = check_keys(mapping(values.get("passing_criteria") or {}, "{min_correct: 3}"), _CRITERIA,
                                    "training.passing_criteria")
    except Invalid as bad:
        findings.errors_at("training", bad.problems)
        return None, {}
    findings.errors_at("training", problems)
    findings.errors_at("training.passing_criteria", more)
    if problems or more:
        return None, {}
    def limit(key: str) -> Any:  # upstream: 0 or -1 is no limit
        return None if criteria.get(key, -1) <= 0 else criteria[key]

    return PassRule(min_correct=criteria.get("min_correct", 3), require_all_correct=criteria.get("require_all_correct", False),
                    max_mistakes=limit("max_mistakes"), max_mistakes_per_question=limit("max_mistakes_per_question"),
                    allow_retry=values.get("allow_retry", criteria.get("allow_retry", True)),
                    failure_action=values.get("failure_action", "move_to_done")), values


def _order(block: object, training: bool, findings: Findings) -> tuple[list[str] | None, dict[str, Any]]:
    """The phase names in order, with their blocks; a training phase goes before the items when the
    ``training`` block asks for one and ``phases`` names none."""
    if block is None:
        return ["training", "annotation"], {}
    try:
        # A copy to take the order out of (a noted config, potato.config.unread, notes reads from it too).
        phases = subset(mapping(block, "{order: [consent, annotation], consent: {type: consent, file: consent.json}}"),
                        lambda _: True)
    except Invalid as bad:
        findings.errors_at("phases", bad.problems)
        return None, {}
    order = phases.pop("order", None)
    if not isinstance(order, list) or not order or not all(isinstance(n, str) and n for n in order):
        findings.error("phases.order", f"must list the phases by name, e.g. [consent, instructions, annotation, "
                                       f"poststudy], got {show(order)}")
        return None, {}
    if len(set(order)) != len(order):
        findings.error("phases.order", "names a phase twice; list each once")
        return None, {}
    for name in phases:
        if name not in order:
            findings.warn(f"phases.{name}", "is not in phases.order, so it is not shown; add it there or remove it")
    kinds = [(phases.get(n) or {}).get("type", n) if isinstance(phases.get(n) or {}, dict) else n for n in order]
    if "annotation" not in kinds:
        findings.error("phases.order", "has no annotation phase, so the items would never be shown; add annotation "
                                       "where the items come, e.g. [consent, annotation, poststudy]")
        return None, {}
    if training and "training" not in kinds:
        order.insert(kinds.index("annotation"), "training")
    return order, phases


def _phase(name: str, block: object, training: Mapping[str, Any], schemes: tuple[Scheme, ...], base: Path,
           findings: Findings, earlier: Sequence[str] = ()) -> Phase | None:
    at = f"phases.{name}"
    if block is None:
        block = {}
        if name not in KINDS:
            findings.error(f"{at}", f"missing: phases.order names {name}, so describe it: {name}: {{type: prestudy, "
                                    "file: surveys/questions.json}")
            return None
    try:
        values, problems = check_keys(mapping(block, "{type: consent, file: surveys/consent.json}"), _PHASE_KEYS, at)
    except Invalid as bad:
        findings.errors_at(at, bad.problems)
        return None
    findings.errors_at(at, problems)
    if problems:
        return None
    for key in ("instrument", "instruments"):
        if key in values:
            findings.error(f"{at}.{key}", f"{show(values[key])}: {INSTRUMENT_HELP}")
            return None
    if "type" not in values and name not in KINDS:
        findings.error(f"{at}.type", f"missing: a phase named {name} needs its type, one of {', '.join(KINDS)}")
        return None
    kind = PhaseKind(values.get("type", name))
    if kind is PhaseKind.ANNOTATION:
        return Phase(name, kind)
    file = values.get("file") or (training.get("data_file") if kind is PhaseKind.TRAINING else None)
    if file is None:
        where = f"{at}.file" if kind is not PhaseKind.TRAINING else f"{at}.file (or training.data_file)"
        findings.error(where, "missing: name the file with this page's questions, e.g. file: surveys/consent.json")
        return None
    read = read_project_file(base, file, f"{at}.file", "write the page's questions there as JSON, or fix the path "
                                                       "(it is relative to task_dir)", findings)
    if read is None:
        return None
    path, content = read
    if path.suffix.lower() in (".html", ".htm"):
        if kind is not PhaseKind.INSTRUCTIONS:
            findings.error(f"{at}.file", f"is HTML, which only an instructions page shows; a {kind.value} page needs "
                                         "its questions as JSON")
            return None
        return Phase(name, kind, html=content)
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        findings.error(f"{at}.file", f"{path.name} is not JSON ({exc.msg}, line {exc.lineno}); write the questions as "
                                     'a JSON list such as [{"name": "age", "description": "Your age?", '
                                     '"annotation_type": "number"}]')
        return None
    if kind is PhaseKind.TRAINING:
        return _training_phase(name, data, training, schemes, f"{at}.file ({path.name})", findings)
    entries = [_as_scheme(q) for q in (data if isinstance(data, list) else [data])]
    notes = _notes(entries, f"{file}", findings)
    places = [i for i, q in enumerate(entries) if not _is_note(q)]
    if notes is None:
        return None
    if not places:
        return Phase(name, kind, notes=notes)
    questions = check_schemes([entries[i] for i in places], findings, go_to_item=False, where=f"{file}",
                              one_choice=True, places=places, earlier=earlier)
    if questions is None:
        return None
    spans = [q.name for q in questions if q.annotation_type is SchemeType.SPAN]
    if spans:
        findings.error(f"{at}.file", f"{file} asks {spans[0]!r} as a span question; a study page has no item text to "
                                     "mark, so ask it as a radio, multiselect, text, number, likert or select question")
        return None
    return Phase(name, kind, questions=questions, notes=notes)


def _is_note(entry: object) -> bool:
    return isinstance(entry, dict) and entry.get("annotation_type") == "pure_display"


def _notes(entries: list[object], where: str, findings: Findings) -> tuple[Note, ...] | None:
    """The page's ``pure_display`` entries as notes, each placed above the question after it."""
    notes: list[Note] = []
    ok = True
    for index, entry in enumerate(entries):
        if not _is_note(entry):
            continue
        assert isinstance(entry, dict)
        text = entry.get("description", entry.get("text"))
        if not isinstance(text, str) or not text.strip():
            findings.error(f"{where}[{index}].description", 'missing; a pure_display entry shows its description, e.g. '
                                                            '"description": "<p>You may stop at any time.</p>"')
            ok = False
            continue
        if "display_logic" in entry:
            findings.error(f"{where}[{index}].display_logic", "a pure_display entry is always shown on its page; "
                                                              "remove display_logic, or put the text in a question's "
                                                              "description")
            ok = False
            continue
        following = next((q.get("name") for q in entries[index + 1:] if isinstance(q, dict) and not _is_note(q)), "")
        notes.append(Note(str(entry.get("name", f"note{index}")), text, entry.get("allow_html") is True,
                          following if isinstance(following, str) else str(following)))
    return tuple(notes) if ok else None


def _as_scheme(question: object) -> object:
    """A question in upstream's docs' short form (``id``, ``text``, ``schema``, ``choices``) as a scheme."""
    if not isinstance(question, dict):
        return question
    q = dict(question)
    if "schema" in q and "annotation_type" not in q:
        kind = q.pop("schema")
        q["annotation_type"] = SHORT_TYPES.get(kind, kind) if isinstance(kind, str) else kind
    if "choices" in q and "labels" not in q:
        q["labels"] = q.pop("choices")
    if "text" in q and "description" not in q:
        q["description"] = q.pop("text")
    if "id" in q:
        ident = q.pop("id")
        q.setdefault("name", str(ident) if isinstance(ident, (str, int)) else ident)
    return q


def _training_phase(name: str, data: object, training: Mapping[str, Any], schemes: tuple[Scheme, ...], at: str,
                    findings: Findings) -> Phase | None:
    entries = data.get("training_instances") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        findings.error(at, 'must hold the training items: {"training_instances": [{"id": "t1", "text": "...", '
                           '"correct_answers": {"sentiment": "positive"}, "explanation": "..."}]}')
        return None
    by_name = {s.name: s for s in schemes}
    asked = training.get("annotation_schemes")
    if asked is not None and (not isinstance(asked, list) or any(a not in by_name for a in asked)):
        findings.error("training.annotation_schemes", f"must list annotation schemes by name ({', '.join(by_name)}), "
                                                      f"got {show(asked)}")
        return None
    gold: list[GoldItem] = []
    for index, entry in enumerate(entries):
        where = f"{at}[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str) or "id" not in entry:
            findings.error(where, 'must be an item with "id", "text" and "correct_answers"')
            return None
        answers = entry.get("correct_answers", entry.get("gold_label"))
        if not isinstance(answers, dict) or not answers:
            findings.error(where, 'needs its known answers: "correct_answers": {"<scheme>": "<label>"}')
            return None
        for scheme_name, value in answers.items():
            scheme = by_name.get(scheme_name)
            if scheme is None:
                findings.error(f"{where}.correct_answers", f"names {show(scheme_name)}, which is not an annotation "
                                                           f"scheme ({', '.join(by_name)})")
                return None
            value = str(value) if scheme.annotation_type in CHOICE_TYPES else value
            if not (scheme.accepts(value) or (scheme.annotation_type is SchemeType.TEXT and isinstance(value, str))):
                findings.error(f"{where}.correct_answers.{scheme_name}", f"{show(value)} is not an answer to it "
                                                                         f"(valid: {scheme.valid_answers()})")
                return None
        explanation = entry.get("explanation", entry.get("gold_reason", ""))
        gold.append(GoldItem(str(entry["id"]), entry["text"], dict(answers), explanation if isinstance(explanation, str)
                             else ""))
    names = asked or list(dict.fromkeys(n for g in gold for n in g.answers))
    return Phase(name, PhaseKind.TRAINING, gold=tuple(gold), schemes=tuple(by_name[n] for n in names))
