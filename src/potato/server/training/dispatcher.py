"""The one dispatcher per server: starts local runs and keeps watch over every run.

Every gunicorn worker starts a dispatcher thread, but only the one holding the file lock
``training/dispatcher.lock`` acts; the others keep trying, so when the holder dies another
worker takes over. Any worker serves the API and the agent protocol: the queue is the runs table.

The holder (1) starts the oldest queued run of each backend it drives (local, ssh, slurm) when
that backend is free, as soon as a request queues it (:mod:`~potato.server.training.runs.wakeup`)
or at its next look, and once a second (2) applies :func:`potato.server.training.runs.watchdog.judge` to every
queued and active run: heartbeat and queue timeouts, the end of a cancel's grace, max_wall_seconds.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from typing import IO

from potato.db import disk_full
from potato.project import Project
from potato.server.training.backends import Backend, Launch, Session, backends_of
from potato.server.training.backends import AgentTimeouts
from potato.server.training.runs.handover import issue_run
from potato.training.job.private import open_private, private_dir
from potato.server.training.runs.recorder import RunRecorder
from potato.server.training.runs.store import ACTIVE, Reason, Run, RunState, RunStore
from potato.server.training.runs.wakeup import Wakeup
from potato.server.training.runs.watchdog import Action, RunLimits, judge

log = logging.getLogger(__name__)

IDLE_POLL_S = 0.1
"""How often the dispatcher looks for a queued run when no request rang (a run queued by a request
rings; one indexed SELECT, cheap)."""
WATCH_EVERY_S = 1.0
"""How often every run's timeouts are checked (each second)."""
LOCK_RETRY_S = 5.0


def limits_for(project: Project, backend: Backend | None) -> RunLimits:
    """The watchdog's limits for a run: its backend's heartbeat and queue timeouts (the defaults for a
    backend no longer in the config), the project's grace and wall time."""
    mt = project.config.model_training
    own = backend.agent_timeouts() if backend is not None else AgentTimeouts()
    return RunLimits(own.heartbeat_s, own.queue_s, mt.grace_seconds, mt.max_wall_seconds)


def failure_pause(failures: int) -> float:
    """Seconds before the next round after ``failures`` failed ones in a row: 0.2, 0.4, ... 30."""
    return min(30.0, IDLE_POLL_S * 2 ** min(failures, 10))


class Dispatcher:
    def __init__(self, project: Project, store: RunStore, agent_url: str | None) -> None:
        self.project = project
        self.store = store
        self.agent_url = agent_url
        """How a local agent reaches this server (set by ``potato start``)."""
        self.lock_path = project.config.training_dir / "dispatcher.lock"
        self._lock_fh: IO[str] | None = None
        self._thread: threading.Thread | None = None
        self._pid: int | None = None
        self._stop = threading.Event()
        self._sessions: dict[str, tuple[Backend, Session]] = {}
        """The runs this process started or adopted, with their backend."""
        self._last_watch = 0.0
        self._watching_since: float | None = None
        """When this process took the lock and began watching: no agent could reach a server that was
        down, so a run's silence counts from here at the earliest (watchdog.silent_since)."""
        self._failures = 0
        """Failed rounds in a row: the pause grows with them (:func:`failure_pause`)."""
        self._wakeup = Wakeup.of(project.config.training_dir)

    def ensure_started(self) -> None:
        """Start the thread in this process (idempotent; safe after a fork)."""
        if self._pid == os.getpid() and self._thread is not None and self._thread.is_alive():
            return
        self._pid = os.getpid()
        self._lock_fh = None  # a lock inherited over fork is not ours
        self._wakeup = Wakeup(self._wakeup.path)  # nor is the doorbell
        self._sessions = {}  # a forked child runs none of its parent's sessions
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="potato-dispatcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread. Local agents go on: a restarted server takes their reports again."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None
        self._wakeup.close()

    def _try_lock(self) -> bool:
        private_dir(self.lock_path.parent)
        fh = open_private(self.lock_path, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            return False
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._lock_fh = fh
        return True

    def _loop(self) -> None:
        while not self._stop.is_set():
            if self._lock_fh is None:
                if not self._try_lock():
                    self._stop.wait(LOCK_RETRY_S)
                    continue
                log.info("dispatcher: this process (%s) starts and watches training runs", os.getpid())
                self._watching_since = time.time()
                self._wakeup.listen()
                self.adopt_runs()
            try:
                if time.monotonic() - self._last_watch >= WATCH_EVERY_S:
                    self._last_watch = time.monotonic()
                    self._wakeup.heal()
                    self.watch()
                started = self.run_next()
            except Exception as exc:  # the dispatcher must outlive any one broken run or a full disk
                self._failures += 1
                if self._failures == 1:  # once per streak, not every 0.1 s (a full disk made 30 KB/s of log)
                    if disk_full(exc):
                        log.error("dispatcher: the disk is full (%s); runs wait until there is space", exc)
                    else:
                        log.exception("dispatcher: a run failed in an unexpected way")
                self._wakeup.wait(failure_pause(self._failures))
                continue
            if self._failures:
                log.info("dispatcher: working again after %d failed attempt(s)", self._failures)
                self._failures = 0
            if not started:
                self._wakeup.wait(IDLE_POLL_S)

    def run_next(self) -> bool:
        """Start a queued run on a backend this server drives (local, ssh, slurm); False when there is none.

        Agent backends are not started here: their agents claim runs themselves (``jobs/next``).
        """
        for name, backend in backends_of(self.project.config).items():
            if backend.claimed_by_agents:
                continue
            if backend.one_session_at_a_time and any(
                    b.one_session_at_a_time and session.alive() for b, session in self._sessions.values()):
                continue  # the last run's clean-up still uses (and then ends) the shared control master
            agent_id, host = backend.claimer()
            run = self.store.claim(name, agent_id, host)
            if run is not None:
                self.start(backend, run)
                return True
        return False

    def _launch(self) -> Launch | None:
        return Launch(self.project, self.store, self.agent_url) if self.agent_url is not None else None

    def start(self, backend: Backend, run: Run) -> None:
        """Build the claimed run's bundle and token, and let its backend start it."""
        recorder = RunRecorder(self.project, self.store, run)
        launch = self._launch()
        if launch is None:
            recorder.fail(Reason.ERROR, backend.no_address())
            return
        try:
            run, token = issue_run(self.project, self.store, run, backend.first_step(),
                                   f"Run {run.id}: trainer {run.trainer}, schemas {', '.join(run.schemas)}, "
                                   f"backend {backend.describe()}", local=backend.on_this_machine)
            session = backend.start(launch, run, token)
        except Exception as exc:  # any failure to start ends this run, not the dispatcher
            log.exception("run %s could not start", run.id)
            recorder.fail(Reason.ERROR, f"The run could not start: {exc}")
            return
        self._sessions[run.id] = (backend, session)

    def adopt_runs(self) -> None:
        """After a restart: take over runs whose session outlived the old server; a run whose
        session is gone cannot report any more, so it fails now rather than after the heartbeat."""
        backends = backends_of(self.project.config)
        launch = Launch(self.project, self.store, self.agent_url or "")
        for run in self.store.in_states(sorted(ACTIVE)):
            backend = backends.get(run.backend)
            if backend is None or not backend.adopts_runs or run.id in self._sessions:
                continue
            session = backend.adopt(launch, run)
            if session is None:
                RunRecorder(self.project, self.store, run).fail(Reason.SERVER_RESTART, backend.adopt_lost(run))
                continue
            self._sessions[run.id] = (backend, session)

    def _session(self, run: Run) -> Session | None:
        held = self._sessions.get(run.id)
        return held[1] if held is not None else None

    def watch(self, now: float | None = None) -> None:
        """Apply the watchdog's verdicts to every queued and active run."""
        now = time.time() if now is None else now
        backends = backends_of(self.project.config)
        for run in self.store.in_states([RunState.QUEUED, *sorted(ACTIVE)]):
            backend = backends.get(run.backend)
            if backend is None and run.state is RunState.QUEUED:
                RunRecorder(self.project, self.store, run).fail(
                    Reason.ERROR, f"Backend '{run.backend}' is no longer in the config; start the run again on "
                                  f"one of: {', '.join(backends)}.")
                continue
            alive = backend.agent_alive(run, self._session(run)) if backend is not None else None
            verdict = judge(run, now, limits_for(self.project, backend), alive, self._watching_since)
            if verdict is None:
                continue
            if verdict.action is Action.REQUEUE:
                if self.store.requeue_unconfirmed(run.id):
                    RunRecorder(self.project, self.store, run).log.write(verdict.message)
            elif verdict.action is Action.STOP:
                RunRecorder(self.project, self.store, run).log.write(
                    f"The run passed max_wall_seconds ({self.project.config.model_training.max_wall_seconds} s); "
                    "telling its agent to stop the worker.")
                self.store.request_cancel(run.id, Reason.TIMEOUT)
            else:
                ended = RunRecorder(self.project, self.store, run).fail(verdict.reason, verdict.message)
                if ended and verdict.reason is Reason.AGENT_LOST and backend is not None:
                    backend.end_silent_agent(self.project, self.store, run, self._session(run))
        for run_id, (_, session) in list(self._sessions.items()):
            if not session.alive():  # also reaps a local agent that ended
                del self._sessions[run_id]
