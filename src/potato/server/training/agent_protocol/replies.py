"""What the agent protocol's routes answer and do about a run once a request is read and its token
checked: the job an agent is handed, whether the reply to a report says stop, and what becomes of a
job or a run whose agent says it leaves.

Apart from :mod:`routes`, which reads each request and answers its errors (every error ``code`` of the
protocol is answered there, where tests/unit/test_agent_error_codes_contract.py collects them):
nothing here reads the request or answers an error.
"""

from __future__ import annotations

from typing import Any, Optional

from flask import Response, jsonify

from potato.server.context import Project
from potato.server.training.backends import backends_of
from potato.server.training.runs.handover import job_description
from potato.server.training.runs.recorder import RunRecorder
from potato.server.training.runs.store import Run, RunStore
from potato.training.job.results import Reason
from potato.training.launch.supervise import wall_limit_message


def job_reply(project: Project, store: RunStore, run: Run, token: Optional[str] = None) -> Response:
    backend = backends_of(project.config).get(run.backend)
    body = job_description(project, store, run, backend is not None and backend.on_this_machine)
    if token is not None:
        body["run_token"] = token
    response = jsonify(body)
    response.headers["Cache-Control"] = "no-store"
    return response


def cancel_reply(project: Project, run: Run) -> dict[str, Any]:
    """What the reply to a report says: go on, or stop and why."""
    if not run.cancel_requested:
        return {"cancel": False}
    if run.stop_reason is Reason.TIMEOUT:
        limit = project.config.model_training.max_wall_seconds or 0
        return {"cancel": True, "reason": Reason.TIMEOUT.value, "message": wall_limit_message(limit)}
    return {"cancel": True, "reason": Reason.CANCELLED.value, "message": "Cancelled by an admin."}


def left_mid_run_message(run: Run) -> str:
    return (f"The agent on {run.agent_host or 'an unknown host'} stopped without reporting how the run ended; its "
            "last output is in agent.log in the run's folder. Start the run again.")


def give_back(project: Project, store: RunStore, run: Run) -> None:
    """A job handed to an agent that said it stops, which it never took: back in the queue at once."""
    if store.requeue_unconfirmed(run.id):
        RunRecorder(project, store, run).log.write(
            f"The agent on {run.agent_host or 'an unknown host'} stopped as this job was handed to it; the run is "
            "back in the queue for the next agent that asks.")
