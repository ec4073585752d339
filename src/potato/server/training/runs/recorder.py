"""What the server keeps of a run, whoever executed it: run.log, events, state, results.

The agent (on this machine or another) supervises the worker; the server only records what it
reports, through :class:`RunRecorder`. :func:`outcome` (what an ending means) is pure.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from potato.project import Project
from potato.server.training.runs import activelearning, quota
from potato.codebook import current_config
from potato.server.training.runs.bundle import BundleInfo, build_bundle, compared, job_spec
from potato.server.training.runs.stepitems import StepQuestions
from potato.server.training.runs.modelplace import ModelPlace
from potato.training.job.private import make_private, open_private, private_dir
from potato.server.training.runs.store import Reason, Run, RunState, RunStore
from potato.server.training.runs.writeback import kept_note, withdraw, write_back
from potato.training.launch.supervise import Stop, wall_limit_message

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class RunLog:
    """``run.log``: the human-readable story of a run, one timestamped line per event."""

    def __init__(self, path: Path, clock: Clock = time.time) -> None:
        self.path = path
        self.clock = clock

    def write(self, text: str) -> None:
        with open_private(self.path, "a", encoding="utf-8") as fh:
            fh.write(self.render(text))

    def render(self, text: str) -> str:
        """The lines ``write`` appends for ``text``, stamped with the clock's time."""
        stamp = time.strftime("%H:%M:%S", time.localtime(self.clock()))
        return "".join(f"{stamp} {line}\n" for line in text.splitlines() or [""])


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


def outcome(exit_code: int | None, result: dict[str, Any] | None, stop: Stop | None) -> tuple[RunState, Reason | None, str | None]:
    """Final (state, reason, message) from how the worker ended (pure)."""
    if stop is not None:
        state = RunState.CANCELLED if stop.reason is Reason.CANCELLED else RunState.FAILED
        return state, stop.reason, stop.message
    if exit_code == 0 and result and result.get("status") == "succeeded":
        return RunState.SUCCEEDED, None, None
    if result and result.get("status") in ("failed", "cancelled"):
        return RunState.FAILED, Reason.of(result.get("reason")), str(result.get("message") or "The worker failed; see run.log.")[:4000]
    if exit_code is None:
        return RunState.FAILED, Reason.ERROR, "The worker ended without writing exit_code; see run.log."
    if exit_code < 0 or exit_code == 137:
        return RunState.FAILED, Reason.ERROR, f"The worker was killed (exit {exit_code}); see run.log."
    return RunState.FAILED, Reason.ERROR, f"The worker exited with {exit_code} and no result; see run.log."


def requested_stop(run: Run, max_wall_seconds: int | None) -> Stop:
    """The Stop a run's cancel request stands for: an admin's cancel, or the wall-time limit."""
    if run.stop_reason is Reason.TIMEOUT:
        return Stop(Reason.TIMEOUT, wall_limit_message(max_wall_seconds or 0), 0.0)
    return Stop(Reason.CANCELLED, "Cancelled by an admin.", 0.0)


def _save_cut_short(current: Run, hold_copying: bool) -> bool:
    """Whether a run's results were being saved when its server stopped (kill -9, a crash): it is
    ``copying``, not yet waiting on its model files, and nobody asked it to stop. The agent sends its
    report again; saving it then (the writeback is one transaction and replaces what it wrote) is
    what lets the copy-back start, where the restarted server follows the run."""
    return (hold_copying and current.state is RunState.COPYING and not current.awaiting_copy
            and not current.cancel_requested)


class RunStopped(Exception):
    """The run was asked to stop while its results were being saved: they were not kept."""

    def __init__(self, state: RunState, reason: Reason | None, message: str | None) -> None:
        super().__init__(message)
        self.state, self.reason, self.message = state, reason, message


def _numbers(metrics: object) -> dict[str, float]:
    """The metrics a run keeps: named numbers only (a report from an agent is input like any other)."""
    if not isinstance(metrics, dict):
        return {}
    return {str(k)[:200]: v for k, v in metrics.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300}


class ReportAhead(ValueError):
    """A report whose ``seq`` is past the events the server has (``have``): nothing of it is recorded.

    Refused, not recorded with a gap: the skipped events may still come (a batch that arrived late,
    seq 10 before seq 5), and an agent advances ``seq`` only after a 2xx, so it still holds them and
    sends them first once told the count. events.jsonl stays the run's events in order, once each,
    with one number (``events_seen``) to say how far; a gap recorded as "never arrived" was a false
    story as soon as the late batch came, and that batch was then dropped as a resend (issue 33).
    """

    def __init__(self, seq: int, have: int) -> None:
        super().__init__(f"seq {seq} is past the {have} events this run has: events {have} to {seq - 1} have not "
                         f"arrived. Nothing of this batch was recorded; send the events from seq {have} first, "
                         "then this batch again.")
        self.have = have


class WriteRateExceeded(Exception):
    """A report over the run's write rate: nothing of it was stored; send it again after ``wait`` s."""

    def __init__(self, wait: int) -> None:
        super().__init__(quota.rate_message())
        self.wait = wait


@dataclass
class RenderedReport:
    """What one events report adds, rendered before anything is written (pure)."""

    events_text: str = ""
    run_lines: list[str] = field(default_factory=list)
    agent_text: str = ""
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.events_text.encode("utf-8")) + sum(len(x.encode("utf-8")) + 10 for x in self.run_lines) \
            + len(self.agent_text.encode("utf-8"))


def render_report(events: list[dict[str, Any]], lines: list[str]) -> RenderedReport:
    """The text a report adds to events.jsonl, run.log and agent.log, and the run fields it sets."""
    report = RenderedReport()
    texts = []
    for event in events:
        texts.append(json.dumps(event, ensure_ascii=False) + "\n")
        line = event_line(event)
        if line:
            report.run_lines.append(line)
        if event.get("type") == "step":
            report.fields["step"] = str(event.get("text", ""))[:500]
        elif event.get("type") == "progress":
            frac = progress_fraction(event)
            if frac is not None:
                report.fields["progress"] = frac
    report.events_text = "".join(texts)
    report.agent_text = "".join(str(line).replace("\n", " ") + "\n" for line in lines)
    return report


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """One report of a run at a time, across gunicorn's processes (a resend can race its original)."""
    fd = os.open(str(run_dir), os.O_RDONLY)  # the folder itself: no lock file among the run's files
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def prepare_bundle(project: Project, store: RunStore, run: Run, runlog: RunLog, local: bool = False) -> BundleInfo:
    """Write the run's bundle and record its sha256: what any backend ships to its worker
    (``local``: the worker runs on this machine)."""
    mt = project.config.model_training
    quota.check_reserve(store.run_dir(run.id), 0, mt.disk_reserve_mb)
    # A codebook's added codes are classes like its own labels.
    job = job_spec(current_config(project.config, project.db), run.id, run.trainer, run.schemas, run.params,
                   local=local)
    # Items carry the other texts spans mark only where a trained scheme marks them.
    fields = any("fields" in scheme for scheme in job["schemes"])
    labels, left_out = project.training_labels()
    if left_out:
        runlog.write(f"Left out {left_out} label(s) of annotators who saw AI help (ai_support.assist_holdout."
                     "train_on: unhelped): the run learns from the control group's labels and imported ones")
    steps = StepQuestions.of(project.config, run.schemas)
    info = build_bundle(store.run_dir(run.id) / "bundle.tar.gz", job, project.items, labels, mt.holdout_fraction,
                        project.config.span_texts if fields else lambda item: {}, steps,
                        compared(project.config, run.schemas))
    if steps:
        context = (f"with up to {steps.context_chars} characters of the trace before it" if steps.context_chars
                   else "the step alone (step_context_chars: 0)")
        runlog.write(f"Questions asked on each step ({', '.join(sorted(steps.names))}) are learnt step by step: "
                     f"each step an example, {context}; a trace's steps are all trained or all held out")
    runlog.write(f"Bundle: {info.n_items} items, {info.n_labels} labels, {info.n_holdout} holdout items, "
                 f"sha256 {info.sha256}")
    store.update(run.id, bundle_sha256=info.sha256, labelled_items=info.n_labelled_items, annotators=info.n_annotators)
    return info


class RunRecorder:
    """Turns what a worker reports into the run's record: events.jsonl, run.log, step, progress,
    and at the end its state, metrics, predictions, model files and writeback.

    Backend-neutral on purpose: every backend's agent feeds it through the agent protocol's events,
    predictions and result calls, and a backend that trains by other means (a test's toy) calls it
    directly, so a run is recorded the same way wherever it ran.
    """

    def __init__(self, project: Project, store: RunStore, run: Run, clock: Clock = time.time) -> None:
        self.project = project
        self.store = store
        self.run = run
        self.run_dir = store.run_dir(run.id)
        private_dir(self.run_dir)
        self.log = RunLog(self.run_dir / "run.log", clock)

    def report(self, seq: int, events: list[dict[str, Any]], lines: list[str], now: float) -> None:
        """Record one report of the run's agent: its new events (numbered from ``seq``) and its own
        log lines, whole or not at all, and exactly once.

        A resent report (its reply was lost) adds nothing it already added. events.jsonl's length is
        recorded with the count, so a report cut short by a crash or a full disk is cut off the file
        before the next one is appended. Raises :class:`ReportAhead` (a batch past the count: nothing
        stored), :class:`WriteRateExceeded` (nothing stored) and :class:`quota.DiskReserve` (nothing
        stored; the caller stops the run).
        """
        mt = self.project.config.model_training
        with run_lock(self.run_dir):
            run = self.store.get(self.run.id) or self.run
            if seq > run.events_seen:
                raise ReportAhead(seq, run.events_seen)
            fresh = events[run.events_seen - seq:]
            resent = bool(events) and not fresh
            report = render_report(fresh, [] if resent else lines)
            bucket = quota.Bucket(run.write_allowance, run.write_at or now) if run.write_allowance is not None \
                else quota.Bucket.full(now)
            bucket, wait = bucket.take(report.size, now)
            if wait is not None:
                self._note_once(".rate_noted", quota.rate_message())
                raise WriteRateExceeded(wait)
            quota.check_reserve(self.run_dir, report.size, mt.disk_reserve_mb)
            events_path = self.run_dir / "events.jsonl"
            # A run reported on by an older server has events and no recorded length: take the file's.
            recorded = run.events_bytes if run.events_bytes or not run.events_seen else _size(events_path)
            used = recorded + _size(self.run_dir / "run.log") + _size(self.run_dir / "agent.log")
            if quota.over_budget(used, report.size, mt.max_run_log_mb):
                self._note_once(".log_capped", quota.budget_message(mt.max_run_log_mb))
                report = RenderedReport(fields=report.fields)
            events_bytes = recorded
            if report.events_text:
                with open_private(events_path, "ab") as out:
                    if out.seek(0, os.SEEK_END) > recorded:
                        out.truncate(recorded)  # a report cut short after the last recorded one
                    out.write(report.events_text.encode("utf-8"))
                    events_bytes = out.tell()
            if report.run_lines:
                self.log.write("\n".join(report.run_lines))
            if report.agent_text:
                with open_private(self.run_dir / "agent.log", "a", encoding="utf-8") as fh:
                    fh.write(report.agent_text)
            self.store.update(run.id, events_seen=max(run.events_seen, seq + len(events)), events_bytes=events_bytes,
                              write_allowance=bucket.allowance, write_at=bucket.at, **report.fields)

    def _note_once(self, marker: str, text: str) -> None:
        """A line in run.log the first time a limit applies to this run (a marker file remembers)."""
        try:
            os.close(os.open(str(self.run_dir / marker), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            return
        self.log.write(text)

    def finish(self, exit_code: int | None, result: dict[str, Any] | None, stop: Stop | None,
               predictions: Path | None, artifacts: Path | None, hold_copying: bool = False) -> RunState:
        """End the run from how its worker ended; on success keep its outputs and write back.

        ``hold_copying``: the model files are still to be copied from the host (ssh, slurm); the run
        stays ``copying`` until the copy ends it with :meth:`copied` (or :meth:`fail`).
        """
        current = self.store.get(self.run.id)
        if stop is None and current is not None and current.cancel_requested:
            stop = requested_stop(current, self.project.config.model_training.max_wall_seconds)
        state, reason, message = outcome(exit_code, result, stop)
        metrics = _numbers((result or {}).get("metrics"))
        device = (result or {}).get("device")
        device = device[:200] if isinstance(device, str) else None
        if state is RunState.SUCCEEDED:
            moved = self.store.move(self.run.id, RunState.COPYING, step="saving predictions and model files")
            current = None if moved else self.store.get(self.run.id)
            if current is not None and _save_cut_short(current, hold_copying):
                moved = True  # the report again, after a server that stopped mid-save: save it now
            if not moved:
                if current is not None and not current.state.terminal and current.cancel_requested:
                    return self.finish(exit_code, result, requested_stop(
                        current, self.project.config.model_training.max_wall_seconds), None, None)
                return current.state if current else RunState.FAILED  # ended meanwhile (cancel, timeout)
            try:
                kept, message = self._keep(predictions, artifacts, metrics)
                metrics.update(kept)
            except RunStopped as stopped:
                state, reason, message = stopped.state, stopped.reason, stopped.message
            except Exception as exc:  # a failed save fails this run, not the dispatcher
                log.exception("run %s: results could not be saved", self.run.id)
                state, reason, message = RunState.FAILED, Reason.ERROR, f"Saving the results failed: {exc}"
        if state is RunState.SUCCEEDED and hold_copying:
            self.store.await_copy(self.run.id, metrics=metrics, device=device, message=message,
                                  step="copying the model files")
            self.log.write("Predictions saved; copying the model files.")
            return RunState.COPYING
        return self._end(state, reason, message, metrics=metrics, device=device)

    def copied(self, artifact_uri: str, model: ModelPlace) -> RunState:
        """End a run :meth:`finish` held in ``copying``, its model files now where ``model`` says: the
        copy-back learns where they are, and the run ends here as every other does."""
        self.place_model(artifact_uri, model)
        held = self.store.get(self.run.id) or self.run
        return self._end(RunState.SUCCEEDED, None, held.message)  # e.g. whose suggestions annotators keep

    def place_model(self, artifact_uri: str, model: ModelPlace | None) -> None:
        """Where the run's model files are, written once by whoever learned it (this machine's folder,
        the copy-back, the agent's report of files kept on its machine)."""
        self.store.update(self.run.id, artifact_uri=artifact_uri, model=model)

    def _end(self, state: RunState, reason: Reason | None, message: str | None, **fields: Any) -> RunState:
        """The run's last move, logged; a stop asked for at the last moment wins over it."""
        step = {RunState.SUCCEEDED: "done", RunState.CANCELLED: "cancelled"}.get(state, "failed")
        failed = message and state is not RunState.SUCCEEDED  # a success's message (kept_note) is logged already
        self.log.write(f"Run {state.value}" + (f" ({reason.value if reason else None}): {message}" if failed else "."))
        moved = self.store.move(self.run.id, state, reason=reason, message=message, step=step,
                                progress=1.0 if state is RunState.SUCCEEDED else None, **fields)
        current = self.store.get(self.run.id)
        if not moved and current is not None and not current.state.terminal and current.cancel_requested:
            stop = requested_stop(current, self.project.config.model_training.max_wall_seconds)
            self.fail(stop.reason, stop.message)  # asked to stop at the last moment: the stop wins
            return RunState.CANCELLED if stop.reason is Reason.CANCELLED else RunState.FAILED
        return state

    def fail(self, reason: Reason, message: str) -> bool:
        """End the run as failed (or cancelled, for a cancel); False if it had already ended.

        A run stopped while its model files were being copied had already written its suggestions:
        they are withdrawn, so only a run that succeeded is ever shown to annotators.
        """
        state = RunState.CANCELLED if reason is Reason.CANCELLED else RunState.FAILED
        moved = self.store.move(self.run.id, state, reason=reason, message=message, step=state.value)
        if moved:
            self.log.write(f"Run {state.value} ({reason.value}): {message}")
            withdrawn = withdraw(self.project, self.run.id)
            if withdrawn:
                self.log.write(f"Its {withdrawn} suggestions were withdrawn; annotators see the previous run's, if any.")
        return moved

    def agent_log(self, lines: list[str]) -> None:
        """``agent.log``: the agent's own lines, so a silent agent's last words are kept."""
        if lines:
            with open_private(self.run_dir / "agent.log", "a", encoding="utf-8") as fh:
                for line in lines:
                    fh.write(str(line).replace("\n", " ") + "\n")

    def _keep(self, predictions: Path | None, artifacts: Path | None,
              metrics: Mapping[str, Any]) -> tuple[dict[str, float], str | None]:
        """Move the outputs into the run folder and write back; the writeback's counts, for the page
        ("0 suggestions written: all below min_confidence 0.6" instead of a silent green run), and the
        run's message when it wrote no predictions for a schema: annotators keep the earlier run's
        suggestions, and run.log and the run's card say whose."""
        kept = self.run_dir / "predictions.jsonl"
        if predictions is not None and predictions.exists() and predictions != kept:
            predictions.replace(kept)
        if artifacts is not None and artifacts.exists():
            target = self.run_dir / "artifacts"
            if target.exists():
                shutil.rmtree(target)
            artifacts.replace(target)
            make_private(target)  # a trainer may copy a cache's 0644 files among its model files
            self.place_model(str(target), ModelPlace.here(target))
        have = kept.exists()
        stats = write_back(self.project, self.run, kept if have else None, metrics)
        if stats.stopped:
            current = self.store.get(self.run.id) or self.run
            stop = requested_stop(current, self.project.config.model_training.max_wall_seconds)
            state, reason, message = outcome(None, None, stop)
            raise RunStopped(state, reason, message)
        note = kept_note(stats)
        if have:
            self.log.write(f"Writeback: {stats.written} suggestions for {', '.join(stats.schemas) or 'no schema'} "
                           f"({stats.below_confidence} below min_confidence, {stats.skipped_unlabelled} unlabelled "
                           f"skipped, {stats.invalid} invalid)")
        if note:
            self.log.write(note)
        if not have:
            return ({"suggestions/written": 0} if stats.schemas else {}), note
        ordered = activelearning.record_order(self.project, self.run, kept)
        if ordered is not None:
            share = f", {ordered['random_share']:.0%} of them at random" if ordered["random_share"] else ""
            self.log.write(f"Active learning: the next {len(ordered['ids'])} items nobody has labelled go to "
                           f"annotators most uncertain first ({ordered['uncertainty']}){share}")
        if not stats.schemas:
            return {}, note
        return {"suggestions/written": stats.written, "suggestions/below_confidence": stats.below_confidence,
                "suggestions/unlabelled_skipped": stats.skipped_unlabelled, "suggestions/invalid": stats.invalid}, note
