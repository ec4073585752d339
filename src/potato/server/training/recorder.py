"""What the server keeps of a run, whoever executed it: run.log, events, state, results (C4-C6).

The agent (on this machine or another) supervises the worker; the server only records what it
reports, through :class:`RunRecorder`. :func:`outcome` (what an ending means) is pure.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from potato.project import Project
from potato.server.training.bundle import BundleInfo, build_bundle, job_spec
from potato.server.training.runs import Reason, Run, RunState, RunStore
from potato.server.training.writeback import write_back
from potato.training.supervise import Stop

log = logging.getLogger(__name__)

Clock = Callable[[], float]


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
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    return max(0.0, min(1.0, step / total)) if total > 0 else None


def outcome(exit_code: int | None, result: dict[str, Any] | None, stop: Stop | None) -> tuple[RunState, str | None, str | None]:
    """Final (state, reason, message) from how the worker ended (pure)."""
    if stop is not None:
        state = RunState.CANCELLED if stop.reason is Reason.CANCELLED else RunState.FAILED
        return state, stop.reason.value, stop.message
    if exit_code == 0 and result and result.get("status") == "succeeded":
        return RunState.SUCCEEDED, None, None
    if result and result.get("status") in ("failed", "cancelled"):
        reason = result.get("reason") or Reason.ERROR.value
        return RunState.FAILED, str(reason)[:64], str(result.get("message") or "The worker failed; see run.log.")[:4000]
    if exit_code is None:
        return RunState.FAILED, Reason.ERROR.value, "The worker ended without writing exit_code; see run.log."
    if exit_code < 0 or exit_code == 137:
        return RunState.FAILED, Reason.ERROR.value, f"The worker was killed (exit {exit_code}); see run.log."
    return RunState.FAILED, Reason.ERROR.value, f"The worker exited with {exit_code} and no result; see run.log."


def _numbers(metrics: object) -> dict[str, float]:
    """The metrics a run keeps: named numbers only (a report from an agent is input like any other)."""
    if not isinstance(metrics, dict):
        return {}
    return {str(k)[:200]: v for k, v in metrics.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300}


def prepare_bundle(project: Project, store: RunStore, run: Run, runlog: RunLog) -> BundleInfo:
    """Write the run's bundle and record its sha256: what any backend ships to its worker."""
    mt = project.config.model_training
    job = job_spec(project.config, run.id, run.trainer, run.schemas, run.params, local=run.backend == "local")
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
               predictions: Path | None, artifacts: Path | None, hold_copying: bool = False) -> RunState:
        """End the run from how its worker ended; on success keep its outputs and write back.

        ``hold_copying``: the model files are still to be copied from the host (ssh); the run stays
        ``copying`` and whoever copies them ends it.
        """
        state, reason, message = outcome(exit_code, result, stop)
        metrics = _numbers((result or {}).get("metrics"))
        device = (result or {}).get("device")
        device = device[:200] if isinstance(device, str) else None
        if state is RunState.SUCCEEDED:
            if not self.store.move(self.run.id, RunState.COPYING, step="saving predictions and model files"):
                current = self.store.get(self.run.id)
                return current.state if current else RunState.FAILED  # ended meanwhile (cancel, timeout)
            try:
                metrics.update(self._keep(predictions, artifacts, metrics.get("holdout_accuracy")))
            except Exception as exc:  # a failed save fails this run, not the dispatcher
                log.exception("run %s: results could not be saved", self.run.id)
                state, reason, message = RunState.FAILED, Reason.ERROR.value, f"Saving the results failed: {exc}"
        if state is RunState.SUCCEEDED and hold_copying:
            self.store.update(self.run.id, metrics=metrics, device=device, step="copying the model files")
            self.log.write("Predictions saved; copying the model files.")
            return RunState.COPYING
        step = {RunState.SUCCEEDED: "done", RunState.CANCELLED: "cancelled"}.get(state, "failed")
        self.log.write(f"Run {state.value}" + (f" ({reason}): {message}" if message else "."))
        self.store.move(self.run.id, state, reason=reason, message=message, step=step, metrics=metrics,
                        device=device, progress=1.0 if state is RunState.SUCCEEDED else None)
        return state

    def fail(self, reason: Reason, message: str) -> bool:
        """End the run as failed (or cancelled, for a cancel); False if it had already ended."""
        state = RunState.CANCELLED if reason is Reason.CANCELLED else RunState.FAILED
        moved = self.store.move(self.run.id, state, reason=reason.value, message=message, step=state.value)
        if moved:
            self.log.write(f"Run {state.value} ({reason.value}): {message}")
        return moved

    def agent_log(self, lines: list[str]) -> None:
        """``agent.log``: the agent's own lines, so a silent agent's last words are kept (R23)."""
        if lines:
            with (self.run_dir / "agent.log").open("a", encoding="utf-8") as fh:
                for line in lines:
                    fh.write(str(line).replace("\n", " ") + "\n")

    def _keep(self, predictions: Path | None, artifacts: Path | None, score: float | None) -> dict[str, float]:
        """Move the outputs into the run folder and write back; the writeback's counts, for the page
        ("0 suggestions written: all below min_confidence 0.6" instead of a silent green run)."""
        kept = self.run_dir / "predictions.jsonl"
        if predictions is not None and predictions.exists() and predictions != kept:
            predictions.replace(kept)
        if artifacts is not None and artifacts.exists():
            target = self.run_dir / "artifacts"
            if target.exists():
                shutil.rmtree(target)
            artifacts.replace(target)
            self.store.update(self.run.id, artifact_uri=str(target))
        if not kept.exists():
            return {}
        stats = write_back(self.project, self.run, kept, score)
        self.log.write(f"Writeback: {stats.written} suggestions for {', '.join(stats.schemas) or 'no schema'} "
                       f"({stats.below_confidence} below min_confidence, {stats.skipped_unlabelled} unlabelled skipped"
                       f", {stats.invalid} invalid)")
        if not stats.schemas:
            return {}
        return {"suggestions/written": stats.written, "suggestions/below_confidence": stats.below_confidence,
                "suggestions/unlabelled_skipped": stats.skipped_unlabelled, "suggestions/invalid": stats.invalid}
