"""Participants from crowdsourcing platforms: arriving by the platform's link, and the done page.

The rules of each platform are its class in :mod:`potato.study.platforms`; this blueprint stores who
arrived (:mod:`potato.study.participants`) and renders the hand-off: the completion code with a copy
button, the way back, and the redirect by itself where the config asks for it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from flask import Blueprint, Flask, current_app, make_response, render_template, request, session

from potato.study.platforms import (DONE_MESSAGE, MTURK_ORIGINS, Arrival, ArrivalRefused, HandOff, Outcome, arrival,
                                    hand_off, is_preview)
from potato.study.participants import Participants
from potato.server.auth import clean_user_name, current_user, login_required
from potato.server.context import Project
from potato.server.security import policy
from potato.server.study.roster import elsewhere, here, outcome_of
from potato.server.study.pages import ended_message

bp = Blueprint("crowd", __name__)

DONE_HEADING = "Thank You!"
DONE_LINE = "You have completed the annotation task and your responses are saved."


def arrive(project: Project, sign_in: Callable[[str], Any], refuse: Callable[[str, int], Any]) -> Any | None:
    """The answer to a platform's link on ``/``, or None where the page shows the sign-in form.

    ``sign_in`` is the sign-in every way in passes through (throttle, the list of annotators);
    the arrival is stored only once it has let the participant in. ``refuse`` is the sign-in
    page with an error, for a link that cannot start a session.
    """
    crowd = project.config.crowdsourcing
    if crowd is None:
        return None
    args = request.args
    if is_preview(crowd, args):
        return render_template("preview.html", title=project.config.annotation_task_name, page=project.config.page)
    if not args.get(crowd.id_param):
        if crowd.platform.name_form or current_user():
            return None  # the name form (upstream's url_direct shows it too), or back to the signed-in page
    try:
        who = arrival(crowd, args)
    except ArrivalRefused as refused:
        return refuse(str(refused), crowd.platform.refused_status)
    answer = sign_in(who.worker_id)
    user = session.get("user")
    if user is not None and user == clean_user_name(who.worker_id):  # let in as the link says, not refused
        Participants(project.db).arrived(user, crowd.provider, who)
    return answer


def hand_off_for(project: Project, user: str, outcome: Outcome) -> HandOff:
    """The done page for ``user``: their platform's hand-off for ``outcome``, or the study's completion
    code (a study that ended early gives none: it was not completed)."""
    crowd = project.config.crowdsourcing
    page = project.config.page
    if crowd is None:
        if outcome is not Outcome.COMPLETED:
            return HandOff(message=ended_message(outcome))
        return HandOff(code=page.completion_code, message="" if page.completion_code else DONE_MESSAGE)
    participant = Participants(project.db).get(user)
    # A session from before arrivals were recorded: the name is the platform's id (an invite's token
    # is never a name, so this cannot be mistaken for an expert's credential).
    who = participant.arrival if participant is not None else Arrival(worker_id=user)
    shown = hand_off(crowd, who, outcome)
    if outcome is not Outcome.COMPLETED:
        shown = replace(shown, message=ended_message(outcome) + " " + shown.message)
    return shown


@bp.get("/done")
@login_required
def done() -> Any:
    at = here()
    project, user, step = at.project, at.user, at.step
    away = elsewhere(step, "crowd.done")  # no code before the work is done, nor every page of the study
    if away is not None:
        return away
    outcome = outcome_of(project, user, step)
    Participants(project.db).finished(user, outcome)
    shown = hand_off_for(project, user, outcome)
    response = make_response(render_template("done.html", title=project.config.annotation_task_name, user=user,
                                             page=project.config.page, hand_off=shown, heading=DONE_HEADING,
                                             line=DONE_LINE if outcome is Outcome.COMPLETED else ""))
    if shown.form_action:
        response.headers["Content-Security-Policy"] = policy(current_app, form_action=MTURK_ORIGINS)
    return response


def init_app(app: Flask, project: Project) -> None:
    app.register_blueprint(bp)
    crowd = project.config.crowdsourcing
    if crowd is not None and crowd.posts_to_mturk:
        # MTurk shows an external HIT inside its own page.
        app.extensions["potato.framed_by"] = MTURK_ORIGINS
