"""A worker submitted with sbatch, driven by the same Supervisor as a worker process.

Remote-safe: standard library only, Python 3.8. The agent runs on the login node; the job runs
on a compute node and shares the job dir with it (``remote_dir`` is shared storage). So the
agent follows the worker exactly as it follows a local one, through ``events.jsonl`` and
``exit_code`` in the job dir, and asks SLURM only what the files cannot say: whether the job
still waits (``squeue``, at most once per ``poll_interval_s``) and, when it ended early, why
(``scontrol show job`` where the cluster has it, and ``slurm.out``). What SLURM prints is read by
the pure functions in :mod:`potato.training.slurm.state`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from potato.errors import PotatoError
from potato.training.launch.codefiles import PRESENT_MARK, code_hash, code_root, shipped_files
from potato.training.job.files import read_exit_code, read_json, tail
from potato.training.slurm.script import (
    JOB_SCRIPT,
    SLURM_OUT,
    STARTED_FILE,
    WORKER_OUT,
    job_script,
    prelude_failure,
    prelude_message,
    sbatch_argv,
)
from potato.training.slurm.settings import SlurmSettings
from potato.training.slurm.state import (
    SQUEUE_FORMAT,
    QueueState,
    explain_end,
    gone_status,
    has_reason,
    lost_message,
    parse_scontrol,
    parse_squeue,
    running_line,
    squeue_says_gone,
    step_text,
)
from potato.training.job.results import EVENTS_FILE, Reason
from potato.training.launch.supervise import Stop

Runner = Callable[[List[str]], Tuple[int, str, str]]
"""Runs one SLURM command: argv -> (returncode, stdout, stderr); 127 when it is not on PATH."""

COMMAND_TIMEOUT_S = 60.0
"""A controller that is down makes squeue wait ~9 s before it fails; a minute is a hung command."""
LOST_GRACE_S = 15.0
"""How long a job may be gone from the queue before its exit_code shows up: shared storage can
show a file written on a compute node seconds late on the login node."""
JOB_ID_FILE = "slurm_job_id"
KILL_ARGV = ("scancel", "--batch", "--full", "--signal=KILL")
"""SIGKILL to the batch step's whole process tree at once: job.sh and the worker it started. In SLURM
22.05 ``--signal=KILL`` alone or with ``--full`` is a cancel (SIGTERM, then SIGKILL after KillWait),
and with ``--batch`` alone it kills job.sh only, leaving the worker running without it; with both
flags the step's processes get SIGKILL and the job leaves the queue at once."""


def shared_code(workdir: Path) -> str:
    """The folder the job's Python imports Potato from; the compute nodes must see it.

    An agent the server started runs from the code it pushed to ``remote_dir/code/<hash>``, on the
    shared storage already. A hand-started agent may run from a login node's own install, so its
    ``potato`` package (the standard-library part a worker needs) is copied to
    ``<workdir>/code/agent-<hash>`` first: into a ``.tmp`` folder, renamed when complete.
    """
    root = Path(code_root())
    if root == workdir or workdir in root.parents:
        return str(root)
    target = workdir / "code" / f"agent-{code_hash(root)}"
    if not target.joinpath(*PRESENT_MARK).exists():
        tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
        for rel in shipped_files(root):
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(str(root / rel), str(tmp / rel))
        shutil.rmtree(str(target), ignore_errors=True)
        os.replace(str(tmp), str(target))
    return str(target)


class SlurmError(PotatoError):
    """The job could not be submitted; the message says why and what to change."""


def run_command(argv: List[str], timeout: float = COMMAND_TIMEOUT_S) -> Tuple[int, str, str]:
    """One SLURM command, with none of Potato's own variables in its environment: sbatch hands its
    environment to the job (``--export=ALL``), and a hand-started agent's POTATO_TRAINING_TOKEN
    must not reach the compute node, the worker or SLURM's job records."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POTATO_")}
    try:
        out = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=timeout, env=env)
    except FileNotFoundError:
        return 127, "", f"{argv[0]}: command not found"
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]} gave no answer within {timeout:.0f} s"
    return out.returncode, out.stdout.decode("utf-8", "replace"), out.stderr.decode("utf-8", "replace")


def last_output_line(text: str) -> str:
    """The last line of a command's output that says anything: what a message quotes of it. (Not
    :func:`potato.training.agent.protocol.last_line`, which reads a file's last line.)"""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


class SlurmJob:
    """One run's SLURM job: ``poll``, ``terminate`` and ``kill`` as for a worker process, plus
    ``ended_by`` (the scheduler's reason, when it ended the job before the worker finished)."""

    def __init__(self, job_dir: Path, job_id: str, settings: SlurmSettings, note: Callable[[str], None],
                 step: Callable[[str], None], run: Runner = run_command, clock: Callable[[], float] = time.time) -> None:
        self.job_dir = job_dir
        self.job_id = job_id
        self.settings = settings
        self.note = note
        self.step = step
        self.run = run
        self.clock = clock
        self.state: Optional[QueueState] = None
        self.next_squeue = clock()
        self.squeue_calls = 0
        self.gone_since: Optional[float] = None
        self.ended_code: Optional[int] = None
        self.scontrol_fields: Optional[dict] = None
        self.squeue_trouble = ""
        self.running_noted = False
        """run.log has this start's ``RUNNING on`` line (from squeue or from the job's own word)."""
        self.started_seen = ""
        """The job's :data:`STARTED_FILE` as last acted on (a requeued job writes a new one)."""
        self.worker_spoke = False
        """The worker wrote its first event: from then on the step line is the worker's own."""

    @classmethod
    def submit(cls, job_dir: Path, settings: SlurmSettings, run_id: str, python: str, code_dir: str,
               shared_dir: str, host: str, note: Callable[[str], None], step: Callable[[str], None],
               run: Runner = run_command, clock: Callable[[], float] = time.time) -> "SlurmJob":
        """Write job.sh and submit it: ``Submitted SLURM job <id>`` with the flags."""
        job = str(job_dir)
        script = job_dir / JOB_SCRIPT
        script.write_text(job_script(settings, run_id, python, job, code_dir, shared_dir), encoding="utf-8")
        os.chmod(str(script), 0o700)
        argv = sbatch_argv(settings, job, run_id)
        code, out, err = run(argv)
        if code == 127:
            raise SlurmError(f"{host} has no sbatch on PATH, so it cannot submit jobs. Put the folder with "
                             "SLURM's commands on PATH (the backend's env: PATH) or run the agent on a login node.")
        job_id = out.strip().split(";")[0]
        if code != 0 or not job_id.isdigit():
            said = last_output_line(err) or last_output_line(out) or f"exit {code}"
            raise SlurmError(f"sbatch refused the job: {said}. "
                             f"Check the backend's slurm settings; the command was: {shlex.join(argv)}")
        (job_dir / JOB_ID_FILE).write_text(job_id + "\n", encoding="utf-8")
        note(f"Submitted SLURM job {job_id}: {shlex.join(argv)}")
        step(f"SLURM job {job_id} submitted")
        return cls(job_dir, job_id, settings, note, step, run, clock)

    @property
    def pid(self) -> str:
        return self.job_id

    def poll(self) -> Optional[int]:
        """None while the job is queued or running; its exit status once it ended."""
        self._job_says_started()
        code = read_exit_code(self.job_dir)
        if code is not None:
            return code
        if self.ended_code is not None:
            return self.ended_code
        now = self.clock()
        if now < self.next_squeue:
            return None
        self.next_squeue = now + self.settings.poll_interval_s
        self.squeue_calls += 1
        rc, out, err = self.run(["squeue", "-h", "-j", self.job_id, "-o", SQUEUE_FORMAT])
        gone = squeue_says_gone(rc, err)
        if rc == 0:
            state = parse_squeue(out)
            if state is not None:
                self.gone_since = None
                self._saw(state)
                return None
            gone = True
        if not gone:
            trouble = last_output_line(err) or f"exit {rc}"
            if trouble != self.squeue_trouble:
                self.note(f"squeue failed for SLURM job {self.job_id} ({trouble}); asking again in "
                          f"{self.settings.poll_interval_s:g} s")
            self.squeue_trouble = trouble
            return None
        if self.gone_since is None:
            self.gone_since = now
        if now - self.gone_since < LOST_GRACE_S:
            self.next_squeue = now + 1.0  # the exit_code file may still be on its way
            return None
        self.scontrol_fields = self.scontrol()
        self.ended_code = gone_status(self.scontrol_fields)
        return self.ended_code

    def _saw(self, state: QueueState) -> None:
        if state == self.state:
            return
        self.state = state
        if state.state == "RUNNING":
            if not self.running_noted:
                self._running(state.nodes)
            return
        if state.state == "PENDING":
            # requeued: its next start is news again, but the slurm_started it left behind is not
            self.running_noted = False
            self.started_seen = self._started_text()
        self.note(state.line(self.job_id))
        self._step(step_text(self.job_id, state))

    def _job_says_started(self) -> None:
        """``RUNNING on <node>`` from the job's own :data:`STARTED_FILE`, for a start squeue did not
        show: a job shorter than one poll_interval_s is never RUNNING in any squeue answer."""
        if self.running_noted:
            return
        text = self._started_text()
        if not text.endswith("\n") or text == self.started_seen:  # half written, or an earlier start's
            return
        self.started_seen = text
        self._running((text.split() or [""])[0])

    def _started_text(self) -> str:
        """:data:`STARTED_FILE` as it is now ("" while there is none)."""
        try:
            return (self.job_dir / STARTED_FILE).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def _running(self, node: str) -> None:
        self.running_noted = True
        self.note(running_line(self.job_id, node))
        self._step(step_text(self.job_id, QueueState("RUNNING", "", node)))

    def _step(self, text: str) -> None:
        """A queue state as the step line, only until the worker says what it does: the queue must
        not replace ``training on 26 items (5%)`` with older news, ``running on node07``."""
        if not self.worker_spoke:
            try:
                self.worker_spoke = (self.job_dir / EVENTS_FILE).stat().st_size > 0
            except OSError:
                pass
        if not self.worker_spoke:
            self.step(text)

    def scontrol(self) -> Optional[dict]:
        """``scontrol show job`` while SLURM still knows the job (MinJobAge); None otherwise."""
        if shutil.which("scontrol") is None:
            return None
        rc, out, _ = self.run(["scontrol", "show", "job", self.job_id])
        fields = parse_scontrol(out) if rc == 0 else {}
        return fields or None

    def ended_by(self) -> Optional[Stop]:
        """Why the scheduler ended the job, for a job that ended badly and was not stopped by us."""
        fields = self.scontrol_fields or self.scontrol()
        slurm_out = tail(self.job_dir / SLURM_OUT, 16384)
        if fields:
            reason = fields.get("Reason", "")
            self.note(f"SLURM job {self.job_id} ended: JobState={fields.get('JobState', '?')} "
                      + (f"Reason={reason} " if has_reason(reason) else "") + f"ExitCode={fields.get('ExitCode', '?')}")
        failed = prelude_failure(slurm_out)
        if failed is not None:  # run.log's last line names the line: "Run failed (error): ..."
            return Stop(Reason.ERROR, prelude_message(self.job_id, failed), 0.0)
        ended = explain_end(self.job_id, fields, slurm_out, self.settings)
        if ended is not None:
            return Stop(ended.reason, ended.message, 0.0)
        if read_exit_code(self.job_dir) is None:
            return Stop(Reason.JOB_LOST, lost_message(self.job_id, slurm_out), 0.0)
        if read_json(self.job_dir / "result.json") is None:  # it never got as far as a result: say why
            for line in tail(self.job_dir / WORKER_OUT, 2000).splitlines()[-10:]:
                self.note(f"worker.out: {line}")
        return None

    def terminate(self) -> None:
        """Warm stop: TERM to the batch script and the worker; SLURM then ends the job."""
        self.note(f"scancel --full --signal=TERM {self.job_id}")
        rc, _, err = self.run(["scancel", "--full", "--signal=TERM", self.job_id])
        if rc != 0 and "Invalid job id" not in err:
            self.note(f"scancel failed ({last_output_line(err)}); the job may still run")

    def kill(self) -> None:
        """Cold stop, for a worker that did not stop after SIGTERM: SIGKILL to every process of the
        job's batch step (:data:`KILL_ARGV`), then the plain scancel of the documented sequence.

        A plain scancel alone is a cancel like any other: SIGTERM again, which this worker ignores,
        and SIGKILL only after the cluster's KillWait (30 s by default), the job holding its node in
        CG all that time (issue 42). The job counts as ended now: the run is reported cancelled once
        grace_seconds have passed, as on every other backend."""
        self.note(shlex.join([*KILL_ARGV, self.job_id]))
        rc, _, err = self.run([*KILL_ARGV, self.job_id])
        if rc != 0 and "Invalid job id" not in err:  # a job that just ended has nothing left to kill
            self.note(f"scancel failed ({last_output_line(err)}); SLURM kills what is left after its KillWait")
        self.note(f"scancel {self.job_id}")
        rc, _, err = self.run(["scancel", self.job_id])
        if rc != 0:
            self.note(f"scancel failed ({last_output_line(err)}); the job may still run")
        if self.ended_code is None:
            self.ended_code = 137  # what the job's exit status will be: killed
