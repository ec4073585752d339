"""``jobs/next``'s long poll: an agent's request waits here, up to its ``wait_s``, for a queued run of
its backend, and is handed the job the moment one is claimed for it.

Long polls hold a gunicorn thread, so each process lets only a few of them wait at once (the
``potato.long_polls`` semaphore, ``POTATO_LONG_POLL_SLOTS``, set up by :func:`routes.init_app`); the
rest get 204 at once with a ``Retry-After`` that spreads them out. That keeps annotators' requests
served however many idle agents there are (bench/agents.py, which also measures
:data:`LONG_POLL_CHECK_S`). Apart from :mod:`routes`, which checks the request and its token first.
"""

from __future__ import annotations

import random
import threading
import time

from flask import Response, current_app

from potato.server.serving import stopping
from potato.server.context import Project
from potato.server.training.agent_protocol.replies import give_back, job_reply
from potato.server.training.runs.handover import claim_for_agent
from potato.server.training.runs.store import RunStore
from potato.server.training.runs.tokens import BackendTokens
from potato.training.agent.protocol import RETRY_AFTER_S

LONG_POLL_CHECK_S = 0.25
"""How often a waiting long poll looks for a queued run (one indexed read)."""


def wait_for_job(project: Project, store: RunStore, tokens: BackendTokens, backend: str, agent_id: str,
                 host: str, wait: float) -> Response:
    """The answer to ``jobs/next`` from ``agent_id`` on ``host``: its job, or 204 after up to ``wait``
    seconds (at once when no slot is free, with a ``Retry-After``; and when its agent has left)."""
    slots: threading.BoundedSemaphore = current_app.extensions["potato.long_polls"]
    holding = wait > 0 and slots.acquire(blocking=False)
    if wait > 0 and not holding:
        return Response(status=204, headers={"Retry-After": str(random.randint(*RETRY_AFTER_S))})
    try:
        deadline = time.monotonic() + wait
        while True:
            if tokens.has_left(backend, agent_id):  # its agent stopped while this poll was open
                return Response(status=204)
            claimed = claim_for_agent(project, store, backend, agent_id, host)
            if claimed is not None:
                if tokens.has_left(backend, agent_id):  # it stopped as the job was handed over
                    give_back(project, store, claimed[0])
                    return Response(status=204)
                return job_reply(project, store, *claimed)
            if time.monotonic() >= deadline or stopping.requested.is_set():
                return Response(status=204)
            time.sleep(min(LONG_POLL_CHECK_S, max(0.0, deadline - time.monotonic())))
    finally:
        if holding:
            slots.release()
        tokens.seen(backend, None)
