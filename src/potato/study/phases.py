"""A study's pages around the annotation: consent, instructions, training, surveys (pure).

Upstream Potato's ``phases`` put pages before and after the items: a consent an ethics board
requires, a pre-study survey, instructions, training items with known answers and feedback, and
a post-study survey. Each participant's place in that order is stored (``potato.study.store``), so
a reload or a restart puts them back where they were; these functions decide what comes next and
whether an answer lets them go on.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from potato.study.platforms import Outcome
from potato.training.job.schemes import NUMERIC_TYPES, Scheme, SchemeType


class PhaseKind(str, enum.Enum):
    CONSENT = "consent"
    PRESTUDY = "prestudy"
    INSTRUCTIONS = "instructions"
    TRAINING = "training"
    ANNOTATION = "annotation"
    POSTSTUDY = "poststudy"


ENDS_ON_WRONG_ANSWER = (PhaseKind.CONSENT, PhaseKind.PRESTUDY)
"""A required answer not given here ends the study (a consent refused, a screening not passed); on
other pages it is a question to answer again."""
HEADINGS: Mapping[PhaseKind, str] = {
    PhaseKind.CONSENT: "Consent", PhaseKind.PRESTUDY: "Before you start", PhaseKind.INSTRUCTIONS: "Instructions",
    PhaseKind.TRAINING: "Training", PhaseKind.ANNOTATION: "Annotation", PhaseKind.POSTSTUDY: "After the study",
}
ENDED: Mapping[str, str] = {
    Outcome.SCREENED_OUT.value: "The study ends here, as your answers say it is not for you. Thank you for your time.",
    Outcome.FAILED.value: "The study ends here: the training questions were not passed. Thank you for your time.",
    Outcome.NO_ITEMS.value: "There is no work left for you: every item already has all the annotators it needs. "
                            "Thank you for coming!",
}


@dataclass(frozen=True)
class GoldItem:
    """A training item and its known answers (upstream's ``correct_answers`` or ``gold_label``)."""

    id: str
    text: str
    answers: Mapping[str, Any]
    explanation: str = ""


@dataclass(frozen=True)
class PassRule:
    """Upstream's ``training.passing_criteria``, ``allow_retry`` and ``failure_action``."""

    min_correct: int | None = None
    require_all_correct: bool = False
    max_mistakes: int | None = None
    max_mistakes_per_question: int | None = None
    allow_retry: bool = True
    failure_action: str = "move_to_done"
    """``move_to_done``: a participant who fails is done (their platform's failure code);
    ``repeat_training``: they start the training items again."""


@dataclass(frozen=True)
class Note:
    """Text on a study page between its questions (upstream's ``pure_display``): a consent's terms."""

    name: str
    text: str
    html: bool = False
    """The text is HTML from the project's own file (``allow_html``), shown as an instructions page is."""
    before: str = ""
    """The question it stands above; ``""``: after the last one."""


@dataclass(frozen=True)
class Phase:
    name: str
    kind: PhaseKind
    questions: tuple[Scheme, ...] = ()
    notes: tuple[Note, ...] = ()
    """Text shown between the questions, each above the question it precedes."""
    html: str = ""
    """An instructions page's own HTML (its file), shown above any questions."""
    gold: tuple[GoldItem, ...] = ()
    schemes: tuple[Scheme, ...] = ()
    """Training: the annotation questions its items are asked with."""


@dataclass(frozen=True)
class Phases:
    order: tuple[Phase, ...]
    rule: PassRule = field(default_factory=PassRule)

    def get(self, name: str) -> Phase | None:
        return next((p for p in self.order if p.name == name), None)


@dataclass(frozen=True)
class Step:
    """Where a participant is: a phase to show, the items, the end of the study, or an early end."""

    phase: Phase | None = None
    annotating: bool = False
    ended: Outcome | None = None
    """The study ended early (a consent refused, training failed)."""


def next_step(phases: Phases | None, states: Mapping[str, str], items_done: bool) -> Step:
    """What a participant sees now, from the phases they finished (``states``: phase name -> ``done``,
    ``failed`` or ``screened_out``) and whether their items are done (pure)."""
    if phases is None:
        return Step(annotating=not items_done)
    for phase in phases.order:
        state = states.get(phase.name)
        if state in (Outcome.FAILED.value, Outcome.SCREENED_OUT.value):
            return Step(ended=Outcome(state))
        if phase.kind is PhaseKind.ANNOTATION:
            if not items_done:
                return Step(annotating=True)
        elif state != "done":
            return Step(phase=phase)
    return Step()


def survey_value(scheme: Scheme, sent: Sequence[str]) -> Any:
    """A form's values for one question as the answer stored (pure); None for no answer."""
    values = [v for v in sent if v.strip()] if scheme.annotation_type is not SchemeType.TEXT else list(sent)
    if scheme.annotation_type is SchemeType.MULTISELECT:
        return values or None
    if not values or not values[0].strip():
        return None
    value = values[0]
    if scheme.annotation_type in NUMERIC_TYPES:
        try:
            number = float(value)
        except ValueError:
            return value  # refused by the check, with the scheme's valid answers
        return int(number) if number.is_integer() else number
    return value


@dataclass(frozen=True)
class SurveyCheck:
    answers: dict[str, Any]
    """Answers to store: only questions that were shown."""
    problems: list[str]
    """What to fix before going on, one line per question."""
    refused: bool = False
    """A consent or a screening question answered otherwise than it must be: the study ends."""


def check_survey(phase: Phase, form: Mapping[str, Sequence[str]],
                 earlier: Mapping[str, Any] | None = None) -> SurveyCheck:
    """A study page's submitted form checked against its questions (pure); ``earlier``: the answers
    given on the pages before it, which a question's display_logic may name."""
    answers: dict[str, Any] = {}
    known: dict[str, Any] = dict(earlier or {})
    problems: list[str] = []
    refused = False
    for scheme in phase.questions:
        if not scheme.shown_for(known):
            continue  # a question that was not asked: no answer, never required
        value = survey_value(scheme, form.get(scheme.name, ()))
        known.pop(scheme.name, None)  # asked here: this page's answer (or none) is the one that counts
        asked = scheme.description or scheme.name
        if value is None:
            if scheme.required:
                problems.append(f"Answer \u201c{asked}\u201d: it is required.")
            continue
        if scheme.annotation_type is SchemeType.TEXT and not scheme.labels:
            ok = isinstance(value, str) and len(value) <= scheme.max_length
        else:
            ok = scheme.accepts(value)
        if not ok:
            problems.append(f"\u201c{asked}\u201d takes {scheme.valid_answers()}.")
            continue
        answers[scheme.name] = known[scheme.name] = value
        if scheme.right_labels and not _gives(value, scheme.right_labels):
            if phase.kind in ENDS_ON_WRONG_ANSWER:
                refused = True
            else:
                problems.append(f"\u201c{asked}\u201d must be answered {' or '.join(scheme.right_labels)} to go on.")
    return SurveyCheck(answers, problems, refused and not problems)


def _gives(value: Any, wanted: Sequence[str]) -> bool:
    values = value if isinstance(value, list) else [value]
    return any(str(v) in wanted for v in values)


def is_correct(expected: Any, given: Any) -> bool:
    """A training answer against the known one: choices as sets, numbers as numbers, text as text
    without case or surrounding blanks (pure)."""
    if isinstance(expected, list) or isinstance(given, list):
        def as_set(v: Any) -> set[str]:
            return {str(x) for x in (v if isinstance(v, list) else [v])}

        return as_set(expected) == as_set(given)
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:
            return float(given) == float(expected)
        except (TypeError, ValueError):
            return False
    return str(expected).strip().casefold() == str(given).strip().casefold()


def wrong_questions(item: GoldItem, answers: Mapping[str, Any]) -> list[str]:
    """The questions of a training item answered otherwise than its known answers say (pure)."""
    return [name for name, expected in item.answers.items()
            if name not in answers or not is_correct(expected, answers[name])]


@dataclass(frozen=True)
class Attempt:
    item_id: str
    correct: bool


@dataclass(frozen=True)
class TrainingState:
    """Where a participant is in the training items, from their attempts (pure)."""

    position: int
    """The index of the item to show; the number of items when every one is answered."""
    correct: int
    mistakes: int
    last: Attempt | None
    verdict: str | None = None
    """``passed`` or ``failed`` once the rule decides; None while it goes on."""


def training_state(phase: Phase, rule: PassRule, attempts: Sequence[Attempt]) -> TrainingState:
    """Replay the attempts: an item is left once it is answered right, or answered at all without
    ``allow_retry``; the rule fails a participant as soon as they make the ``max_mistakes``-th mistake
    (as upstream counts), and at the end counts the items answered right at the first try against
    ``min_correct`` (pure)."""
    position, correct, mistakes = 0, 0, 0
    per_item: dict[str, int] = {}
    last = None
    for attempt in attempts:
        last = attempt
        if position >= len(phase.gold) or attempt.item_id != phase.gold[position].id:
            continue  # an answer to an item already left (a second tab): it changes nothing
        if attempt.correct:
            correct += 0 if per_item.get(attempt.item_id) else 1
            position += 1
            continue
        mistakes += 1
        per_item[attempt.item_id] = per_item.get(attempt.item_id, 0) + 1
        if (rule.max_mistakes is not None and mistakes >= rule.max_mistakes) or (
                rule.max_mistakes_per_question is not None
                and per_item[attempt.item_id] >= rule.max_mistakes_per_question):
            return TrainingState(position, correct, mistakes, last, "failed")
        if not rule.allow_retry:
            position += 1
    if position < len(phase.gold):
        return TrainingState(position, correct, mistakes, last)
    needed = len(phase.gold) if rule.require_all_correct else min(rule.min_correct or 0, len(phase.gold))
    return TrainingState(position, correct, mistakes, last, "passed" if correct >= needed else "failed")


def mistakes_note(rule: PassRule, state: TrainingState) -> str:
    """What a participant is told of the training's mistake limit on every training page (pure): a
    retry that is wrong again counts too, and reaching the limit ends the study (or, with
    ``repeat_training``, starts the training over), so they know both before it happens."""
    limits = []
    if rule.max_mistakes is not None:
        limits.append(f"at wrong answer {rule.max_mistakes} in all (so far: {state.mistakes})")
    if rule.max_mistakes_per_question is not None:
        limits.append(f"at wrong answer {rule.max_mistakes_per_question} to the same item")
    if not limits:
        return ""
    then = "The training starts over" if rule.failure_action == "repeat_training" else "The study ends"
    return f"Every wrong answer counts, a retry too. {then} " + " or ".join(limits) + "."
