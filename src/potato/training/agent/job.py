"""One job as the agent runs it: download and extract the bundle, start the worker (a process
here, or a SLURM job), supervise it, upload its predictions and report the result.

Remote-safe: standard library only, Python 3.8. :class:`JobRunner` is the base of
:class:`potato.training.agent.program.Agent`, which adds the polling loop and the signals around it: a
run's steps are kept apart from how the agent gets its runs. The state both use (the console, the
clock, the worker and reporter of the run in progress) is the agent's, set in its ``__init__``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from potato.training.job.archive import UnsafeArchive, extract_archive
from potato.training.launch.containers import ContainerSpec
from potato.training.agent.protocol import (
    CUT_OFF,
    EMPTY_UPLOAD,
    BundleCorrupt,
    Client,
    Forbidden,
    ProtocolError,
    RunEnded,
    TokenRejected,
    TooLarge,
    Unreachable,
    backoff_delay,
    predictions_problem,
)
from potato.training.agent.reporting import HEARTBEAT_S, Console, Reporter
from potato.training.job.results import Reason
from potato.training.job.private import private_dir
from potato.training.slurm.job import SlurmError, SlurmJob, shared_code
from potato.training.slurm.settings import SlurmSettings
from potato.training.launch.supervise import Ending, Stop, Supervisor, Worker, WorkerProcess

NOT_STARTED: Optional[int] = None
"""The ``exit_code`` reported for a job whose worker never started."""
UPLOAD_TRIES = 3
"""Uploads of predictions.jsonl that the server may find cut short (the file was whole here) before
the run is reported failed with the server's answer."""


class JobRunner:
    """Runs one job from its hand-over to its reported result (:meth:`run_job`)."""

    workdir: Path
    python: str
    keep: bool
    give_up_after_s: float
    console: Console
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    id: str
    host: str
    busy: bool
    reporter: Optional[Reporter]
    worker: Optional[Worker]
    slurm: Optional[SlurmSettings]
    container: Optional[ContainerSpec]
    pass_env: Tuple[str, ...]
    session_ended: bool

    def run_job(self, job: Dict[str, Any], client: Client) -> None:
        run_id = str(job["run_id"])
        job_dir = private_dir(private_dir(self.workdir / "jobs") / run_id)
        reporter = Reporter(client, run_id, self.console, self.give_up_after_s, self.clock)
        self.reporter = reporter
        self.busy = True
        say = self.console.say
        try:
            say(f"run {run_id}: {job.get('trainer')} on {', '.join(job.get('schemas') or [])}")
            ending = self._prepare_and_run(job, client, job_dir, reporter)
            self._finish(job, client, job_dir, reporter, ending)
        finally:
            worker = self.worker
            if worker is not None and worker.poll() is None:  # only on an unexpected error: never leave it behind
                self.console.say(f"run {run_id}: the agent stopped on an error; killing the worker")
                worker.kill()
            self.busy = False
            self.reporter = None
            self.worker = None
            if not self.keep:
                shutil.rmtree(job_dir / "bundle", ignore_errors=True)
                for name in ("bundle.tar.gz", "bundle.tar.gz.part"):
                    try:
                        (job_dir / name).unlink()
                    except FileNotFoundError:
                        pass

    def _prepare_and_run(self, job: Dict[str, Any], client: Client, job_dir: Path, reporter: Reporter) -> Ending:
        run_id = str(job["run_id"])
        bundle = job.get("bundle") or {}
        size, sha = int(bundle.get("size") or 0), str(bundle.get("sha256") or "")
        reporter.add({"type": "step", "text": f"downloading the bundle on {self.host}"})
        reporter([])
        self.console.say(f"run {run_id}: downloading the bundle ({size / 1e6:.1f} MB)")
        last_beat = [self.clock()]

        def progress(done: int, total: int) -> None:
            self.console.progress("bundle", done, total)
            if self.clock() - last_beat[0] >= HEARTBEAT_S:  # a long download still says it is alive
                last_beat[0] = self.clock()
                reporter([])

        archive = job_dir / "bundle.tar.gz"
        try:
            if not archive.exists():
                client.download_bundle(run_id, archive, size, sha, progress, self.console.say, self.sleep,
                                       keep_trying_s=self.give_up_after_s, clock=self.clock)
            extract_archive(archive, job_dir / "bundle")
        except (Unreachable, BundleCorrupt, UnsafeArchive, ProtocolError, OSError) as exc:
            message = f"The agent on {self.host} could not get the run's bundle: {exc}"
            self.console.say(message)
            return Ending(NOT_STARTED, None, _stop(Reason.ERROR, message))
        if reporter.stop is not None:
            return Ending(NOT_STARTED, None, _stop(reporter.stop.reason, reporter.stop.message))

        def note(text: str) -> None:  # how a stop went (and SLURM's queue states) belong in the run's log too
            self.console.say(text)
            reporter.add({"type": "log", "text": text})

        try:
            self.worker = self._start_worker(job, job_dir, reporter, note)
        except (OSError, SlurmError) as exc:
            message = (str(exc) if isinstance(exc, SlurmError) else
                       f"The worker could not start on {self.host} with {self.python}: {exc}")
            self.console.say(message)
            return Ending(NOT_STARTED, None, _stop(Reason.ERROR, message))

        supervisor = Supervisor(self.worker, reporter, float(job.get("grace_seconds") or 20),
                                job.get("max_wall_seconds"), say=note, clock=self.clock, sleep=self.sleep)
        return supervisor.run()

    def _start_worker(self, job: Dict[str, Any], job_dir: Path, reporter: Reporter,
                      note: Callable[[str], None]) -> Worker:
        """The worker as a process here, or as a SLURM job that runs it on a compute node."""
        run_id = str(job["run_id"])
        if self.slurm is None:
            self.console.say(f"run {run_id}: starting the worker ({self.python})")
            reporter.add({"type": "step", "text": f"starting the worker on {self.host}"})
            if self.container is not None:
                note(f"run {run_id}: the worker runs in {self.container.runtime} image {self.container.image}")
            return WorkerProcess.start(job_dir, self.python, job.get("num_threads"), self.container, self.workdir,
                                       self.pass_env)
        settings = self.slurm
        python = settings.job_python or self.python
        reporter.add({"type": "step", "text": f"submitting the job on {self.host}"})
        return SlurmJob.submit(job_dir, settings, run_id, python, shared_code(self.workdir), str(self.workdir),
                               self.host, note, lambda text: reporter.add({"type": "step", "text": text}),
                               clock=self.clock)

    def _finish(self, job: Dict[str, Any], client: Client, job_dir: Path, reporter: Reporter,
                ending: Ending) -> None:
        run_id = str(job["run_id"])
        reporter.drain(self.sleep)
        artifacts = job_dir / "artifacts"
        model = artifacts.is_dir()
        report: Dict[str, Any] = {
            "exit_code": ending.exit_code,
            "result": ending.result,
            "stop": ending.stop.to_json() if ending.stop else None,
            "artifact_uri": f"{self.host}:{artifacts}" if model else None,
            "model": {"host": self.host, "folder": str(artifacts)} if model else None,
            "agent": self.id,
        }
        predictions = job_dir / "predictions.jsonl"
        if ending.stop is None and ending.exit_code == 0 and predictions.exists():
            failure: Optional[str] = ""
            problem = predictions_problem(predictions)
            if problem is not None and problem[0] == EMPTY_UPLOAD:
                # Nothing to send (the server would refuse it): the result keeps the suggestions shown now.
                self.console.say(f"run {run_id}: the worker wrote no predictions; nothing to upload")
            elif problem is not None:
                failure = f"The worker's predictions.jsonl on {self.host} {problem[1]}; it was not uploaded."
            else:
                size = predictions.stat().st_size
                self.console.say(f"run {run_id}: uploading predictions ({size / 1e6:.1f} MB)")
                failure = self._upload_predictions(client, run_id, predictions)
                if failure is None:
                    return
            if failure:  # the run fails saying why, rather than time out on the server
                self.console.say(f"run {run_id}: {failure}")
                ending = Ending(ending.exit_code, ending.result, _stop(Reason.ERROR, failure))
                report["stop"] = _stop(Reason.ERROR, failure).to_json()
        status = "cancelled" if ending.stop and ending.stop.reason is Reason.CANCELLED else (
            "failed" if ending.stop or ending.exit_code != 0 else "succeeded")
        self.console.say(f"run {run_id}: reporting the result ({status})")
        report["log"] = self.console.take()
        if self._retry(lambda: client.result(run_id, report), "reporting the result"):
            self.console.say(f"run {run_id}: {status}" + (f" ({ending.stop.message})" if ending.stop else ""))
            if report["artifact_uri"]:
                self.console.say(f"run {run_id}: model files in {job_dir / 'artifacts'}")

    def _upload_predictions(self, client: Client, run_id: str, path: Path) -> Optional[str]:
        """Upload ``path``: "" once the server has it; what to fail the run with when the server refuses
        it (rather than leave the run to time out); None when the run is over there (a 413 failed it, or
        it ended): nothing more to send. One that arrived cut short (``incomplete``: the connection, not
        the file, which was found whole here) is sent again, :data:`UPLOAD_TRIES` times in all."""
        refused: List[ProtocolError] = []

        def put() -> None:
            try:
                client.put_predictions(run_id, path)
            except ProtocolError as exc:
                if type(exc) is not ProtocolError:  # 401, 403, 409, 413: the run is over for this agent
                    raise
                refused.append(exc)

        for _ in range(UPLOAD_TRIES):
            del refused[:]
            if not self._retry(put, "uploading predictions"):
                return None
            if not refused:
                return ""
            if refused[0].code != CUT_OFF:
                break
            self.console.say(f"run {run_id}: the predictions arrived cut short ({refused[0]}); sending them again")
        return f"The server refused the predictions upload: {refused[0]}"

    def _retry(self, call: Callable[[], Any], what: str) -> bool:
        """Retry ``call`` through network trouble until the give-up time; False if it never went."""
        started, failures = self.clock(), 0
        while True:
            try:
                call()
                return True
            except TooLarge as exc:
                self.console.say(f"the server refused the upload: {exc}")
                return False
            except (RunEnded, Forbidden, TokenRejected) as exc:
                self.console.say(f"the server no longer takes this run ({what}): {exc}")
                return False
            except ProtocolError as exc:
                self.console.say(f"the server refused {what}: {exc}")
                return False
            except Unreachable as exc:
                if self.session_ended or self.clock() - started > self.give_up_after_s:
                    self.console.say(f"gave up {what} after {self.give_up_after_s:g} s: {exc}")
                    return False
                if failures == 0:
                    self.console.say(f"cannot reach the server while {what} ({exc}); retrying")
                self.sleep(backoff_delay(failures, base=1.0, cap=15.0))
                failures += 1


def _stop(reason: Reason, message: str) -> Stop:
    """A stop that needs no SIGKILL: nothing was started."""
    return Stop(reason, message, 0.0)
