"""SLURM, what Potato writes: the job script (``job.sh``, with the backend's prelude) and the
``sbatch`` command line, as pure functions; and the prelude's failure line read back, since job.sh
prints it and only this module knows its shape.

Remote-safe: standard library only, Python 3.8. The agent on a login node uses these through
:class:`potato.training.slurm.job.SlurmJob`, which does the I/O; the server's check runs the same
prelude (:func:`prelude_block`). Separate from :mod:`potato.training.slurm.state`, which reads what
the scheduler says back: one side is text Potato controls, the other text SLURM prints.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import List, Optional, Tuple

from potato.training.launch.containers import Shell, shell_line, worker_argv
from potato.training.slurm.settings import SlurmSettings

JOB_SCRIPT = "job.sh"
SLURM_OUT = "slurm.out"
WORKER_OUT = "worker.out"
STARTED_FILE = "slurm_started"
"""Written by job.sh first thing on the compute node: ``<node> <unix time>``, the job's own word
that it started (and where), for a job shorter than one squeue poll."""

SBATCH_FLAGS = (
    ("partition", "partition"),
    ("account", "account"),
    ("qos", "qos"),
    ("gres", "gres"),
    ("time", "time"),
    ("mem", "mem"),
    ("cpus_per_task", "cpus-per-task"),
    ("constraint", "constraint"),
)
"""Each setting that maps to one sbatch flag, in the order the command line shows them."""


def sbatch_flags(settings: SlurmSettings) -> List[str]:
    """The settings as sbatch flags, ``extra_sbatch_args`` last so they can override."""
    flags = [f"--{flag}={getattr(settings, key)}" for key, flag in SBATCH_FLAGS if getattr(settings, key) is not None]
    return flags + list(settings.extra_sbatch_args)


def sbatch_argv(settings: SlurmSettings, job_dir: str, run_id: str) -> List[str]:
    """``sbatch --parsable`` with the job's name, its output in the job dir and the settings'
    flags; the list goes to ``subprocess`` as is, so no value is ever parsed by a shell here."""
    return ["sbatch", "--parsable", f"--job-name=potato-{run_id}", f"--output={job_dir}/{SLURM_OUT}",
            f"--chdir={job_dir}", *sbatch_flags(settings), f"{job_dir}/{JOB_SCRIPT}"]


def worker_command(settings: SlurmSettings, python: str, job_dir: str, code_dir: str,
                   shared_dir: str) -> str:
    """The worker's command line in job.sh: plain, or through apptainer or docker. In a
    container the image's own ``python3`` runs it (``job_python`` is the compute node's), as the
    user the job runs as, with the GPUs SLURM gave the job."""
    if settings.container is None:
        return f"{shlex.quote(python)} -m potato.training.worker {shlex.quote(job_dir)}"
    return shell_line(worker_argv(settings.container, job_dir, code_dir, shared_dir,
                                  user=Shell('"$(id -u):$(id -g)"'), gpus=Shell("${CUDA_VISIBLE_DEVICES:-}")))


def job_script(settings: SlurmSettings, run_id: str, python: str, job_dir: str, code_dir: str,
               shared_dir: str) -> str:
    """job.sh: :data:`STARTED_FILE`, the prelude (:func:`prelude_block`), then the worker, then ``exit_code``.

    The worker runs in the background and the script waits for it with a TERM trap, because
    SLURM signals every process of the job at once (a time limit, ``scancel``, ``scancel --full``):
    the worker gets its own SIGTERM and stops warm, and the script must outlive it (when the batch
    script exits, SLURM kills whatever is left of the job) and must not pass on a second TERM
    (the worker takes that as "stop at once"). The worker writes ``exit_code`` itself; the script
    writes it only when the worker could not (it did not start, or died on a signal).
    """
    q = shlex.quote
    lines = [
        "#!/bin/bash",
        f"# Potato training run {run_id}: written by the agent and submitted with sbatch.",
        "# The agent on the login node follows events.jsonl here; exit_code says how the worker ended.",
        "umask 077  # the job's files (labels, annotators' names, predictions) are this user's only",
        f"cd {q(job_dir)} || exit 1",
        "# where and when the job started, for the agent (squeue may never see a short job running)",
        f'printf \'%s %s\\n\' "${{SLURMD_NODENAME:-$(hostname -s)}}" "$(date +%s)" > {STARTED_FILE}.tmp'
        f" && mv -f {STARTED_FILE}.tmp {STARTED_FILE}",
        'echo "job.sh: SLURM job $SLURM_JOB_ID on $(hostname), CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-none}"',
    ]
    if settings.prelude:
        lines.append("# prelude (from the backend's settings): a line that fails ends the job, named in slurm.out")
        lines += prelude_block(settings.prelude, [
            f"  cd {q(job_dir)} && printf '%s\\n' \"$1\" > exit_code.tmp && mv -f exit_code.tmp exit_code",
            '  exit "$1"',
        ])
        lines.append("umask 077  # again: a prelude that sources a profile may have widened it")
    lines += [
        f"cd {q(job_dir)} || exit 1",
        f'export PYTHONPATH={q(code_dir)}"${{PYTHONPATH:+:$PYTHONPATH}}"',
        "export PYTHONUNBUFFERED=1",
    ]
    threads = settings.num_threads
    if threads:
        lines.append(f"export OMP_NUM_THREADS={threads} MKL_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads}")
    else:  # the job's CPUs, not the node's: a 64-core node would otherwise start 64 threads per job
        lines.append('export OMP_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}" MKL_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"'
                     ' OPENBLAS_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"')
    lines += [
        # set before the worker starts (a caught signal is reset to the default in the child)
        "trap 'echo \"job.sh: SIGTERM from SLURM; waiting for the worker to stop\"' TERM",
        f"{worker_command(settings, python, job_dir, code_dir, shared_dir)} >> {WORKER_OUT} 2>&1 &",
        "worker=$!",
        'while :; do wait "$worker"; code=$?; kill -0 "$worker" 2>/dev/null || break; done',
        '[ -s exit_code ] || { printf \'%s\\n\' "$code" > exit_code.tmp && mv exit_code.tmp exit_code; }',
        'exit "$code"',
        "",
    ]
    return "\n".join(lines)


def prelude_block(prelude: Tuple[str, ...], on_failure: List[str]) -> List[str]:
    """The prelude as job.sh and the check run it. Each line goes through ``eval``, so one line is
    one command whatever it holds (a ``;``, a trailing comment, even broken syntax) and runs in the
    script's own shell (a ``module load`` or an activation holds for the worker). A line that fails
    prints :data:`PRELUDE_FAILED`'s line (to slurm.out in a job), then ``on_failure`` runs with the
    line's exit status as ``$1``. A line that may fail says so itself: ``... || true``."""
    q = shlex.quote
    lines = ["potato_prelude_failed() {  # $1: the line's exit status, $2: its number, $3: the line",
             '  echo "job.sh: prelude line $2 failed (exit $1): $3"', *on_failure, "}"]
    for number, line in enumerate(prelude, 1):
        lines.append(f'eval {q(line)} || potato_prelude_failed "$?" {number} {q(line)}')
    return lines


PRELUDE_FAILED = re.compile(r"^job\.sh: prelude line (\d+) failed \(exit (\d+)\): (.*)$", re.MULTILINE)
_BASH_PREFIX = re.compile(r"^(?:[^:\n]*: )?(?:eval: )?line \d+: |^bash: ")


@dataclass(frozen=True)
class PreludeFailure:
    """A prelude line that failed: its number (from 1), the line, its exit status, and the last
    thing it printed (bash's ``module: command not found``, without the script's name)."""

    number: int
    line: str
    status: int
    said: str

    def describe(self) -> str:
        """``prelude line 1 (`module load cuda`) failed with exit 127: module: command not found``."""
        said = f": {self.said}" if self.said else ""
        return f"prelude line {self.number} (`{self.line}`) failed with exit {self.status}{said}"


PRELUDE_FIX = ("Fix that line in the backend's prelude (try it by hand on a compute node), remove it, or end it "
               "with `|| true` if it may fail.")


def prelude_failure(output: str) -> Optional[PreludeFailure]:
    """The failed prelude line named in ``output`` (slurm.out, or the check's run), if any."""
    match = PRELUDE_FAILED.search(output)
    if match is None:
        return None
    before = [line.strip() for line in output[:match.start()].splitlines()
              if line.strip() and not line.startswith("job.sh: ")]
    said = _BASH_PREFIX.sub("", before[-1])[:300] if before else ""
    return PreludeFailure(int(match.group(1)), match.group(3).strip(), int(match.group(2)), said)


def prelude_message(job_id: str, failure: PreludeFailure) -> str:
    """The run's message for a job whose prelude failed, before the worker started."""
    return f"SLURM job {job_id} stopped before the worker started: {failure.describe()}. {PRELUDE_FIX}"
