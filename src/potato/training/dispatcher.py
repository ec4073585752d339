"""The one dispatcher per server that executes runs, one at a time, in queue order (R4).

Every gunicorn worker starts a dispatcher thread, but only the one holding the file lock
``training/dispatcher.lock`` executes runs; the others keep trying, so when the holder dies
another worker takes over. Any worker serves the API: the queue is the runs table.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from typing import IO

from potato.project import Project
from potato.training.backends.local import kill_orphan
from potato.training.execute import SERVER_STOPPED, LocalRunner, RunLog
from potato.training.runs import ACTIVE, Reason, RunState, RunStore

log = logging.getLogger(__name__)

IDLE_POLL_S = 0.1
"""How often the dispatcher looks for a queued run: one indexed SELECT, cheap, and the main part
of a run's start latency (bench/run_overhead.py)."""
LOCK_RETRY_S = 5.0


def recover_after_restart(store: RunStore, local_backends: set) -> int:
    """Mark runs that were executing locally when the server died as failed (``server_restart``).

    Queued runs stay queued. A worker the dead server left running is killed first, so a new
    run never shares the machine with a ghost.
    """
    count = 0
    for run in store.in_states(sorted(ACTIVE)):
        if run.backend not in local_backends:
            continue
        job_dir = store.run_dir(run.id) / "job"
        killed = kill_orphan(job_dir)
        message = SERVER_STOPPED
        if killed:
            message += " Its leftover worker process was stopped."
        RunLog(store.run_dir(run.id) / "run.log").write(f"Run failed (server_restart): {message}")
        if store.move(run.id, RunState.FAILED, reason=Reason.SERVER_RESTART.value, message=message, step="failed"):
            count += 1
    return count


class Dispatcher:
    def __init__(self, project: Project, store: RunStore) -> None:
        self.project = project
        self.store = store
        self.lock_path = project.config.training_dir / "dispatcher.lock"
        self._lock_fh: IO[str] | None = None
        self._thread: threading.Thread | None = None
        self._pid: int | None = None
        self._stop = threading.Event()
        self.runner = LocalRunner(project, store)

    def ensure_started(self) -> None:
        """Start the thread in this process (idempotent; safe after a fork)."""
        if self._pid == os.getpid() and self._thread is not None and self._thread.is_alive():
            return
        self._pid = os.getpid()
        self._lock_fh = None  # a lock inherited over fork is not ours
        self._stop.clear()
        self.runner.shutting_down = False
        self._thread = threading.Thread(target=self._loop, name="potato-dispatcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread; a worker still executing is killed with it rather than left running
        unsupervised while the server is down (the next start records the run as server_restart)."""
        self._stop.set()
        self.runner.shutting_down = True
        execution = self.runner.current
        if execution is not None:
            execution.kill()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    def _try_lock(self) -> bool:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fh = self.lock_path.open("a+")
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
                log.info("dispatcher: this process (%s) executes training runs", os.getpid())
                recover_after_restart(self.store, {"local"})
            try:
                ran = self.run_next()
            except Exception:  # the dispatcher must outlive any one broken run; the traceback is logged
                log.exception("dispatcher: a run failed in an unexpected way")
                ran = False
            if not ran:
                self._stop.wait(IDLE_POLL_S)

    def run_next(self) -> bool:
        """Execute the oldest queued run this server can execute; False when there is none."""
        queued = self.store.in_states([RunState.QUEUED])
        if not queued:
            return False
        if self.store.in_states(sorted(ACTIVE)):
            return False  # R4: another run (e.g. on an agent) is executing
        run = queued[0]
        backends = self.project.config.model_training.all_backends()
        backend = backends.get(run.backend)
        if backend is None or backend.type != "local":
            message = (f"Backend '{run.backend}' cannot execute runs on this server "
                       f"(type {getattr(backend, 'type', 'unknown')}); start the run on 'local'.")
            self.store.move(run.id, RunState.FAILED, reason=Reason.ERROR.value, message=message, step="failed")
            return True
        try:
            self.runner.execute(run)
        except Exception as exc:  # an active run left behind would block the queue (R4): end it
            log.exception("dispatcher: run %s stopped on an internal error", run.id)
            self.store.move(run.id, RunState.FAILED, reason=Reason.ERROR.value, step="failed",
                            message=f"The run stopped on an internal error ({exc}); see the server log.")
        return True
