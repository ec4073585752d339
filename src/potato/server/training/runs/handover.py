"""Handing a claimed run to whoever executes it: its bundle, its token, the job its agent reads.

The same for every backend: the dispatcher hands a run to the local agent or an ssh session, an
agent backend's agent takes it from ``jobs/next``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from potato.project import Project
from potato.server.training.runs import quota
from potato.server.training.runs.recorder import RunLog, RunRecorder, prepare_bundle
from potato.server.training.runs.store import Run, RunState, RunStore
from potato.server.training.runs.tokens import new_token, token_hash
from potato.training.job.results import Reason

log = logging.getLogger(__name__)


def issue_run(project: Project, store: RunStore, run: Run, step: str, first_line: str,
              local: bool = False) -> tuple[Run, str]:
    """Build a claimed run's bundle and make its token; the run is then ``running`` for its agent.

    The token goes back to the caller for the one hand-over (a reply, or the local agent's
    stdin); only its hash is stored. ``local``: the worker runs on this machine (its job says so).
    """
    runlog = RunLog(store.run_dir(run.id) / "run.log")
    runlog.write(first_line)
    prepare_bundle(project, store, run, runlog, local)
    token = new_token()
    store.update(run.id, token_hash=token_hash(token))
    store.move(run.id, RunState.RUNNING, step=step)
    return store.get(run.id) or run, token


def job_description(project: Project, store: RunStore, run: Run, local: bool) -> dict[str, Any]:
    """The job as an agent receives it (``jobs/next``, ``runs/<id>/job``); ``local``: the worker runs
    on this machine, with the local backend's threads."""
    mt = project.config.model_training
    bundle = store.run_dir(run.id) / "bundle.tar.gz"
    return {
        "run_id": run.id,
        "trainer": run.trainer,
        "schemas": run.schemas,
        "params": run.params,
        "grace_seconds": mt.grace_seconds,
        "max_wall_seconds": mt.max_wall_seconds,
        "num_threads": mt.local.num_threads if local else None,
        "bundle": {"size": bundle.stat().st_size if bundle.exists() else 0, "sha256": run.bundle_sha256},
    }


def claim_for_agent(project: Project, store: RunStore, backend: str, agent_id: str, host: str) -> tuple[Run, str] | None:
    """``jobs/next``: the oldest queued run of ``backend``, claimed for the agent that asked and handed
    over (its bundle built, its token made), or None. A run that cannot be handed over fails; the
    agent's poll goes on."""
    run = store.claim(backend, agent_id, host)
    if run is None:
        return None
    try:
        issued = issue_run(project, store, run, f"sending the bundle to {host}",
                           f"Run {run.id}: trainer {run.trainer}, schemas {', '.join(run.schemas)}, "
                           f"backend {backend} (agent on {host})")
        store.issued(run.id, time.time())  # the agent's first use of the run token confirms it has the job
        return issued
    except quota.DiskReserve as exc:
        RunRecorder(project, store, run).fail(Reason.ERROR, str(exc))
        return None
    except Exception as exc:  # a bundle that cannot be built fails this run, not the agent's poll
        log.exception("run %s: the bundle could not be built", run.id)
        RunRecorder(project, store, run).fail(Reason.ERROR, f"The run could not start: {exc}")
        return None
