"""A study's pages around the items: ``/study`` shows the page a participant is on and takes its answers.

The pages are plain forms posted back (they work without script; ``study.js`` only hides questions
whose display_logic says so). Each answer is checked here, stored with the step past the page in
one commit, and the next page follows; a consent declined or a training failed ends the study on
the done page, with the platform's code for that outcome.
"""

from __future__ import annotations

from typing import Any, Mapping

from flask import Blueprint, Flask, jsonify, redirect, render_template, request, url_for

from potato.study.platforms import Outcome
from potato.study.participants import Participants
from potato.study.store import PhaseStore
from potato.study.phases import (ENDED, HEADINGS, Phase, PhaseKind, check_survey, mistakes_note, survey_value,
                                 training_state, wrong_questions)
from potato.server.auth import current_user, login_required
from potato.server.study.roster import elsewhere, here, step_of
from potato.server.context import Project, current_project

bp = Blueprint("study", __name__)

ITEMS_FIRST = "This study has pages to finish before its items: open /study in your browser to go on."
STALE_TRAINING = ("That answer was for a training item that is no longer the current one (the study went on in "
                  "another tab), so it was not counted. Here is the current item.")


def before_items(project: Project, user: str) -> bool:
    """A page before the items (a consent, the training) is still to be done, or the study ended."""
    if project.config.phases is None:
        return False
    step = step_of(project, user)
    return step.ended is not None or (step.phase is not None and _comes_before_items(project, step.phase))


def _comes_before_items(project: Project, phase: Phase) -> bool:
    assert project.config.phases is not None
    names = [p.kind for p in project.config.phases.order]
    return project.config.phases.order.index(phase) < names.index(PhaseKind.ANNOTATION)


def earlier_answers(project: Project, user: str, phase: Phase) -> dict[str, Any]:
    """What ``user`` answered on the study pages before ``phase`` (a later page's answer to a question of
    the same name wins): a question's display_logic may hang on them."""
    order = project.config.phases.order if project.config.phases else ()
    store = PhaseStore(project.db)
    out: dict[str, Any] = {}
    for before in order[:order.index(phase)]:
        if before.questions:
            out.update(store.answers(user, before.name))
    return out


def _render(project: Project, user: str, phase: Phase, answers: Mapping[str, Any], problems: list[str],
            status: int = 200, **extra: Any) -> Any:
    order = project.config.phases.order if project.config.phases else ()
    return render_template("study.html", title=project.config.annotation_task_name, user=user, phase=phase,
                           heading=HEADINGS[phase.kind], answers=answers, problems=problems,
                           number=order.index(phase) + 1, pages=len(order),
                           earlier=earlier_answers(project, user, phase), **extra), status


@bp.get("/study")
@login_required
def show() -> Any:
    at = here()
    project, user, step = at.project, at.user, at.step
    if step.annotating or step.phase is None:
        return elsewhere(step, "study.show")  # the items, or the done page
    store = PhaseStore(project.db)
    if step.phase.kind is PhaseKind.TRAINING:
        return _training_page(project, user, step.phase)
    return _render(project, user, step.phase, store.answers(user, step.phase.name), [])


@bp.post("/study")
@login_required
def answer() -> Any:
    at = here()
    project, user, step = at.project, at.user, at.step
    if step.phase is None or request.form.get("phase") != step.phase.name:
        return redirect(url_for("study.show"))  # a page answered already (a second tab, a resent form)
    phase = step.phase
    form = {key: request.form.getlist(key) for key in request.form}
    if phase.kind is PhaseKind.TRAINING:
        return _training_answer(project, user, phase, form)
    checked = check_survey(phase, form, earlier_answers(project, user, phase))
    store = PhaseStore(project.db)
    if checked.problems:
        return _render(project, user, phase, _as_sent(phase, form), checked.problems, 400)
    if checked.refused:
        store.finish(user, phase.name, Outcome.SCREENED_OUT.value, checked.answers)
        Participants(project.db).finished(user, Outcome.SCREENED_OUT)
        return redirect(url_for("crowd.done"))
    store.finish(user, phase.name, "done", checked.answers)
    return redirect(url_for("study.show"))


def _as_sent(phase: Phase, form: Mapping[str, list[str]]) -> dict[str, Any]:
    """The form's values, to show them again beside what to fix (nothing typed is lost)."""
    schemes = phase.questions or phase.schemes
    return {s.name: survey_value(s, form.get(s.name, ())) for s in schemes}


def _training_page(project: Project, user: str, phase: Phase, answers: Mapping[str, Any] | None = None,
                   problems: list[str] | None = None, status: int = 200) -> Any:
    assert project.config.phases is not None
    rule = project.config.phases.rule
    attempts = PhaseStore(project.db).attempts(user, phase.name)
    state = training_state(phase, rule, attempts)
    item = phase.gold[min(state.position, len(phase.gold) - 1)]
    feedback = None
    if state.last is not None:
        last_item = next(g for g in phase.gold if g.id == state.last.item_id)
        if state.last.correct:
            feedback = {"ok": True, "text": "Correct!"}
        else:
            again = last_item.id == item.id
            feedback = {"ok": False, "text": ("Not quite: try this one again. " if again else "Not quite. ")
                        + last_item.explanation}
    return _render(project, user, phase, answers or {}, problems or [], status, item=item,
                   position=state.position + 1, feedback=feedback, limit=mistakes_note(rule, state))


def _training_answer(project: Project, user: str, phase: Phase, form: Mapping[str, list[str]]) -> Any:
    assert project.config.phases is not None
    rule = project.config.phases.rule
    store = PhaseStore(project.db)
    state = training_state(phase, rule, store.attempts(user, phase.name))
    item = phase.gold[state.position]
    if form.get("item", [""])[0] != item.id:
        # A page that is out of date (another tab went on): its answer was for another item, and
        # grading it against this one would count a mistake nobody made.
        return _training_page(project, user, phase, problems=[STALE_TRAINING], status=409)
    given = _as_sent(phase, form)
    missing = [s.description or s.name for s in phase.schemes if s.name in item.answers and given.get(s.name) is None]
    if missing:
        return _training_page(project, user, phase, given, [f"Answer \u201c{m}\u201d first." for m in missing], 400)
    store.attempt(user, phase.name, item.id, given, not wrong_questions(item, given))
    after = training_state(phase, rule, store.attempts(user, phase.name))
    if after.verdict == "passed":
        store.finish(user, phase.name, "done")
    elif after.verdict == "failed":
        if rule.failure_action == "repeat_training":
            store.start_over(user, phase.name)
        else:
            store.finish(user, phase.name, Outcome.FAILED.value)
            Participants(project.db).finished(user, Outcome.FAILED)
            return redirect(url_for("crowd.done"))
    return redirect(url_for("study.show"))


def ended_message(outcome: Outcome) -> str:
    return ENDED.get(outcome.value, "")


@bp.before_app_request
def _items_wait_for_the_pages() -> Any:
    """The items' API answers only once the pages before them are done: a consent cannot be skipped
    by a script any more than by the page."""
    if request.endpoint not in ("annotate.label", "annotate.move", "annotate.get_item"):
        return None
    project = current_project()
    user = current_user() if project.config.phases else None
    if user and before_items(project, user):
        return jsonify(error=ITEMS_FIRST), 409
    return None


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
