"""Every participant of a study and how it ended for them: the record an admin pays by.

A crowd study pays people, so every participant's outcome is on record, including those who
never labelled anything (a consent declined, a training failed, no items left when they came):
where they are now (:func:`step_of`), how their session ended (:func:`outcome_of`), and one
record each with their platform ids, when each step was done and every training attempt, for
``potato export --participants`` and the admin's Progress page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from flask import redirect, url_for

from potato.assignment import items_done as finished
from potato.study.platforms import Outcome
from potato.study.participants import Participants
from potato.study.store import PhaseStore
from potato.study.phases import Step, next_step
from potato.project import Project
from potato.server.auth import session_user
from potato.server.context import current_project

IN_PROGRESS = "in_progress"
"""The outcome of a participant the study has not ended for yet."""


def items_done(project: Project, user: str) -> bool:
    """Every item labelled, or none left to assign to this annotator (as the page counts)."""
    queue = project.queue
    if queue.size(user) == 0:  # none assigned yet: asking must not assign one (a consent may still be refused)
        return not queue.can_extend(user)
    return finished(queue.labelled(user), queue.total(user), queue.size(user), queue.can_extend(user))


def step_of(project: Project, user: str) -> Step:
    """Where ``user`` is in the study: a page, the items, an early end, or done."""
    phases = project.config.phases
    return next_step(phases, PhaseStore(project.db).states(user) if phases else {}, items_done(project, user))


@dataclass(frozen=True)
class Here:
    """The participant a study route answers and where they are in the study."""

    project: Project
    user: str
    step: Step


def here() -> Here:
    """How every study route opens: the signed-in participant of this request and their step."""
    project = current_project()
    user = session_user()
    return Here(project, user, step_of(project, user))


def page_for(step: Step) -> str:
    """The endpoint of the page ``step`` is on: the items, a study page, or the done page."""
    if step.annotating:
        return "annotate.annotate"
    return "study.show" if step.phase is not None else "crowd.done"


def elsewhere(step: Step, endpoint: str) -> Any | None:
    """A redirect to the page ``step`` is on when that is not ``endpoint``: nobody skips a page, and
    no code is shown before the work is done."""
    return None if page_for(step) == endpoint else redirect(url_for(page_for(step)))


def outcome_of(project: Project, user: str, step: Step) -> Outcome:
    """How ``user``'s session ended, once nothing is left for them: the study ended it early, or
    they finished their items, or there were none left for them when they came."""
    if step.ended is not None:
        return step.ended
    return Outcome.NO_ITEMS if project.queue.size(user) == 0 else Outcome.COMPLETED


def current_outcome(project: Project, user: str, recorded: str | None = None) -> str:
    """The outcome on record (the done page records it), else what the study says now: an early end,
    or ``in_progress`` while a page or an item is still to do."""
    if recorded:
        return recorded
    step = step_of(project, user)
    if step.ended is None and (step.annotating or step.phase is not None):
        return IN_PROGRESS
    return outcome_of(project, user, step).value


def everyone(project: Project) -> list[str]:
    """Every participant: whoever signed in, arrived by a link or answered a study page."""
    rows = project.db.conn.execute("SELECT name FROM users UNION SELECT user FROM participants "
                                   "UNION SELECT user FROM phase_states ORDER BY 1").fetchall()
    return [row[0] for row in rows]


def records(project: Project) -> Iterator[dict[str, Any]]:
    """One record per participant, as ``potato export --participants`` writes it."""
    arrivals = Participants(project.db).all()
    store = PhaseStore(project.db)
    for user in everyone(project):
        who = arrivals.get(user)
        record: dict[str, Any] = {"user": user}
        if who is not None:
            record["participant"] = who.to_json()
        record["outcome"] = current_outcome(project, user, who.outcome if who else None)
        record["finished_at"] = who.finished_at if who else None
        record["labelled"] = project.queue.labelled(user)
        record["of"] = project.queue.total(user)
        record["steps"] = store.steps(user)
        record["training"] = store.all_attempts(user)
        yield record
