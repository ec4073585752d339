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
from potato.training.bundle import build_bundle, job_spec
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


class LocalRunner:
    """Executes one run on the local backend, reporting into the run store and run folder."""

    def __init__(self, project: Project, store: RunStore, clock: Clock = time.time, sleep: Callable[[float], None] = time.sleep) -> None:
        self.project = project
        self.store = store
        self.clock = clock
        self.sleep = sleep

    def execute(self, run: Run) -> RunState:
        run_dir = self.store.run_dir(run.id)
        run_dir.mkdir(parents=True, exist_ok=True)
        runlog = RunLog(run_dir / "run.log", self.clock)
        if not self.store.move(run.id, RunState.PREPARING, step="building the bundle"):
            return self.store.get(run.id).state  # type: ignore[union-attr]  # cancelled meanwhile
        mt = self.project.config.model_training
        try:
            job = job_spec(self.project.config, run.id, run.trainer, run.schemas, run.params)
            labels = list(self.project.labels.iter_labels())
            info = build_bundle(run_dir / "bundle.tar.gz", job, self.project.items, labels, mt.holdout_fraction)
            runlog.write(
                f"Run {run.id}: trainer {run.trainer}, schemas {', '.join(run.schemas)}, backend local (this machine)"
            )
            runlog.write(f"Bundle: {info.n_items} items, {info.n_labels} labels, {info.n_holdout} holdout items, "
                         f"sha256 {info.sha256}")
            self.store.update(run.id, bundle_sha256=info.sha256)
            execution = LocalExecution.start(info.path, run_dir / "job", mt.local.num_threads)
        except Exception as exc:
            log.exception("run %s could not start", run.id)
            runlog.write(f"error: the run could not start: {exc}")
            self.store.move(run.id, RunState.FAILED, reason=Reason.ERROR.value,
                            message=f"The run could not start: {exc}", step="failed")
            return RunState.FAILED
        if not self.store.move(run.id, RunState.RUNNING, step="starting the worker"):
            execution.terminate()
        return self._supervise(run, execution, runlog, run_dir)

    def _supervise(self, run: Run, execution: LocalExecution, runlog: RunLog, run_dir: Path) -> RunState:
        mt = self.project.config.model_training
        events_out = (run_dir / "events.jsonl").open("a", encoding="utf-8")
        stop: Stop | None = None
        try:
            while True:
                self._forward(run, execution.events(), runlog, events_out)
                code = execution.poll()
                if code is not None:
                    self._forward(run, execution.events(), runlog, events_out)
                    break
                now = self.clock()
                current = self.store.get(run.id) or run
                if stop is None:
                    stop = check_limits(current, now, mt.max_wall_seconds, mt.grace_seconds, current.cancel_requested)
                    if stop is not None:
                        runlog.write(f"{stop.message} Sending SIGTERM; SIGKILL in {mt.grace_seconds} s if it does not stop.")
                        self.store.update(run.id, step="stopping the worker")
                        execution.terminate()
                elif now >= stop.kill_at:
                    runlog.write("The worker did not stop after SIGTERM; sending SIGKILL.")
                    execution.kill()
                self.sleep(POLL_S)
        finally:
            events_out.close()
        return self._finish(run, execution, runlog, run_dir, code, stop)

    def _forward(self, run: Run, events: list[dict[str, Any]], runlog: RunLog, events_out: Any) -> None:
        if not events:
            return
        fields: dict[str, Any] = {}
        for event in events:
            events_out.write(json.dumps(event) + "\n")
            line = event_line(event)
            if line:
                runlog.write(line)
            if event.get("type") == "step":
                fields["step"] = str(event.get("text", ""))
            elif event.get("type") == "progress":
                frac = progress_fraction(event)
                if frac is not None:
                    fields["progress"] = frac
            elif event.get("type") == "device":
                fields["device"] = str(event.get("device"))
        events_out.flush()
        if fields:
            self.store.update(run.id, **fields)

    def _finish(self, run: Run, execution: LocalExecution, runlog: RunLog, run_dir: Path, code: int | None,
                stop: Stop | None) -> RunState:
        job_dir = execution.job_dir
        result = read_json(job_dir / "result.json")
        exit_code = read_exit_code(job_dir)
        state, reason, message = outcome(code if exit_code is None else exit_code, result, stop)
        metrics = (result or {}).get("metrics") or {}
        device = (result or {}).get("device")
        if state is RunState.SUCCEEDED:
            self.store.move(run.id, RunState.COPYING, step="saving predictions and model files")
            try:
                self._collect(run, job_dir, run_dir, runlog, metrics)
            except Exception as exc:
                log.exception("run %s: results could not be saved", run.id)
                state, reason, message = RunState.FAILED, Reason.ERROR.value, f"Saving the results failed: {exc}"
        shutil.rmtree(job_dir / "bundle", ignore_errors=True)
        step = {RunState.SUCCEEDED: "done", RunState.CANCELLED: "cancelled"}.get(state, "failed")
        runlog.write(f"Run {state.value}" + (f" ({reason}): {message}" if message else "."))
        self.store.move(run.id, state, reason=reason, message=message, step=step, metrics=metrics,
                        device=device, progress=1.0 if state is RunState.SUCCEEDED else None)
        return state

    def _collect(self, run: Run, job_dir: Path, run_dir: Path, runlog: RunLog, metrics: dict[str, Any]) -> None:
        predictions = job_dir / "predictions.jsonl"
        if predictions.exists():
            predictions.replace(run_dir / "predictions.jsonl")
        artifacts = job_dir / "artifacts"
        if artifacts.exists():
            if (run_dir / "artifacts").exists():
                shutil.rmtree(run_dir / "artifacts")
            artifacts.replace(run_dir / "artifacts")
            self.store.update(run.id, artifact_uri=str(run_dir / "artifacts"))
        if (run_dir / "predictions.jsonl").exists():
            score = metrics.get("holdout_accuracy")
            stats = write_back(self.project, run, run_dir / "predictions.jsonl", score)
            runlog.write(f"Writeback: {stats.written} suggestions for {', '.join(stats.schemas) or 'no schema'} "
                         f"({stats.below_confidence} below min_confidence, {stats.skipped_unlabelled} unlabelled skipped)")
