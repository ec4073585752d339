"""Participants from crowdsourcing platforms: arriving by the platform's link, and the done page.

The rules of each platform are data in :mod:`potato.crowdsourcing`; this blueprint stores who
arrived (:mod:`potato.participants`) and renders the hand-off: the completion code with a copy
button, the way back, and the redirect by itself where the config asks for it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from flask import Blueprint, Flask, current_app, make_response, redirect, render_template, request, session, url_for

from potato.crowdsourcing import (DONE_MESSAGE, MTURK_ORIGINS, Arrival, ArrivalRefused, HandOff, Outcome, arrival,
                                  hand_off, is_preview)
from potato.participants import Participants
from potato.server.auth import clean_user_name, current_user, login_required, session_user
from potato.server.context import Project, current_project
from potato.server.security import policy
from potato.roster import outcome_of, step_of
from potato.server.study import ended_message

bp = Blueprint("crowd", __name__)

DONE_HEADING = "Thank You!"
DONE_LINE = "You have completed the annotation task and your responses are saved."
BY_LINK = "This study signs you in by the link from {platform}, not by name. Open the study from {platform} again."
BY_LINK_ONLY = {"expert": "This study signs you in by your personal invite link, not by name. Open the link the study's "
                          "admin sent you, or ask them for a new one."}


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
        if crowd.provider == "url_direct" or current_user():
            return None  # the name form (upstream's url_direct shows it too), or back to the signed-in page
    try:
        who = arrival(crowd, args)
    except ArrivalRefused as refused:
        return refuse(str(refused), 403 if crowd.provider == "expert" else 400)
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
    project = current_project()
    user = session_user()
    step = step_of(project, user)
    if step.annotating:
        return redirect(url_for("annotate.annotate"))  # no code before the work is done
    if step.phase is not None:
        return redirect(url_for("study.show"))  # nor before every page of the study is
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
