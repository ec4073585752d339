"""What the server decides about runs it is not hearing from.

Pure: a function of one run, its backend's settings and the clock. The dispatcher applies the
verdicts once a second; the agent protocol's replies carry the stops to the agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from potato.server.training.runs.store import ACTIVE, Run, RunState
from potato.training.job.results import Reason

CANCEL_SLACK_S = 2.0
"""After a cancel's ``grace_seconds``, the agent's own report (with the worker's last words) gets
this long to arrive before the server ends the run without it."""
JOB_CONFIRM_S = 20.0
"""An agent that was sent a job must use the run's token (fetch the bundle, report) within this long,
or the job goes back to the queue: the reply may have gone to an agent that had just stopped, whose
long poll was still open."""


class Action(str, Enum):
    FAIL = "fail"
    """End the run now, with the verdict's reason and message."""
    STOP = "stop"
    """Ask the agent to stop the worker (the reply to its next report says so)."""
    REQUEUE = "requeue"
    """Put a job its agent never confirmed back in the queue, for the next agent that asks."""


@dataclass(frozen=True)
class Verdict:
    action: Action
    reason: Reason
    message: str


@dataclass(frozen=True)
class RunLimits:
    """One run's time limits, from its backend and ``model_training``."""

    heartbeat_timeout_s: float | None
    queue_timeout_s: float | None
    grace_seconds: float
    max_wall_seconds: float | None


def heartbeat_message(backend: str, seconds: float) -> str:
    return (f"No word from the agent on {backend} for {seconds:g} seconds. Its last output is in agent.log in "
            "the run's folder; check that the agent is still running on the training machine and can reach "
            "this server, then start the run again.")


def queue_timeout_message(backend: str, seconds: float) -> str:
    return (f"No agent asked for work on backend '{backend}' for {seconds:g} seconds, so the run never started. "
            f"Start one on the training machine: `potato training agent --server <this server's URL> --backend "
            f"{backend}` with the token from `potato training register {backend} config.yaml`.")


def unconfirmed_message(run: Run, seconds: float) -> str:
    return (f"The agent on {run.agent_host or 'an unknown host'} was sent this job but did not fetch it within "
            f"{seconds:g} s (it may have stopped just as the job was sent); the run is back in the queue for the "
            "next agent that asks.")


def silent_since(last_seen: float | None, watching_since: float | None) -> float | None:
    """From when a run's agent counts as silent: its last word, or the server's start (when this
    server's watch began) if that came later; None while no agent speaks for the run.

    A server that is down hears nobody, so its downtime is not the agent's silence: counting it
    failed runs whose agents were retrying all along through a restart (issue 42). After a start
    each running run gets a whole ``heartbeat_timeout_s`` for its agent to reach the server again.
    """
    if last_seen is None:
        return None
    return last_seen if watching_since is None else max(last_seen, watching_since)


def judge(run: Run, now: float, limits: RunLimits, agent_alive: bool | None = None,
          watching_since: float | None = None) -> Verdict | None:
    """The verdict on ``run`` now, or None to leave it be.

    ``agent_alive`` is known only for an agent process on this machine (the local backend): False
    means it ended without reporting how the run ended. ``watching_since`` is when this server
    started watching (:func:`silent_since`); None judges the silence from the agent's last word alone.
    """
    if run.state is RunState.QUEUED:
        if limits.queue_timeout_s and now - run.created_at > limits.queue_timeout_s:
            return Verdict(Action.FAIL, Reason.QUEUE_TIMEOUT, queue_timeout_message(run.backend, limits.queue_timeout_s))
        return None
    if run.state not in ACTIVE:
        return None
    if run.state is RunState.RUNNING and not run.confirmed and run.issued_at is not None and not run.cancel_requested:
        # Until its agent confirms the job, the hand-over decides, not the heartbeat.
        if now - run.issued_at > JOB_CONFIRM_S:
            return Verdict(Action.REQUEUE, Reason.AGENT_LOST, unconfirmed_message(run, JOB_CONFIRM_S))
        return None
    if run.cancel_requested and run.cancel_at is not None and now - run.cancel_at > limits.grace_seconds + CANCEL_SLACK_S:
        if run.stop_reason is Reason.TIMEOUT:
            return Verdict(Action.FAIL, Reason.TIMEOUT,
                           f"The run passed max_wall_seconds ({limits.max_wall_seconds:g} s) and its agent did not "
                           f"report within grace_seconds ({limits.grace_seconds:g} s) of being told to stop.")
        return Verdict(Action.FAIL, Reason.CANCELLED,
                       f"Cancelled by an admin; the agent had not reported the worker stopped after "
                       f"grace_seconds ({limits.grace_seconds:g} s).")
    if agent_alive is False:
        return Verdict(Action.FAIL, Reason.AGENT_LOST,
                       "The agent process for this run ended without reporting how the run ended; its last "
                       "output is in agent.log and agent.out in the run's folder.")
    silent = silent_since(run.last_seen, watching_since)
    if limits.heartbeat_timeout_s and silent is not None and now - silent > limits.heartbeat_timeout_s:
        return Verdict(Action.FAIL, Reason.AGENT_LOST, heartbeat_message(run.backend, limits.heartbeat_timeout_s))
    if (limits.max_wall_seconds and run.started_at is not None and not run.cancel_requested
            and now - run.started_at > limits.max_wall_seconds):
        return Verdict(Action.STOP, Reason.TIMEOUT, "past max_wall_seconds")
    return None
