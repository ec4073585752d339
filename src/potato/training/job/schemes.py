"""An annotation scheme: the one type the config, the server and the worker share.

The config builds :class:`Scheme` from ``annotation_schemes`` with how the page shows it; the job
(``job.json``'s ``schemes``) carries the same type with only what a trainer needs (its name, answer
type, labels and question), so the worker reads exactly what the config said. Standard library
only and Python 3.8-safe: it ships to training hosts with the rest of ``potato.training``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, Mapping, NamedTuple, Optional, Protocol, Sequence, Tuple

from potato import defaults
from potato.training.job.spans import MAIN, BadSpan, Span, Texts, check_spans, texts_of
from potato.training.job.turns import BadTurns, Turn, TurnBinding, short, stored_turns, well_formed


PAIRWISE_MODES = ("binary", "scale", "multi_dimension")
FIRST, SECOND, TIE = "A", "B", "tie"
"""A pairwise choice: the item's first option, its second, or neither (as upstream stores them)."""
RIGHT, NEUTRAL, WRONG = "correct", "neutral", "incorrect"
"""A process reward's answers for one step (upstream's rewards 1, 0 and -1)."""
EDIT_PARTS = ("edited_text", "original_text", "edit_distance_chars", "edit_distance_words")
"""A text edit as upstream stores it: the text as rewritten, the original, and how many characters
and words were changed."""
STEP_EDIT_PARTS = EDIT_PARTS + ("step_index", "field", "edited", "reason")
"""One field of a trajectory edit's step, as upstream stores it (its final answer has the first five)."""
TRAJECTORY_EDIT_PARTS = ("steps", "final_answer", "n_steps_edited", "total_edit_distance")
ATTRIBUTION_PARTS = ("responsible_agent", "decisive_step", "reason")
"""A failure attribution's answer, as upstream stores it: the agent that caused the failure, the
place of the decisive step (0-based; null when not given) and why."""


class ShownWhen(Protocol):
    """A scheme's ``display_logic`` (:class:`potato.study.conditions.DisplayLogic`, which the config builds;
    a job's scheme has none)."""

    def shows(self, answers: Mapping[str, object]) -> bool: ...


class LinkType(NamedTuple):
    """One kind of link between spans (upstream's ``link_types`` entry): its name, whether it runs
    from its first span to its last, and the labels those may have (empty: any)."""

    name: str
    directed: bool = True
    sources: Tuple[str, ...] = ()
    targets: Tuple[str, ...] = ()


class SchemeType(str, Enum):
    RADIO = "radio"
    MULTISELECT = "multiselect"
    TEXT = "text"
    LIKERT = "likert"
    SELECT = "select"
    SLIDER = "slider"
    NUMBER = "number"
    SPAN = "span"
    PROCESS_REWARD = "process_reward"
    PAIRWISE = "pairwise"
    MULTIRATE = "multirate"
    RUBRIC_EVAL = "rubric_eval"
    CONSENSUS_TRACKING = "consensus_tracking"
    TRAJECTORY_EVAL = "trajectory_eval"
    HIERARCHICAL_MULTISELECT = "hierarchical_multiselect"
    TRIAGE = "triage"
    VAS = "vas"
    SEMANTIC_DIFFERENTIAL = "semantic_differential"
    SOFT_LABEL = "soft_label"
    FAILURE_ATTRIBUTION = "failure_attribution"
    TEXT_EDIT = "text_edit"
    TRAJECTORY_EDIT = "trajectory_edit"
    TOOL_CALL_REVIEW = "tool_call_review"
    HANDOFF_REVIEW = "handoff_review"
    RANKING = "ranking"
    CONSTANT_SUM = "constant_sum"
    CONFIDENCE = "confidence"
    CONTEXT_ATTRIBUTION = "context_attribution"
    MULTIMODAL_REASONING = "multimodal_reasoning"
    GUI_TRAJECTORY = "gui_trajectory"
    SPEECH_TRANSCRIPT = "speech_transcript"
    AGENT_SCORECARD = "agent_scorecard"
    EMERGENT_BEHAVIOR = "emergent_behavior"
    TOOL_CONTENTION = "tool_contention"
    VOICE_INTERACTION = "voice_interaction"
    AGENT_INTERACTION_GRAPH = "agent_interaction_graph"
    TABLE_GRID = "table_grid"
    RANGE_SLIDER = "range_slider"
    CARD_SORT = "card_sort"
    PURE_DISPLAY = "pure_display"
    EXTRACTIVE_QA = "extractive_qa"
    CONJOINT = "conjoint"
    SPAN_LINK = "span_link"


CHOICE_TYPES = frozenset({SchemeType.RADIO, SchemeType.LIKERT, SchemeType.SELECT, SchemeType.PROCESS_REWARD,
                          SchemeType.CONSENSUS_TRACKING, SchemeType.CONTEXT_ATTRIBUTION, SchemeType.TRIAGE})
"""One label of a fixed list: what trainers learn as classes, whatever the page draws."""
TAGGED_TURNS = frozenset({SchemeType.CONSENSUS_TRACKING, SchemeType.CONTEXT_ATTRIBUTION})
"""Each turn tagged with one act, some of which name the earlier turn they answer or draw on (a
negotiation's moves; how an agent used its context)."""
REVIEW_ANSWERS = {"verdict": "choice", "notes": "text", "flags": "choices", "quality": "scale", "errors": "choices",
                  "correction": "text"}
"""What a review may give each part, and what each is: one of the labels, a text, labels, a point."""
NAMING = ("step", "tool", "from", "to", "start", "end")
RANGE_ENDS = ("range_low", "range_high")
"""A range slider's answer: its two ends, as upstream names them."""
GRID_MAX = 40
"""The most rows, and columns, a table grid has (upstream's page's limit)."""
"""What a stored review may say its part is (written from the item, so a sent one is not read)."""
_REVIEWED = {SchemeType.TOOL_CALL_REVIEW: "call", SchemeType.HANDOFF_REVIEW: "handoff",
             SchemeType.SPEECH_TRANSCRIPT: "segment"}
NUMERIC_TYPES = frozenset({SchemeType.SLIDER, SchemeType.NUMBER, SchemeType.VAS})
RATED_ROWS = frozenset({SchemeType.MULTIRATE, SchemeType.RUBRIC_EVAL, SchemeType.SEMANTIC_DIFFERENTIAL})
"""Each row (a multirate's option, a rubric's criterion, a pair of opposite adjectives) rated with
one of the labels."""
TRAINABLE = frozenset({SchemeType.RADIO, SchemeType.MULTISELECT, SchemeType.SPAN, SchemeType.PAIRWISE})
"""The answer types a trainer learns; a job's scheme has one of these (a likert or select scheme
is trained as radio: :attr:`Scheme.training_type`; a pairwise one is which of two options is better,
A, B or a tie: a preference model's)."""


@dataclass(frozen=True)
class LabelOption:
    """One label as the page shows it; ``name`` is what is stored."""

    name: str
    text: str = ""
    tooltip: str = ""
    key: str = ""
    """The key that picks it ("" for none); numbers 1-9 come from sequential_key_binding."""
    color: str = ""

    @property
    def shown(self) -> str:
        return self.text or self.name


@dataclass(frozen=True)
class Scheme:
    """One annotation question shown for every item. The first four fields are what a job carries;
    the rest say how the page shows and checks it."""

    annotation_type: SchemeType
    name: str
    description: str = ""
    labels: tuple[str, ...] = ()
    max_length: int = defaults.TEXT_MAX_LENGTH
    """Characters a text answer may have (a 60 MB answer was stored and echoed on every view)."""
    options: tuple[LabelOption, ...] = ()
    """``labels`` with what the page shows for each; empty for text and numeric schemes."""
    sequential_key_binding: bool = True
    required: bool = False
    """An item cannot be saved without an answer here (upstream's ``label_requirement``)."""
    codebook: bool = False
    """Its labels are a codebook: a tray lists each with its definition, and under ``codebook_mode:
    extensible`` annotators add codes to it (``potato.codebook``)."""
    right_labels: tuple[str, ...] = ()
    """A study page's question that must be answered with one of these (``label_requirement.required_label``):
    a consent that was not given ends the study."""
    horizontal: bool = False
    multiline: bool = True
    rows: int = 3
    placeholder: str = ""
    min_label: str = ""
    max_label: str = ""
    min_value: float | None = None
    max_value: float | None = None
    step: float | None = None
    starting_value: float | None = None
    show_value: bool = True
    """A slider's number is shown as it moves (a visual analogue scale shows none unless ``show_value``;
    a soft label's bars are drawn with ``show_distribution_chart``)."""
    total: float | None = None
    """A soft label's total: each label gets a share, at least ``min_value``, and the shares add up
    to this (upstream's ``total``, 100 by default)."""
    display_logic: Optional[ShownWhen] = None
    """Shown only for some answers to other schemes; None: always shown."""
    free_response_of: str = ""
    """The scheme this one is a part of, asked with it: a radio or multiselect scheme's "Other
    (please specify)" box, a pairwise comparison's justification."""
    justification: bool = False
    """A pairwise comparison's justification: reasons picked from its ``labels`` and a rationale of
    at least ``min_length`` characters, as ``{"reasons": [...], "rationale": "..."}``."""
    min_length: int = 0
    allow_overlapping: bool = False
    """A span scheme lets one span start inside another (off: each stretch of text has one label)."""
    show_span_labels: bool = True
    """A span scheme's highlights carry their label's name (upstream's ``show_span_labels``)."""
    span_fields: tuple[str, ...] = (MAIN,)
    """The fields a span scheme marks, as its spans name them: ``""`` is the item's own text, another
    name an ``instance_display`` field with ``span_target``."""
    text_key: str = ""
    """What the item's own text is called (``item_properties.text_key``): a span may name it as its field."""
    turns: Optional[TurnBinding] = None
    """Asked once per turn of a trace field (``turn_level``): its answer is one answer per turn, by
    the turn's id (:mod:`potato.training.job.turns`); None: asked once per item."""
    rated_turns: bool = False
    """A dialogue field's ``per_turn_ratings`` scale (upstream stores its answers apart from a turn-level
    question's: each turn's point by the turn's place)."""
    pairwise_mode: str = ""
    """A pairwise comparison's ``mode``: ``binary`` (A, B or a tie: its ``labels``), ``scale`` (a number
    from A's end to B's, with ``center_label`` between), ``multi_dimension`` (A, B or a tie on each
    of its ``dimensions``, as ``{dimension: choice}``); "" for other schemes."""
    dimensions: tuple[LabelOption, ...] = ()
    """The rows of a question answered row by row, as ``{row: answer}``: a multi_dimension
    comparison's dimensions, a multirate scheme's options, a rubric's criteria (each its name, its
    title as text and what it asks as tooltip)."""
    tie_dimensions: tuple[str, ...] = ()
    """The dimensions that may be answered with a tie."""
    center_label: str = ""
    items_key: str = ""
    """Where a pairwise comparison's two options are in the item (upstream's ``items_key``)."""
    linked_labels: tuple[str, ...] = ()
    """A consensus tracker's acts that answer another turn (``linked_acts``): their answer may name
    the turn they refer to, ``{"act": ..., "ref": turn id}``."""
    error_types: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """A trajectory evaluation's error taxonomy: each type with its subtypes (maybe none)."""
    severities: tuple[tuple[str, float], ...] = ()
    """A trajectory evaluation's severities, each with its weight (what it takes off the score)."""
    max_score: float | None = None
    """A trajectory evaluation's score before any error (``show_score``); None: no score shown."""
    depths: tuple[int, ...] = ()
    """A tree of labels (``hierarchical_multiselect``): each option's depth, in the tree's order (a
    node's children follow it, one deeper)."""
    auto_children: bool = False
    """Picking a node of the tree picks every node under it."""
    auto_parent: bool = False
    """Picking every child of a node picks the node too."""
    searchable: bool = False
    auto_advance: bool = False
    """A pick is saved and the next item shown at once (upstream's triage ``auto_advance``)."""
    first_error: bool = False
    """A process reward marked by its first wrong step (upstream's ``mode: first_error``): every step
    before it is correct and every one from it on is wrong, so no correct step follows a wrong one."""
    per_step: bool = False
    """A job's scheme learnt step by step: its examples are the steps of traces (each its own item in
    the bundle, :mod:`potato.training.job.tracesteps`), its answer one label per step."""
    wrong_labels: tuple[str, ...] = ()
    """A step scheme's answers that mark a step as a mistake (a process reward's ``incorrect``): a
    trace's first error is its first step with one of them."""
    names_step: Optional[TurnBinding] = None
    """An answer given once per item that names one of its steps (a failure attribution's decisive
    step): the item's list of steps it names them from; None for other schemes."""
    agents: tuple[str, ...] = ()
    """The agents a failure attribution may name (upstream's ``agents``); (): those that took a step
    of the item."""
    edit_source: Optional[str] = None
    """The item's text an annotator rewrites (a ``text_edit``): "" its own text, else the key of the
    field holding it (upstream's ``source_field``); None for other schemes."""
    show_diff: bool = True
    """A text edit shows the words it changed, struck out and added, as it is typed."""
    show_edit_distance: bool = True
    """A text edit shows how many words and characters it changed."""
    allow_reset: bool = True
    """A text edit has a button that puts the original back (and keeps that as the answer: no change)."""
    edit_steps: Optional[str] = None
    """A trajectory edit: the item's key of the steps whose ``editable_fields`` are rewritten (upstream's
    ``steps_key``); None for other schemes."""
    step_text_key: str = "action"
    """What a step that is a plain string is (a trajectory edit's ``step_text_key``)."""
    editable_fields: tuple[str, ...] = ()
    final_answer_key: Optional[str] = None
    """A trajectory edit also rewrites the item's final answer under this key (``edit_final_answer``)."""
    reason_on_edit: bool = False
    """Each step a trajectory edit changes needs a reason before the item is done (``require_reason_on_edit``)."""
    review_steps: Optional[str] = None
    """A review of an item's parts (a trace's tool calls, handoffs or steps; a transcript's segments),
    one answer each (:mod:`potato.reviews`): the item's key of its list of them; None for other
    schemes. Its ``labels`` are a part's verdicts, flags or errors."""
    team_steps: Optional[str] = None
    """An agent scorecard or emergent behaviours (:mod:`potato.teams`): the item's key of the steps its
    team took; None for other schemes. A behaviour scheme's ``labels`` are its behaviours."""
    team_agent_key: str = "agent"
    """Where a step names the agent that took it (else its speaker or role)."""
    agent_dimensions: tuple[str, ...] = ()
    team_dimensions: tuple[str, ...] = ()
    milestones: tuple[str, ...] = ()
    """A scorecard scores each agent on ``agent_dimensions`` and the team on ``team_dimensions``, 1 to
    ``quality_scale``, and checks off the ``milestones`` reached."""
    allow_note: bool = False
    """Each emergent behaviour may have a note."""
    review_answers: tuple[str, ...] = ()
    """What a review gives each part, of :data:`REVIEW_ANSWERS`: a verdict and notes (a tool call, a
    reasoning block, a GUI step), flags and a quality (a handoff), errors and a correction (a segment)."""
    grid_keys: Optional[tuple[str, str, str]] = None
    """A table grid: the item's keys of the table's image and of its rows and columns to start from
    (``image_key``, ``rows_key``, ``cols_key``); None for other schemes. Its ``labels`` are the cells'
    roles, the first the role of a cell not marked."""
    grid_size: tuple[int, int] = (3, 3)
    """The rows and columns a table grid starts with when the item gives none."""
    dynamic: bool = False
    """The labels are templates filled from each item (upstream's ``dynamic_labels``): an answer is
    one the item offers (:mod:`potato.dynamic_labels`), checked with the item, and no model learns it."""
    link_spans: Optional[str] = None
    """Links between spans: the span scheme whose spans they join (upstream's ``span_schema``); None
    for other schemes. Its kinds of link are ``link_types``."""
    link_types: tuple[LinkType, ...] = ()
    conjoint_attributes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """A conjoint choice's attributes and their levels, the profiles of each set made from them."""
    profiles_field: Optional[str] = None
    """A conjoint choice whose profiles are the item's own, under this key."""
    profiles_per_set: int = 0
    """How many profiles a conjoint set shows (0 for other schemes)."""
    show_none: bool = True
    """A conjoint set offers none of its profiles as a choice."""
    qa_fields: Optional[tuple[str, str]] = None
    """An extractive question: the item's keys of its question and of the passage its answer is marked
    in ("" for the item's text); None for other schemes."""
    allow_unanswerable: bool = True
    display_text: Optional[str] = None
    """What a display-only block between the questions shows (upstream's ``pure_display``: its
    description and labels), as Markdown, or HTML with ``display_html``; None for other schemes. It
    takes no answer."""
    display_html: bool = False
    sort_cards: Optional[str] = None
    """A card sort: the item's key of its cards, sorted into the ``labels`` as groups (upstream's
    ``items_field``); None for other schemes."""
    cards_anywhere: bool = False
    """A card may go in more than one group (``allow_multiple``)."""
    groups_filled: bool = False
    """Every group needs a card before the item is done (``allow_empty_groups: false``)."""
    range_start: tuple[float, float] = (0, 0)
    """Where a range slider's two thumbs start (nothing is answered until one is moved)."""
    keyed: Optional[str] = None
    """A review upstream stores by the parts' numbers, ``{keyed: {"0": label}}`` (``contentions``, or
    ``overlaps`` with the call's ``rating`` 1 to ``quality_scale``), not as a list; None: as a list."""
    review_reads: tuple[tuple[str, str], ...] = ()
    """The scheme's keys for what a part holds: a step's agent, type, screenshot or action, and the
    space of a click's coordinates (:func:`potato.reviews.parts_of`)."""
    quality_scale: int = 0
    """A handoff's quality is rated 1 to this."""
    shuffled: bool = False
    """Each annotator sees the labels (a multirate's rows) in an order of their own, the same on every
    item (upstream's ``option_randomization``)."""
    rates: str = ""
    """A confidence rating: the scheme whose answer it rates (upstream's ``target_schema``)."""
    points_by_slider: bool = False
    """A constant sum's points are set with a slider each (``input_type: slider``), else typed in a box each."""

    @property
    def multiselect(self) -> bool:
        return self.annotation_type is SchemeType.MULTISELECT

    @property
    def numeric(self) -> bool:
        """Its answer is a number (a slider, a number box, a pairwise scale)."""
        return (self.annotation_type in NUMERIC_TYPES or self.pairwise_mode == "scale"
                or (self.annotation_type is SchemeType.CONFIDENCE and not self.labels))

    @property
    def spans(self) -> bool:
        return self.annotation_type is SchemeType.SPAN

    @property
    def dimension_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dimensions)

    @property
    def row_word(self) -> str:
        return {SchemeType.MULTIRATE: "option", SchemeType.RUBRIC_EVAL: "criterion",
                SchemeType.SEMANTIC_DIFFERENTIAL: "pair"}.get(self.annotation_type, "dimension")

    @property
    def bipolar(self) -> bool:
        """Each row a scale between two opposite words (a semantic differential's pairs): the row's
        text is its left pole, its tooltip its right one."""
        return self.annotation_type is SchemeType.SEMANTIC_DIFFERENTIAL

    @property
    def by_rows(self) -> bool:
        """Answered row by row (a multi_dimension comparison, a multirate scheme, a rubric)."""
        return bool(self.dimensions)

    def incomplete(self, value: object) -> str:
        """What an answer given still lacks before its item is done, required or not ("" for nothing):
        points allocated are kept as they are given, and must add up to the total by then."""
        if self.annotation_type is SchemeType.CONSTANT_SUM and isinstance(value, dict):
            given = sum(value.values())
            if given != self.total or set(value) != set(self.labels):
                return f"points for every label adding up to {self.total or 0:g} ({given:g} given so far)"
        if self.annotation_type is SchemeType.CARD_SORT and self.groups_filled and isinstance(value, dict):
            empty = [group for group in self.labels if not value.get(group)]
            if empty:
                return f"a card in every group ({', '.join(empty)} still empty)"
        return ""

    def unfinished(self, value: object) -> str:
        """What a required answer still lacks ("" for nothing): a question answered row by row needs
        an answer on every row, a justification its rationale."""
        if self.by_rows and isinstance(value, dict):
            open_rows = ", ".join(d for d in self.dimension_names if d not in value)
            return f"an answer on every row ({open_rows} still open)" if open_rows else ""
        if self.justification and isinstance(value, dict):
            rationale = value.get("rationale", "")
            if isinstance(rationale, str) and len(rationale.strip()) < max(self.min_length, 1):
                return f"a rationale of at least {max(self.min_length, 1)} characters"
        return ""

    def shown_for(self, answers: Mapping[str, object]) -> bool:
        return self.display_logic is None or self.display_logic.shows(answers)

    @property
    def training_type(self) -> str | None:
        """The kind of answer a trainer learns ("radio", "multiselect", "span" or "pairwise"), or None if
        none can. A question asked on each step is learnt step by step (:attr:`learnt_by_step`), each
        step's answer as the kind it is; a binary comparison by a preference model."""
        if self.turns is not None and self.annotation_type is SchemeType.TRAJECTORY_EVAL:
            return SchemeType.RADIO.value  # its correctness
        if self.turns is not None and self.annotation_type not in CHOICE_TYPES | {SchemeType.MULTISELECT}:
            return None
        if self.annotation_type in CHOICE_TYPES:
            return SchemeType.RADIO.value
        if self.annotation_type is SchemeType.MULTISELECT:
            return SchemeType.MULTISELECT.value
        if self.annotation_type is SchemeType.SPAN:
            return SchemeType.SPAN.value
        if self.annotation_type is SchemeType.PAIRWISE and self.pairwise_mode in ("binary", ""):
            return SchemeType.PAIRWISE.value  # which option is better: a preference model learns it
        return None

    @property
    def learnt_by_step(self) -> bool:
        """Asked on each step or turn of a trace and learnt step by step: a step classifier's scheme."""
        return self.turns is not None and self.training_type is not None

    @property
    def step_mistakes(self) -> tuple[str, ...]:
        """The answers that mark a step as a mistake, where the scheme says which (a process reward's
        and a trajectory evaluation's own words); () for a question whose answers name no mistake."""
        if self.annotation_type in (SchemeType.PROCESS_REWARD, SchemeType.TRAJECTORY_EVAL) and RIGHT in self.labels:
            return tuple(label for label in self.labels if label not in (RIGHT, NEUTRAL))
        return ()

    def step_label(self, answer: object) -> object:
        """One step's stored answer as the label a step classifier learns: a trajectory evaluation's
        correctness, a consensus act without the turn it answers, else the answer itself."""
        if isinstance(answer, dict):
            return answer.get("correctness", answer.get("act"))
        return answer

    def step_answer(self, label: object) -> object:
        """A step classifier's label as the answer an annotator gives on that step (what accepting
        a suggestion stores): the inverse of :meth:`step_label`."""
        if self.annotation_type is SchemeType.TRAJECTORY_EVAL:
            return {"correctness": label}
        return list(label) if isinstance(label, tuple) else label

    def step_agents(self, turns: Sequence[Turn]) -> list[str]:
        """The agents a failure attribution offers on an item: its ``agents``, else each one that took
        a step, in the order they first did (pure)."""
        if self.agents:
            return list(self.agents)
        return list(dict.fromkeys(turn.speaker for turn in turns if turn.speaker))

    def stored_attribution(self, value: object, turns: Sequence[Turn]) -> Dict[str, Any]:
        """A failure attribution checked against the item's steps, as it is stored: all three parts,
        those not given as null or ""; :class:`BadTurns` names the agent or step the item does not have."""
        if not self.accepts_one(value):
            raise BadTurns(f"{short(value)} is not an answer (valid: {self.valid_answer()})")
        assert isinstance(value, dict)
        agent, step, reason = (value.get(part) for part in ATTRIBUTION_PARTS)
        agents = self.step_agents(turns)
        if agent and agent not in agents:
            raise BadTurns(f"no agent {agent!r} took a step of this item (its agents: {', '.join(agents) or 'none'})")
        if step is not None and step >= len(turns):
            raise BadTurns(f"this item has {len(turns)} steps, numbered 0 to {len(turns) - 1}; there is no step {step}")
        return {"responsible_agent": agent or "", "decisive_step": step, "reason": reason or ""}

    def marked_texts(self, texts: str | Texts) -> Texts:
        """The item's texts this span scheme marks, of all it has (one text is the item's own)."""
        return {field: text for field, text in texts_of(texts).items() if field in self.span_fields}

    def check_spans(self, value: object, texts: str | Texts) -> list[Span]:
        """``value`` as this span scheme's spans over the item's ``texts``; :class:`BadSpan` says why not."""
        return check_spans(self.marked_texts(texts), value, self.labels, self.allow_overlapping, self.text_key)

    def span_problem(self, value: object, texts: str | Texts) -> str | None:
        """What is wrong with ``value`` as this span scheme's spans over ``texts`` (pure); None: nothing."""
        try:
            self.check_spans(value, texts)
        except BadSpan as bad:
            return str(bad)
        return None

    def accepts(self, value: object, text: str | Texts | None = None) -> bool:
        """Whether ``value`` is a well-formed answer to this scheme (pure). Spans are an answer only
        against the item's ``text`` (or texts by field): their offsets and text must fit it. A
        turn-level answer is answers by turn id, each one this scheme takes (which turns the item
        has is checked with the item: :func:`potato.training.job.turns.stored_turns`)."""
        if self.turns is not None:
            return well_formed(value, self.accepts_one)
        return self.accepts_one(value, text)

    def stored_turns(self, value: object, turns: Sequence[Turn]) -> Dict[str, Dict[str, Any]]:
        """A turn-level answer checked against the item's ``turns`` of its field, as it is stored (each
        turn's answer with its place and text); :class:`BadTurns` says what is wrong."""
        if self.turns is None or not isinstance(value, dict):
            raise BadTurns(f"{short(value)} is not answers by turn id (valid: {self.valid_answers()})")
        kept = stored_turns(value, turns, self.turns, self.accepts_one, self.valid_answer())
        for turn_id, entry in kept.items():
            ref = entry["value"].get("ref") if isinstance(entry["value"], dict) else None
            if ref is not None and (ref == turn_id or ref not in {t.id for t in turns}):
                raise BadTurns(f"turn {turn_id!r} refers to {ref!r}, which is not another turn of this item "
                               f"(its turns: {', '.join(t.id for t in turns[:12])})")
        if self.first_error:
            wrong = [turn_id for turn_id, entry in kept.items() if entry["value"] == WRONG]
            later = [turn_id for turn_id, entry in kept.items()
                     if wrong and entry["value"] == RIGHT and entry["index"] > kept[wrong[0]]["index"]]
            if later:
                raise BadTurns(f"step {later[0]!r} is marked {RIGHT} after step {wrong[0]!r}, the first wrong one; "
                               f"in first_error mode every step from the first wrong one on is {WRONG}")
        return kept

    def accepts_one(self, value: object, text: str | Texts | None = None) -> bool:
        """Whether ``value`` is one answer to this scheme's question (on one turn, for a turn-level one)."""
        if self.annotation_type is SchemeType.SPAN:
            return text is not None and self.span_problem(value, text) is None
        if self.annotation_type is SchemeType.TRAJECTORY_EVAL:
            return self._accepts_step_verdict(value)
        if self.annotation_type is SchemeType.FAILURE_ATTRIBUTION:
            return self._accepts_attribution(value)
        if self.annotation_type is SchemeType.TEXT_EDIT:  # the server counts the distances again
            return self._accepts_edit(value, EDIT_PARTS)
        if self.annotation_type is SchemeType.TRAJECTORY_EDIT:
            return self._accepts_trajectory_edit(value)
        if self.annotation_type is SchemeType.CONSTANT_SUM:
            return self._accepts_points(value)
        if self.annotation_type is SchemeType.CONFIDENCE and self.labels:  # a point of its scale, "1" for the least
            return isinstance(value, str) and value in self.labels
        if self.annotation_type is SchemeType.RANKING:  # every label once, best first
            return isinstance(value, list) and sorted(value, key=str) == sorted(self.labels)
        if self.annotation_type is SchemeType.AGENT_SCORECARD:
            return self._accepts_scorecard(value)
        if self.annotation_type is SchemeType.EMERGENT_BEHAVIOR:
            return self._accepts_behaviours(value)
        if self.annotation_type is SchemeType.AGENT_INTERACTION_GRAPH:
            return self._accepts_graph(value)
        if self.annotation_type is SchemeType.TABLE_GRID:
            return self._accepts_grid(value)
        if self.annotation_type is SchemeType.PURE_DISPLAY:  # shown, never answered
            return False
        if self.dynamic:  # the item's labels: checked with it
            picks = value if self.annotation_type is SchemeType.MULTISELECT else [value]
            return (isinstance(picks, list) and bool(picks) and all(isinstance(p, str) and p for p in picks)
                    and len(set(picks)) == len(picks))
        if self.annotation_type is SchemeType.EXTRACTIVE_QA:
            return self._accepts_answer_span(value)
        if self.annotation_type is SchemeType.SPAN_LINK:  # the spans are checked with the item's texts
            return isinstance(value, list) and bool(value) and all(
                isinstance(link, dict) and set(link) <= {"link_type", "spans", "direction"}
                and isinstance(link.get("link_type"), str) and isinstance(link.get("spans"), list)
                and all(isinstance(span, dict) for span in link["spans"]) for link in value)
        if self.annotation_type is SchemeType.CONJOINT:  # the profiles are written from the item again
            chosen = value.get("chosen_profile") if isinstance(value, dict) else None
            return (isinstance(value, dict) and set(value) <= {"chosen_profile", "profiles"}
                    and ((chosen == "none" and self.show_none)
                         or (isinstance(chosen, int) and not isinstance(chosen, bool) and chosen >= 1)))
        if self.annotation_type is SchemeType.CARD_SORT:  # {group: [card, ...]} (the item's cards checked with it)
            return (isinstance(value, dict) and bool(value) and set(value) <= set(self.labels)
                    and all(isinstance(cards, list) and all(isinstance(c, str) for c in cards) for cards in value.values()))
        if self.annotation_type is SchemeType.RANGE_SLIDER:  # upstream's two thumbs, the low one not above the high
            return (isinstance(value, dict) and set(value) == set(RANGE_ENDS)
                    and all(self._accepts_number(value[end]) for end in RANGE_ENDS)
                    and value["range_low"] <= value["range_high"])
        if self.keyed is not None:
            return self._accepts_keyed(value)
        if self.review_steps is not None:
            return (isinstance(value, list) and bool(value) and all(self._accepts_review(entry) for entry in value)
                    and len({entry["index"] for entry in value}) == len(value))
        if self.justification:
            reasons, rationale = (value.get("reasons", []), value.get("rationale", "")) if isinstance(value, dict) else ((), 0)
            return (isinstance(value, dict) and bool(value) and set(value) <= {"reasons", "rationale"}
                    and isinstance(reasons, list) and all(isinstance(r, str) and r in self.labels for r in reasons)
                    and len(set(reasons)) == len(reasons)
                    and isinstance(rationale, str) and len(rationale) <= self.max_length)
        if self.annotation_type in TAGGED_TURNS and isinstance(value, dict):
            return (set(value) <= {"act", "ref"} and value.get("act") in self.linked_labels
                    and (value.get("ref") is None or isinstance(value.get("ref"), str)))
        if self.annotation_type in CHOICE_TYPES:
            return isinstance(value, str) and value in self.labels
        if self.annotation_type in (SchemeType.MULTISELECT, SchemeType.HIERARCHICAL_MULTISELECT):
            return (
                isinstance(value, list)
                and all(isinstance(v, str) and v in self.labels for v in value)
                and len(set(value)) == len(value)
            )
        if self.numeric:
            return self._accepts_number(value)
        if self.annotation_type is SchemeType.SOFT_LABEL:
            return self._accepts_shares(value)
        if self.annotation_type in RATED_ROWS:
            return (isinstance(value, dict) and bool(value)
                    and all(k in self.dimension_names and isinstance(v, str) and v in self.labels for k, v in value.items()))
        if self.pairwise_mode == "multi_dimension":
            return (isinstance(value, dict) and bool(value) and all(
                isinstance(v, str) and k in self.dimension_names and (v in (FIRST, SECOND) or (v == TIE and k in self.tie_dimensions))
                for k, v in value.items()))
        if self.annotation_type is SchemeType.PAIRWISE:
            return isinstance(value, str) and value in self.labels
        if self.labels:  # a text scheme with labels has a box per label: {label: text}
            return (isinstance(value, dict) and bool(value) and all(k in self.labels for k in value)
                    and all(isinstance(v, str) and len(v) <= self.max_length for v in value.values()))
        return isinstance(value, str) and len(value) <= self.max_length

    def valid_answers(self) -> str:
        """What this scheme takes, for an error message (pure)."""
        if self.turns is not None:
            return "an object of answers by turn id, each " + self.valid_answer()
        return self.valid_answer()

    def valid_answer(self) -> str:
        """What one answer to this scheme's question is (on one turn, for a turn-level one)."""
        if self.annotation_type is SchemeType.SPAN:
            return ('a list of spans {"start", "end", "label"} over the item\'s text, labels: '
                    + ", ".join(self.labels))
        if self.annotation_type is SchemeType.SOFT_LABEL:
            return (f"an object of shares by label ({', '.join(self.labels)}), each at least {self.min_value or 0:g}, "
                    f"together {self.total or 0:g}")
        if self.annotation_type in RATED_ROWS:
            return f"an object of ratings by {self.row_word} ({', '.join(self.dimension_names)}), each one of: {', '.join(self.labels)}"
        if self.pairwise_mode == "multi_dimension":
            return ("an object of choices by dimension (" + ", ".join(self.dimension_names) + "), each A or B"
                    + (f" (or tie on {', '.join(self.tie_dimensions)})" if self.tie_dimensions else ""))
        if self.annotation_type is SchemeType.TRAJECTORY_EVAL:
            return ('{"correctness": ' + " or ".join(self.labels) + '} with, for an error, "error_type" ('
                    + ", ".join(name for name, _ in self.error_types) + '), "error_subtype", "severity" ('
                    + ", ".join(name for name, _ in self.severities) + ') and "rationale"')
        if self.annotation_type in TAGGED_TURNS:
            return (", ".join(self.labels) + (f"; or {{\"act\", \"ref\": the turn it answers}} for "
                                              f"{', '.join(self.linked_labels)}" if self.linked_labels else ""))
        if self.annotation_type is SchemeType.TEXT_EDIT:
            return f'{{"edited_text": the item\'s text as rewritten, at most {self.max_length} characters}}'
        if self.annotation_type is SchemeType.RANKING:
            return "a list of every label once, best first: " + ", ".join(self.labels)
        if self.annotation_type is SchemeType.CONSTANT_SUM:
            return (f"an object of whole points by label ({', '.join(self.labels)}), each at least {self.min_value or 0:g}, "
                    f"together {self.total or 0:g}")
        if self.annotation_type is SchemeType.AGENT_SCORECARD:
            return ('{"agents": {an agent of the item: {' + ", ".join(self.agent_dimensions) + f': 1 to {self.quality_scale}}}}}, '
                    '"team": {' + ", ".join(self.team_dimensions) + f': 1 to {self.quality_scale}}}, "milestones": {{'
                    + ", ".join(self.milestones) + ": true or false}}")
        if self.dynamic:
            return ("a list of the labels the item offers" if self.annotation_type is SchemeType.MULTISELECT
                    else "one of the labels the item offers")
        if self.annotation_type is SchemeType.PURE_DISPLAY:
            return "nothing: it is shown, not answered"
        if self.annotation_type is SchemeType.SPAN_LINK:
            return ('a list of {"link_type": one of ' + ", ".join(t.name for t in self.link_types)
                    + f', "spans": two or more of the item\'s spans in {self.link_spans!r}, each {{"start", "end", '
                    '"label"}, the source first}')
        if self.annotation_type is SchemeType.CONJOINT:
            return ('{"chosen_profile": a profile\'s number (1 for the first)' + (' or "none"' if self.show_none else "")
                    + "}")
        if self.annotation_type is SchemeType.EXTRACTIVE_QA:
            return ('{"answer_text": the passage\'s words, "start" and "end": where they are (0 for the first character), '
                    '"unanswerable": false}' + (' or {"answer_text": "", "start": -1, "end": -1, "unanswerable": true}'
                                                if self.allow_unanswerable else ""))
        if self.annotation_type is SchemeType.CARD_SORT:
            return "{" + ", ".join(self.labels) + ": a list of the item's cards}"
        if self.annotation_type is SchemeType.RANGE_SLIDER:
            return (f'{{"range_low": a number, "range_high": a number not below it}}, each from {self.min_value or 0:g} '
                    f'to {self.max_value or 0:g}' + (f" in steps of {self.step:g}" if self.step else ""))
        if self.annotation_type is SchemeType.TABLE_GRID:
            return (f'{{"rows": 1 to {GRID_MAX}, "cols": 1 to {GRID_MAX}, "cells": {{"row,col" (0,0 for the first): '
                    + " or ".join(self.labels) + "}}")
        if self.annotation_type is SchemeType.AGENT_INTERACTION_GRAPH:
            return ('{"critical_nodes": a list of the item\'s agents, "edges": {"an agent->another": critical or '
                    'problematic}}')
        if self.annotation_type is SchemeType.EMERGENT_BEHAVIOR:
            return ("{" + ", ".join(self.labels) + ': {"turns": a list of turns\' places (0 for the first)'
                    + (f', "note": text of at most {self.max_length} characters' if self.allow_note else "") + "}}")
        if self.keyed is not None:
            return (f'{{"{self.keyed}": {{a part\'s number as text ("0" for the first): one of {", ".join(self.labels)}}}'
                    + (f', "rating": 1 to {self.quality_scale}' if self.annotation_type is SchemeType.VOICE_INTERACTION else "")
                    + "}")
        if self.review_steps is not None:
            said = {"verdict": "one of " + ", ".join(self.labels), "flags": "a list of " + ", ".join(self.labels),
                    "errors": "a list of " + ", ".join(self.labels), "quality": f"1 to {self.quality_scale}"}
            return (f'a list of {{"index": a {_REVIEWED.get(self.annotation_type, "step")}\'s number (0 for the first), '
                    + ", ".join(f'"{key}": ' + said.get(key, f"text of at most {self.max_length} characters")
                                for key in self.review_answers) + "}")
        if self.annotation_type is SchemeType.TRAJECTORY_EDIT:
            return ('{"steps": [{"step_index": a step\'s place (0 for the first), "field": one of '
                    + ", ".join(self.editable_fields) + f', "edited_text": at most {self.max_length} characters, '
                    '"reason": why}], "final_answer": {"edited_text": ...} or null}, at least one given')
        if self.annotation_type is SchemeType.FAILURE_ATTRIBUTION:
            return ('{"responsible_agent": an agent of the item, "decisive_step": a step\'s place (0 for the first), '
                    f'"reason": text of at most {self.max_length} characters}}, at least one of them given')
        if self.justification:
            return ('{"reasons": a list of ' + (", ".join(self.labels) or "no reasons") + ', "rationale": text of at most '
                    + f"{self.max_length} characters}}")
        if self.labels and self.annotation_type is SchemeType.TEXT:
            return f"an object of texts of at most {self.max_length} characters by box: {', '.join(self.labels)}"
        if self.labels:
            return ", ".join(self.labels)
        if self.numeric:
            low = "" if self.min_value is None else f" from {self.min_value:g}"
            high = "" if self.max_value is None else f" to {self.max_value:g}"
            step = f" in steps of {self.step:g}" if self.step and self.min_value is not None else ""
            return f"a number{low}{high}{step}"
        return "any text"

    def _accepts_step_verdict(self, value: object) -> bool:
        """``{"correctness", "error_type", "error_subtype", "severity", "rationale"}``: a correctness,
        and for a step that is not right, what went wrong (all but the correctness may be left out)."""
        if not isinstance(value, dict) or value.get("correctness") not in self.labels:
            return False
        if not set(value) <= {"correctness", "error_type", "error_subtype", "severity", "rationale"}:
            return False
        kind, sub, severity, rationale = (value.get(key, "") for key in ("error_type", "error_subtype", "severity",
                                                                          "rationale"))
        if not all(isinstance(part, str) for part in (kind, sub, severity, rationale)):
            return False
        subtypes = dict(self.error_types)
        if kind and kind not in subtypes or sub and (not kind or sub not in subtypes.get(kind, ())):
            return False
        if severity and severity not in dict(self.severities):
            return False
        return len(rationale) <= self.max_length

    def _accepts_edit(self, value: object, parts: Sequence[str]) -> bool:
        return (isinstance(value, dict) and "edited_text" in value and set(value) <= set(parts)
                and isinstance(value["edited_text"], str) and len(value["edited_text"]) <= self.max_length
                and (value.get("original_text") is None or isinstance(value["original_text"], str)))

    def _accepts_trajectory_edit(self, value: object) -> bool:
        """Upstream's record (or only its edited texts): the steps' edits, each by its step's place and
        field, and the final answer's (the counts in it are counted again on storing)."""
        if not isinstance(value, dict) or not set(value) <= set(TRAJECTORY_EDIT_PARTS):
            return False
        steps, final = value.get("steps") or [], value.get("final_answer")
        if not isinstance(steps, list) or not (steps or final is not None):
            return False
        for entry in steps:
            if not (self._accepts_edit(entry, STEP_EDIT_PARTS) and entry.get("field") in self.editable_fields
                    and isinstance(entry.get("step_index"), int) and not isinstance(entry["step_index"], bool)
                    and entry["step_index"] >= 0 and isinstance(entry.get("reason") or "", str)
                    and len(entry.get("reason") or "") <= self.max_length):
                return False
        return final is None or self._accepts_edit(final, STEP_EDIT_PARTS)

    def _accepts_points(self, value: object) -> bool:
        """Points allocated so far: whole numbers, each at least ``min_value``, by label (some may be
        still to give), together at most ``total`` (:meth:`incomplete` asks for all of it)."""
        if not isinstance(value, dict) or not value or not set(value) <= set(self.labels):
            return False
        points = list(value.values())
        return (all(isinstance(v, int) and not isinstance(v, bool) and v >= (self.min_value or 0) for v in points)
                and sum(points) <= (self.total or 0))

    def _accepts_review(self, entry: object) -> bool:
        """One part's answer (what names the part may be sent too: it is written from the item again)."""
        if not isinstance(entry, dict) or not set(entry) <= {"index", *NAMING, *self.review_answers}:
            return False
        index = entry.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            return False
        return all(entry.get(key) in (None, "", [], 0) or self._accepts_part_answer(REVIEW_ANSWERS[key], entry[key])
                   for key in self.review_answers)

    def _score(self, value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= self.quality_scale

    def _accepts_scorecard(self, value: object) -> bool:
        """Upstream's ``{"agents": {agent: {dimension: score}}, "team": {dimension: score}, "milestones":
        {milestone: reached}}``, any part left out (which agents the item has is checked with it)."""
        if not isinstance(value, dict) or not value or not set(value) <= {"agents", "team", "milestones"}:
            return False
        agents, team, reached = value.get("agents") or {}, value.get("team") or {}, value.get("milestones") or {}
        return (isinstance(agents, dict) and all(isinstance(name, str) and isinstance(dims, dict)
                                                 and set(dims) <= set(self.agent_dimensions)
                                                 and all(self._score(v) for v in dims.values())
                                                 for name, dims in agents.items())
                and isinstance(team, dict) and set(team) <= set(self.team_dimensions)
                and all(self._score(v) for v in team.values())
                and isinstance(reached, dict) and set(reached) <= set(self.milestones)
                and all(isinstance(v, bool) for v in reached.values()))

    def _accepts_behaviours(self, value: object) -> bool:
        """Upstream's ``{behaviour: {"turns": [place, ...], "note": text}}`` (which turns the item has is
        checked with it)."""
        if not isinstance(value, dict) or not value or not set(value) <= set(self.labels):
            return False
        for given in value.values():
            if not isinstance(given, dict) or not set(given) <= {"turns", "note"}:
                return False
            turns, note = given.get("turns") or [], given.get("note") or ""
            if not (isinstance(turns, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in turns)
                    and isinstance(note, str) and len(note) <= self.max_length and (self.allow_note or not note)):
                return False
        return True

    @staticmethod
    def _accepts_graph(value: object) -> bool:
        """Upstream's ``{"critical_nodes": [agent, ...], "edges": {"A->B": "critical" or "problematic"}}``
        (which agents and passages the item has is checked with it)."""
        if not isinstance(value, dict) or not value or not set(value) <= {"critical_nodes", "edges"}:
            return False
        nodes, edges = value.get("critical_nodes") or [], value.get("edges") or {}
        return (isinstance(nodes, list) and all(isinstance(n, str) for n in nodes) and isinstance(edges, dict)
                and all(isinstance(k, str) and v in ("", "critical", "problematic") for k, v in edges.items()))

    def _accepts_answer_span(self, value: object) -> bool:
        """Upstream's ``{"answer_text", "start", "end", "unanswerable"}``: a stretch of the passage (which
        is checked with it), or, where allowed, no answer (text "", -1 and -1)."""
        if not isinstance(value, dict) or set(value) != {"answer_text", "start", "end", "unanswerable"}:
            return False
        text, start, end, none = value["answer_text"], value["start"], value["end"], value["unanswerable"]
        if not (isinstance(text, str) and isinstance(none, bool) and all(
                isinstance(n, int) and not isinstance(n, bool) for n in (start, end))):
            return False
        if none:
            return self.allow_unanswerable and text == "" and start == end == -1
        return 0 <= start < end and len(text) == end - start

    def _accepts_grid(self, value: object) -> bool:
        """Upstream's ``{"rows", "cols", "cells": {"row,col": role}}`` (from 0; 1 to 40 of each)."""
        if not isinstance(value, dict) or not {"rows", "cols"} <= set(value) <= {"rows", "cols", "cells"}:
            return False
        rows, cols, cells = value["rows"], value["cols"], value.get("cells") or {}
        if not all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= GRID_MAX for n in (rows, cols)):
            return False
        if not isinstance(cells, dict):
            return False
        for where, role in cells.items():
            r, _, c = str(where).partition(",")
            if not (r.isdigit() and c.isdigit() and int(r) < rows and int(c) < cols and role in self.labels):
                return False
        return True

    def _accepts_keyed(self, value: object) -> bool:
        """``{keyed: {part's number: label}}``, and an overlap review's ``rating`` (which parts the item
        has is checked with it)."""
        rated = self.annotation_type is SchemeType.VOICE_INTERACTION
        if not isinstance(value, dict) or not value or not set(value) <= {self.keyed, *(("rating",) if rated else ())}:
            return False
        labels = value.get(self.keyed) or {}
        return (isinstance(labels, dict) and all(isinstance(k, str) and k.isdigit() and (v == "" or v in self.labels)
                                                 for k, v in labels.items())
                and self._score(value.get("rating") or 0))

    def _accepts_part_answer(self, kind: str, value: object) -> bool:
        if kind == "choice":
            return isinstance(value, str) and value in self.labels
        if kind == "text":
            return isinstance(value, str) and len(value) <= self.max_length
        if kind == "choices":
            return (isinstance(value, list) and all(isinstance(v, str) and v in self.labels for v in value)
                    and len(set(value)) == len(value))
        return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= self.quality_scale

    def _accepts_attribution(self, value: object) -> bool:
        """Upstream's ``{"responsible_agent", "decisive_step", "reason"}``, any of them left out, empty
        or null, not all (which steps and agents the item has is checked with it: :meth:`stored_attribution`)."""
        if not isinstance(value, dict) or not set(value) <= set(ATTRIBUTION_PARTS):
            return False
        agent, step, reason = (value.get(part) for part in ATTRIBUTION_PARTS)
        if not (agent is None or isinstance(agent, str)) or not (reason is None or isinstance(reason, str)):
            return False
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
            return False
        return bool(agent or step is not None or reason) and len(reason or "") <= self.max_length

    def _accepts_shares(self, value: object) -> bool:
        """A soft label's answer: every label's share, a number of at least ``min_value``, the shares
        adding up to ``total`` (to a millionth of it, as a page's sliders may round)."""
        if not isinstance(value, dict) or set(value) != set(self.labels):
            return False
        shares = list(value.values())
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in shares):
            return False
        total = self.total or 0.0
        return all(v >= (self.min_value or 0) for v in shares) and abs(sum(shares) - total) <= 1e-6 * max(1.0, total)

    def _accepts_number(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        try:
            if not math.isfinite(value):
                return False
        except OverflowError:  # an int too large for a float is no answer on any scale
            return False
        if (self.min_value is not None and value < self.min_value) or (
                self.max_value is not None and value > self.max_value):
            return False
        if self.step and self.min_value is not None:
            steps = (value - self.min_value) / self.step
            return abs(steps - round(steps)) < 1e-6
        return True
