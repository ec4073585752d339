"""SLURM, as pure functions: the job script, the sbatch command line, reading squeue and
``scontrol show job``, and saying in plain words why a job waits or why it ended.

Remote-safe: standard library only, Python 3.8. The agent on a login node uses these through
:class:`potato.training.slurmjob.SlurmJob`, which does the I/O; everything here is tested on
pasted real SLURM 22.05 output without a cluster.

Two rules from how SLURM behaves: the worker's own ``exit_code`` file is the truth about how it
ended, and the scheduler (``scontrol``, ``slurm.out``) is only the explanation; and Potato never
calls ``srun`` or ``sacct`` (a cluster without accounting has no ``sacct``, and a job step is not
needed to run one process).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from potato.defaults import SLURM_POLL_INTERVAL_S
from potato.errors import PotatoError, did_you_mean
from potato.training.containers import ContainerSpec, Shell, shell_line, worker_argv
from potato.training.results import Reason

JOB_SCRIPT = "job.sh"
SLURM_OUT = "slurm.out"
WORKER_OUT = "worker.out"
SETTINGS_FILE = "slurm.json"
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


class SlurmConfigError(PotatoError, ValueError):
    """slurm.json (``--slurm-config``) is not what the agent can submit with; the message names the key."""


NODE_LOCAL_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
"""Folders each node has its own copy of, so a SLURM job cannot share files through them."""


def node_local_dir(path: str) -> Optional[str]:
    """The node-local folder ``path`` lies in (``/tmp``, ``/var/tmp``, ``/dev/shm``), or None.

    Normalised first, so ``//tmp/x`` and ``/tmp/../tmp/x`` do not slip through. One rule for the
    config's ``remote_dir`` and a hand-started agent's ``--workdir``: both are where the
    agent on the login node and the job on a compute node share files.
    """
    if not path.startswith("/"):
        return None
    normal = posixpath.normpath("/" + path.lstrip("/"))
    for local in NODE_LOCAL_DIRS:
        if normal == local or normal.startswith(local + "/"):
            return local
    return None


def node_local_message(shown: str, local: str, example: str) -> str:
    """Why a folder under ``local`` cannot hold a SLURM job's files, and the fix (``example``)."""
    return (f"{shown} is under {local}; /tmp, /var/tmp and /dev/shm are local to each node, so the job on a compute "
            "node would not see the files the agent writes on the login node. Use storage the login and compute "
            f"nodes share, e.g. {example}")



@dataclass(frozen=True)
class SlurmSettings:
    """What the agent needs to submit a run's worker: the backend's slurm settings, from the
    server or, for a hand-started agent, from ``--slurm-config slurm.json``."""

    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    gres: Optional[str] = None
    time: Optional[str] = None
    mem: Optional[str] = None
    cpus_per_task: Optional[int] = None
    constraint: Optional[str] = None
    extra_sbatch_args: Tuple[str, ...] = ()
    job_python: Optional[str] = None
    """The compute nodes' interpreter; None: the agent's ``--python``."""
    prelude: Tuple[str, ...] = ()
    """Shell lines run before the worker (``module load cuda/12.4``, an env's activation)."""
    poll_interval_s: float = SLURM_POLL_INTERVAL_S
    num_threads: Optional[int] = None
    container: Optional[ContainerSpec] = None
    """In slurm.json ``{"runtime": "apptainer" | "docker", "image": ..., "options": [...]}``."""

    @classmethod
    def from_json(cls, data: Any) -> "SlurmSettings":
        if not isinstance(data, dict):
            raise SlurmConfigError("must be a JSON object of slurm settings, e.g. "
                                   '{"partition": "gpu", "gres": "gpu:1", "time": "02:00:00"}')
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise SlurmConfigError(f"unknown key {unknown[0]!r}{did_you_mean(str(unknown[0]), sorted(known))}; "
                                   f"valid keys: {', '.join(sorted(known))}")
        values: Dict[str, Any] = {}
        for key, value in data.items():
            if value is None:
                continue
            if key in ("extra_sbatch_args", "prelude"):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise SlurmConfigError(f"{key} must be a list of strings, got {value!r}")
                values[key] = tuple(value)
            elif key in ("cpus_per_task", "num_threads"):
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise SlurmConfigError(f"{key} must be a whole number of at least 1, got {value!r}")
                values[key] = value
            elif key == "poll_interval_s":
                if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                    raise SlurmConfigError(f"poll_interval_s must be a number of seconds above 0, got {value!r}")
                values[key] = float(value)
            elif key == "container":
                try:
                    values[key] = ContainerSpec.from_json(value)
                except ValueError as bad:
                    raise SlurmConfigError(str(bad)) from None
            else:
                if not isinstance(value, (str, int)) or isinstance(value, bool):
                    raise SlurmConfigError(f"{key} must be text, got {value!r}")
                values[key] = str(value)
        return cls(**values)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for key in self.__dataclass_fields__:
            value = getattr(self, key)
            if value is None or value == ():
                continue
            if isinstance(value, ContainerSpec):
                out[key] = value.to_json()
            else:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out


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


# -- what the scheduler says ------------------------------------------------------------------------

SQUEUE_FORMAT = "%T|%r|%N"


@dataclass(frozen=True)
class QueueState:
    """One line of ``squeue -h -j ID -o '%T|%r|%N'``."""

    state: str
    reason: str
    nodes: str

    def line(self, job_id: str) -> str:
        """run.log's line for this state: ``SLURM job 4242: PENDING (Priority)``. A pending
        job always says why it waits: before the scheduler's first look at it, squeue's reason is
        ``None``, which the line says in words (a user never sees a bare "None")."""
        if self.state == "RUNNING":
            return running_line(job_id, self.nodes)
        if has_reason(self.reason):
            return f"SLURM job {job_id}: {self.state} ({self.reason})"
        if self.state == "PENDING":
            return f"SLURM job {job_id}: PENDING ({pending_words(self.reason)})"
        return f"SLURM job {job_id}: {self.state}"


def running_line(job_id: str, node: str) -> str:
    """run.log's line for a job that started: ``SLURM job 4242: RUNNING on node07``."""
    return f"SLURM job {job_id}: RUNNING on {node or 'an unnamed node'}"


def has_reason(reason: str) -> bool:
    """Whether squeue's ``%r`` names a reason: SLURM prints ``None`` (the word) when it has none."""
    return bool(reason) and reason != "None"


def parse_squeue(text: str) -> Optional[QueueState]:
    """The job's state, or None when squeue no longer lists it (it ended)."""
    for line in text.splitlines():
        if line.strip():
            parts = (line.strip().split("|") + ["", ""])[:3]
            return QueueState(parts[0].strip(), parts[1].strip(), parts[2].strip())
    return None


def squeue_says_gone(returncode: int, stderr: str) -> bool:
    """squeue's ``Invalid job id specified`` (rc 1): the job left SLURM's memory (MinJobAge)."""
    return returncode != 0 and "Invalid job id" in stderr


_FIELD = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(\S*)")


def parse_scontrol(text: str) -> Dict[str, str]:
    """``scontrol show job ID`` as a dict (JobState, Reason, ExitCode, NodeList, ...). Values with
    spaces (a Command path, a Comment) come out cut at the space, which none of the keys we read has."""
    return {key: value for key, value in _FIELD.findall(text)}


PENDING_REASONS: Mapping[str, str] = {
    "Resources": "waiting for a free node",
    "Priority": "other jobs are ahead in the queue",
    "None": "waiting for the scheduler's next pass",
    "PartitionConfig": "the request can never run in that partition, check the flags",
    "PartitionTimeLimit": "the time limit is above the partition's maximum; lower time",
    "PartitionNodeLimit": "the request needs more nodes than the partition has",
    "PartitionDown": "the partition is down",
    "PartitionInactive": "the partition is inactive",
    "ReqNodeNotAvail": "the nodes it needs are down, drained or reserved",
    "NodeDown": "a node it needs is down",
    "BeginTime": "it may not start yet (begin time)",
    "Dependency": "it waits for another job",
    "JobHeldUser": "it is held (scontrol release lets it run)",
    "JobHeldAdmin": "an administrator holds it",
    "Reservation": "it waits for its reservation",
    "Licenses": "it waits for a license",
    "InvalidAccount": "the account is not valid for this user; check account",
    "InvalidQOS": "the QOS is not valid for this user; check qos",
}


def pending_words(reason: str) -> str:
    """A pending reason in plain words for the step line."""
    if not has_reason(reason):
        return PENDING_REASONS["None"]
    if reason in PENDING_REASONS:
        return PENDING_REASONS[reason]
    if reason.startswith(("QOS", "Assoc", "MaxJobs", "MaxCpu", "MaxGRES", "MaxMem")):
        return "held by QOS or association limits (the cluster's caps per user, account or QOS)"
    return reason


def step_text(job_id: str, state: QueueState) -> str:
    """The run's step line for a queue state: SLURM's reason code after the words, when there is
    one and the words are not the code itself."""
    if state.state == "PENDING":
        words = pending_words(state.reason)
        code = f" ({state.reason})" if has_reason(state.reason) and state.reason != words else ""
        return f"SLURM job {job_id} pending: {words}{code}"
    if state.state == "RUNNING":
        return f"SLURM job {job_id} running on {state.nodes or 'a node'}"
    return f"SLURM job {job_id}: {state.state.lower()}"


@dataclass(frozen=True)
class Ended:
    """Why the scheduler ended a job before its worker finished: a reason code for the
    API and the page, and the message the run shows."""

    reason: Reason
    message: str


ENDED_BEFORE = "SLURM job {id} ended before the worker finished: "


def explain_end(job_id: str, scontrol: Optional[Mapping[str, str]], slurm_out: str,
                settings: SlurmSettings) -> Optional[Ended]:
    """The scheduler's reason a job ended early, from ``scontrol show job`` (while SLURM still
    knows the job) and ``slurm.out`` (which outlives MinJobAge); None when neither tells.

    slurm.out is read first for memory: without cgroups a memory kill leaves the state FAILED
    (indistinguishable from any kill -9) and only slurmstepd's line says what happened.
    """
    state = (scontrol or {}).get("JobState", "")
    head = ENDED_BEFORE.format(id=job_id)
    if "Exceeded job memory limit" in slurm_out or "oom-kill" in slurm_out or state == "OUT_OF_MEMORY":
        limit = f" of {settings.mem}" if settings.mem else ""
        return Ended(Reason.OOM, f"{head}it ran out of memory (more than its limit{limit}). Raise mem in the "
                                 "backend's settings, or train with a smaller batch or model.")
    if state in ("TIMEOUT", "DEADLINE") or "DUE TO TIME LIMIT" in slurm_out:
        limit = f"It had time: {settings.time}; raise" if settings.time else "Set"
        return Ended(Reason.TIME_LIMIT, f"{head}it reached its time limit. {limit} time in the backend's settings, "
                                        "or train on fewer items.")
    if state in ("NODE_FAIL", "BOOT_FAIL") or "DUE TO NODE FAILURE" in slurm_out:
        node = (scontrol or {}).get("NodeList") or "its node"
        return Ended(Reason.NODE_LOST, f"{head}its node failed ({node}). Start the run again; SLURM places it "
                                       "on a working node.")
    if state == "PREEMPTED" or "DUE TO PREEMPTION" in slurm_out:
        return Ended(Reason.PREEMPTED, f"{head}it was preempted by a job with a higher priority. Start the run "
                                       "again, or use a partition or qos that is not preemptible.")
    if state == "CANCELLED" or re.search(r"\*\*\* JOB \d+ ON \S+ CANCELLED AT ", slurm_out):
        return Ended(Reason.SCANCELLED, f"{head}it was cancelled outside Potato (scancel). Start the run again "
                                        "if that was not meant.")
    return None


def lost_message(job_id: str, slurm_out: str) -> str:
    """A job that left the queue with no exit_code and nothing in scontrol or slurm.out that says why."""
    last = [line for line in slurm_out.splitlines() if line.strip()][-1:] or ["(empty)"]
    return (f"SLURM job {job_id} is no longer in the queue and its worker left no exit_code; SLURM no longer "
            f"knows the job, and the last line of slurm.out is: {last[0][:300]}")


def exit_status(scontrol: Optional[Mapping[str, str]]) -> Optional[int]:
    """scontrol's ``ExitCode=code:signal`` as a shell would report it (signal 9 -> 137)."""
    match = re.fullmatch(r"(\d+):(\d+)", (scontrol or {}).get("ExitCode", ""))
    if not match:
        return None
    code, sig = int(match.group(1)), int(match.group(2))
    return 128 + sig if sig else code


@dataclass
class Cluster:
    """What ``sinfo`` says the cluster offers, for the check: can a request ever run?"""

    partitions: Dict[str, Dict[str, Any]] = field(default_factory=dict)


def parse_sinfo(text: str) -> Cluster:
    """``sinfo -h -o '%P|%c|%m|%G|%a'`` (partition, CPUs per node, MB per node, gres, up/down)."""
    cluster = Cluster()
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 5:
            continue
        name = parts[0].rstrip("*")
        entry = cluster.partitions.setdefault(name, {"cpus": 0, "mem_mb": 0, "gres": set(), "up": False,
                                                     "default": parts[0].endswith("*")})
        entry["cpus"] = max(entry["cpus"], _int(parts[1]))
        entry["mem_mb"] = max(entry["mem_mb"], _int(parts[2]))
        entry["gres"].update(g for g in parts[3].split(",") if g and g != "(null)")
        entry["up"] = entry["up"] or parts[4] == "up"
    return cluster


def _int(text: str) -> int:
    match = re.match(r"\d+", text.strip())
    return int(match.group(0)) if match else 0


_MEM = re.compile(r"(\d+)([KMGT]?)B?", re.IGNORECASE)


def mem_mb(text: str) -> Optional[int]:
    """A SLURM ``--mem`` value in MB (default unit M), None when not a plain size."""
    match = _MEM.fullmatch(text.strip())
    if not match:
        return None
    scale = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[match.group(2).upper()]
    return int(int(match.group(1)) * scale)


def never_runs(settings: SlurmSettings, cluster: Cluster) -> List[str]:
    """What in the request no node of the partition can satisfy (the job would pend forever with
    PartitionConfig, or sbatch would refuse it)."""
    if not cluster.partitions:
        return []
    name = settings.partition or next((n for n, p in cluster.partitions.items() if p["default"]), None)
    if name is None:
        return ["no partition is set and the cluster has no default partition; set partition"]
    part = cluster.partitions.get(name)
    if part is None:
        return [f"partition {name} does not exist; this cluster has {', '.join(sorted(cluster.partitions))}"]
    problems = []
    if settings.cpus_per_task and part["cpus"] and settings.cpus_per_task > part["cpus"]:
        problems.append(f"cpus_per_task is {settings.cpus_per_task}, but the largest node in partition {name} has "
                        f"{part['cpus']} CPUs: the job would wait forever (PartitionConfig)")
    wanted = mem_mb(settings.mem) if settings.mem else None
    if wanted and part["mem_mb"] and wanted > part["mem_mb"]:
        problems.append(f"mem is {settings.mem}, but the largest node in partition {name} has {part['mem_mb']} MB")
    if settings.gres:
        kind = settings.gres.split(":")[0]
        if not any(g.split(":")[0] == kind for g in part["gres"]):
            problems.append(f"gres is {settings.gres}, but no node in partition {name} has {kind} gres")
    if not part["up"]:
        problems.append(f"partition {name} is down")
    return problems


def gres_gpus(gres: Optional[str]) -> int:
    """How many GPUs a job's ``gres`` asks for on its node: ``gpu:2`` and ``gpu:a100:2`` are 2, ``gpu`` 1,
    none or another resource 0 (pure)."""
    total = 0
    for part in (gres or "").split(","):
        fields = part.strip().split(":")
        if fields[0] != "gpu":
            continue
        count = fields[-1].split("(")[0] if len(fields) > 1 else "1"
        total += int(count) if count.isdigit() else 1
    return total


def gpus_line(gres: Optional[str]) -> Optional[str]:
    """check's line for a job given several GPUs (None for one or none)."""
    n = gres_gpus(gres)
    if n < 2:
        return None
    return (f"A run gets {n} GPUs on one node (gres {gres}); a torch trainer trains data-parallel on all {n} "
            "(one process per GPU), the others use the first.")

