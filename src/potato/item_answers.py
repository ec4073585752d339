"""Answers that name what their item holds, checked against it and stored with it (pure): a failure
attribution (the item's agents and steps), a text or trajectory edit (its originals, the distances
counted here), a review of its parts (tool calls, handoffs, steps, segments, contentions, overlaps),
an answer about its team (a scorecard, behaviours, an interaction graph), a card sort, an answer in
its passage, a conjoint choice (its profiles), links between its spans, and labels it fills itself.
The annotation page's saves and an import of labels both store these through :func:`stored_on_item`,
so the two never differ.
"""

from __future__ import annotations

from typing import Any

from potato.config.schema import Config
from potato.edits import BadEdit, stored_any_edit
from potato.items import Item
from potato.reviews import BadReview, stored_keyed, stored_review
from potato.answer_spans import BadAnswerSpan, stored_answer_span
from potato.card_sort import BadSort, cards_of, stored_sort
from potato.dynamic_labels import BadDynamicLabel, checked_labels, item_labels
from potato.span_links import BadLink, stored_links
from potato.conjoint import BadChoice, item_profiles, made_profiles, stored_choice
from potato.teams import BadTeamAnswer, stored_behaviours, stored_graph, stored_scorecard
from potato.training.job.schemes import Scheme, SchemeType
from potato.training.job.turns import BadTurns

MISFITS = (BadTurns, BadEdit, BadReview, BadTeamAnswer, BadSort, BadAnswerSpan, BadChoice, BadLink, BadDynamicLabel)
"""What :func:`stored_on_item` raises for an answer that does not fit its item; each message says why."""


def on_item(scheme: Scheme) -> bool:
    """Whether the scheme's answers name what the item holds, and so are checked against it."""
    return scheme.dynamic or scheme.profiles_per_set > 0 or any(part is not None for part in (
        scheme.names_step, scheme.edit_source, scheme.edit_steps, scheme.review_steps, scheme.team_steps,
        scheme.sort_cards, scheme.qa_fields, scheme.link_spans))


def blank(scheme: Scheme, value: object) -> bool:
    """No answer: nothing sent, or a failure attribution with every part left empty (an edit of the
    text down to nothing is an answer)."""
    if value is None or value == "" or value == [] or value == {}:
        return True
    return scheme.names_step is not None and isinstance(value, dict) and all(v in (None, "") for v in value.values())


def profiles_of(scheme: Scheme, item: Item) -> list[dict[str, str]]:
    """The profiles a conjoint set shows on ``item``: the item's own, or made from the attributes (the
    same for every annotator and visit: :mod:`potato.conjoint`)."""
    if scheme.profiles_field:
        return item_profiles(item.data.get(scheme.profiles_field))
    return made_profiles(scheme.conjoint_attributes, scheme.profiles_per_set, f"{scheme.name}\x1f{item.id}")


def passage_of(scheme: Scheme, item: Item) -> str:
    """The passage an extractive question's answer is marked in: the item's text, or its field."""
    key = (scheme.qa_fields or ("", ""))[1]
    value = item.data.get(key) if key else item.text
    return value if isinstance(value, str) else ""


def stored_on_item(config: Config, scheme: Scheme, value: Any, item: Item) -> Any:
    """``value`` (which ``scheme.accepts``) as it is stored for ``item``; None for a review that
    answers none of the item's parts. Raises one of :data:`MISFITS` naming what the item lacks."""
    if scheme.names_step is not None:
        return scheme.stored_attribution(value, config.item_turns(item).get(scheme.names_step.source, ()))
    if scheme.dynamic:
        return checked_labels(value, item_labels(scheme.labels, item.data))
    if scheme.link_spans is not None:
        spans = config.scheme(scheme.link_spans)
        if spans is None:  # validate refuses a config naming no span scheme
            raise BadLink(f"there is no span scheme {scheme.link_spans!r} to link spans of")
        return stored_links(value, scheme.link_types, spans, config.span_texts(item))
    if scheme.profiles_per_set:
        return stored_choice(value, profiles_of(scheme, item))
    if scheme.qa_fields is not None:
        return stored_answer_span(value, passage_of(scheme, item))
    if scheme.sort_cards is not None:
        return stored_sort(value, scheme.labels, cards_of(item.data.get(scheme.sort_cards)), scheme.cards_anywhere)
    if scheme.team_steps is not None:
        team = config.teams(item)[scheme.name]
        store = {SchemeType.AGENT_SCORECARD: stored_scorecard, SchemeType.EMERGENT_BEHAVIOR: stored_behaviours,
                 SchemeType.AGENT_INTERACTION_GRAPH: stored_graph}[scheme.annotation_type]
        return store(value, team)
    if scheme.keyed is not None:
        return stored_keyed(value, scheme.keyed, config.review_parts(item)[scheme.name])
    if scheme.review_steps is not None:
        return stored_review(value, config.review_parts(item)[scheme.name], scheme.review_answers) or None
    return stored_any_edit(scheme, value, config.edit_sources(item)[scheme.name])
