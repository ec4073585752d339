"""One run from queued to its end: bundle, worker, supervision, results (C4-C6, R3, R22).

The decisions (is the wall limit passed, is it time for SIGKILL, what does an exit mean) are
pure functions of the clock and the worker's files; :func:`execute_local` only applies them.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from potato.project import Project
from potato.training.backends.local import LocalExecution
from potato.training.bundle import BundleInfo, build_bundle, job_spec
from potato.training.jobfiles import read_exit_code, read_json
from potato.training.runs import Reason, Run, RunState, RunStore
from potato.training.writeback import write_back

log = logging.getLogger(__name__)

Clock = Callable[[], float]
POLL_S = 0.2


class RunLog:
    """``run.log``: the human-readable story of a run, one timestamped line per event."""

    def __init__(self, path: Path, clock: Clock = time.time) -> None:
        self.path = path
        self.clock = clock

    def write(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.clock()))
        with self.path.open("a", encoding="utf-8") as fh:
            for line in text.splitlines() or [""]:
                fh.write(f"{stamp} {line}\n")


def event_line(event: dict[str, Any]) -> str | None:
    """The run.log line for a worker event; progress is charted, not logged."""
    kind = event.get("type")
    if kind == "step":
        return f"step: {event.get('text', '')}"
    if kind == "log":
        return str(event.get("text", ""))
    if kind == "warning":
        return f"warning: {event.get('text', '')}"
    if kind == "metric":
        return f"metric {event.get('name')}: {event.get('value')}"
    return None


def progress_fraction(event: dict[str, Any]) -> float | None:
    try:
        step, total = float(event["step"]), float(event["total"])
    except (KeyError, TypeError, ValueError):
        return None
    return max(0.0, min(1.0, step / total)) if total > 0 else None


@dataclass
class Stop:
    """Why supervision is stopping the worker, and when the cold stop is due."""

    reason: Reason
    message: str
    kill_at: float


def check_limits(run: Run, now: float, max_wall_seconds: int | None, grace_seconds: int,
                 cancel_requested: bool) -> Stop | None:
    """A Stop when the run must end now: cancelled by the admin, or past max_wall_seconds (R3)."""
    if cancel_requested:
        return Stop(Reason.CANCELLED, "Cancelled by an admin.", now + grace_seconds)
    if max_wall_seconds and run.started_at is not None and now - run.started_at > max_wall_seconds:
        return Stop(
            Reason.TIMEOUT,
            f"The run passed max_wall_seconds ({max_wall_seconds} s) and was stopped; "
            "raise model_training.max_wall_seconds or train on fewer items.",
            now + grace_seconds,
        )
    return None


def outcome(exit_code: int | None, result: dict[str, Any] | None, stop: Stop | None) -> tuple[RunState, str | None, str | None]:
    """Final (state, reason, message) from how the worker ended (pure)."""
    if stop is not None:
        state = RunState.CANCELLED if stop.reason is Reason.CANCELLED else RunState.FAILED
        return state, stop.reason.value, stop.message
    if exit_code == 0 and result and result.get("status") == "succeeded":
        return RunState.SUCCEEDED, None, None
    if result and result.get("status") in ("failed", "cancelled"):
        reason = result.get("reason") or Reason.ERROR.value
        return RunState.FAILED, str(reason), str(result.get("message") or "The worker failed; see run.log.")
    if exit_code is None:
        return RunState.FAILED, Reason.ERROR.value, "The worker ended without writing exit_code; see run.log."
    if exit_code < 0 or exit_code == 137:
        return RunState.FAILED, Reason.ERROR.value, f"The worker was killed (exit {exit_code}); see run.log."
    return RunState.FAILED, Reason.ERROR.value, f"The worker exited with {exit_code} and no result; see run.log."


def prepare_bundle(project: Project, store: RunStore, run: Run, runlog: RunLog) -> BundleInfo:
    """Write the run's bundle and record its sha256: what any backend ships to its worker."""
    mt = project.config.model_training
    job = job_spec(project.config, run.id, run.trainer, run.schemas, run.params)
    info = build_bundle(store.run_dir(run.id) / "bundle.tar.gz", job, project.items,
                        list(project.labels.iter_labels()), mt.holdout_fraction)
    runlog.write(f"Bundle: {info.n_items} items, {info.n_labels} labels, {info.n_holdout} holdout items, "
                 f"sha256 {info.sha256}")
    store.update(run.id, bundle_sha256=info.sha256)
    return info


class RunRecorder:
    """Turns what a worker reports into the run's record: events.jsonl, run.log, step, progress,
    and at the end its state, metrics, predictions, model files and writeback.

    Backend-neutral on purpose: the local runner feeds it from the job dir; a remote backend will
    feed it from the agent protocol's events, predictions and result calls.
    """

    def __init__(self, project: Project, store: RunStore, run: Run, clock: Clock = time.time) -> None:
        self.project = project
        self.store = store
        self.run = run
        self.run_dir = store.run_dir(run.id)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log = RunLog(self.run_dir / "run.log", clock)

    def events(self, events: list[dict[str, Any]]) -> None:
        """Append a batch of worker events and update the run's step line and progress."""
        if not events:
            return
        fields: dict[str, Any] = {}
        with (self.run_dir / "events.jsonl").open("a", encoding="utf-8") as out:
            for event in events:
                out.write(json.dumps(event) + "\n")
                line = event_line(event)
                if line:
                    self.log.write(line)
                if event.get("type") == "step":
                    fields["step"] = str(event.get("text", ""))
                elif event.get("type") == "progress":
                    frac = progress_fraction(event)
                    if frac is not None:
                        fields["progress"] = frac
        if fields:
            self.store.update(self.run.id, **fields)

    def finish(self, exit_code: int | None, result: dict[str, Any] | None, stop: Stop | None,
               predictions: Path | None, artifacts: Path | None) -> RunState:
        """End the run from how its worker ended; on success keep its outputs and write back."""
        state, reason, message = outcome(exit_code, result, stop)
        metrics = (result or {}).get("metrics") or {}
        if state is RunState.SUCCEEDED:
            self.store.move(self.run.id, RunState.COPYING, step="saving predictions and model files")
            try:
                self._keep(predictions, artifacts, metrics.get("holdout_accuracy"))
            except Exception as exc:  # a failed save fails this run, not the dispatcher
                log.exception("run %s: results could not be saved", self.run.id)
                state, reason, message = RunState.FAILED, Reason.ERROR.value, f"Saving the results failed: {exc}"
        step = {RunState.SUCCEEDED: "done", RunState.CANCELLED: "cancelled"}.get(state, "failed")
        self.log.write(f"Run {state.value}" + (f" ({reason}): {message}" if message else "."))
        self.store.move(self.run.id, state, reason=reason, message=message, step=step, metrics=metrics,
                        device=(result or {}).get("device"), progress=1.0 if state is RunState.SUCCEEDED else None)
        return state

    def fail(self, reason: Reason, message: str) -> None:
        self.log.write(f"Run failed ({reason.value}): {message}")
        self.store.move(self.run.id, RunState.FAILED, reason=reason.value, message=message, step="failed")

    def _keep(self, predictions: Path | None, artifacts: Path | None, score: float | None) -> None:
        kept = self.run_dir / "predictions.jsonl"
        if predictions is not None and predictions.exists() and predictions != kept:
            predictions.replace(kept)
        if artifacts is not None and artifacts.exists():
            target = self.run_dir / "artifacts"
            if target.exists():
                shutil.rmtree(target)
            artifacts.replace(target)
            self.store.update(self.run.id, artifact_uri=str(target))
        if kept.exists():
            stats = write_back(self.project, self.run, kept, score)
            self.log.write(f"Writeback: {stats.written} suggestions for {', '.join(stats.schemas) or 'no schema'} "
                           f"({stats.below_confidence} below min_confidence, {stats.skipped_unlabelled} unlabelled skipped)")


SERVER_STOPPED = "The server stopped while this run was executing; start the run again."


class LocalRunner:
    """Executes one run on the local backend: the worker as a subprocess, supervised here."""

    def __init__(self, project: Project, store: RunStore, clock: Clock = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.project = project
        self.store = store
        self.clock = clock
        self.sleep = sleep
        self.current: LocalExecution | None = None
        """The worker executing now, so a shutting-down server can stop it (see Dispatcher.stop)."""
        self.shutting_down = False

    def execute(self, run: Run) -> RunState:
        if not self.store.move(run.id, RunState.PREPARING, step="building the bundle"):
            current = self.store.get(run.id)
            return current.state if current else RunState.CANCELLED  # cancelled while queued
        recorder = RunRecorder(self.project, self.store, run, self.clock)
        recorder.log.write(f"Run {run.id}: trainer {run.trainer}, schemas {', '.join(run.schemas)}, "
                           "backend local (this machine)")
        try:
            info = prepare_bundle(self.project, self.store, run, recorder.log)
            execution = LocalExecution.start(info.path, recorder.run_dir / "job",
                                             self.project.config.model_training.local.num_threads)
        except Exception as exc:  # any failure to prepare ends this run, not the dispatcher
            log.exception("run %s could not start", run.id)
            recorder.fail(Reason.ERROR, f"The run could not start: {exc}")
            return RunState.FAILED
        self.current = execution
        if not self.store.move(run.id, RunState.RUNNING, step="starting the worker"):
            execution.terminate()
        try:
            code, stop = self._supervise(run, execution, recorder)
        finally:
            self.current = None
        job_dir = execution.job_dir
        exit_code = read_exit_code(job_dir)
        state = recorder.finish(code if exit_code is None else exit_code, read_json(job_dir / "result.json"), stop,
                                job_dir / "predictions.jsonl", job_dir / "artifacts")
        shutil.rmtree(job_dir / "bundle", ignore_errors=True)
        return state

    def _supervise(self, run: Run, execution: LocalExecution, recorder: RunRecorder) -> tuple[int, Stop | None]:
        """Forward events until the worker exits; stop it on cancel or max_wall_seconds (R3, R22)."""
        mt = self.project.config.model_training
        stop: Stop | None = None
        while True:
            recorder.events(execution.events())
            code = execution.poll()
            if code is not None:
                recorder.events(execution.events())
                if stop is None and self.shutting_down:
                    stop = Stop(Reason.SERVER_RESTART, SERVER_STOPPED, 0.0)
                return code, stop
            now = self.clock()
            current = self.store.get(run.id) or run
            if stop is None:
                stop = check_limits(current, now, mt.max_wall_seconds, mt.grace_seconds, current.cancel_requested)
                if stop is not None:
                    recorder.log.write(f"{stop.message} Sending SIGTERM; SIGKILL in {mt.grace_seconds} s "
                                       "if it does not stop.")
                    self.store.update(run.id, step="stopping the worker")
                    execution.terminate()
            elif now >= stop.kill_at:
                recorder.log.write("The worker did not stop after SIGTERM; sending SIGKILL.")
                execution.kill()
            self.sleep(POLL_S)
