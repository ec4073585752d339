"""SLURM, what the scheduler says: ``squeue``, ``scontrol show job`` and ``sinfo`` output read
as pure functions, and put in plain words: why a job waits, why it ended, whether a request can
ever run.

Remote-safe: standard library only, Python 3.8. The agent on a login node uses these through
:class:`potato.training.slurm.job.SlurmJob`, which runs the commands; everything here is tested on
pasted real SLURM 22.05 output without a cluster. Separate from :mod:`potato.training.slurm.script`
(the text Potato writes for SLURM): this side parses text Potato does not control.

Two rules from how SLURM behaves: the worker's own ``exit_code`` file is the truth about how it
ended, and the scheduler (``scontrol``, ``slurm.out``) is only the explanation; and Potato never
calls ``srun`` or ``sacct`` (a cluster without accounting has no ``sacct``, and a job step is not
needed to run one process).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from potato.training.job.results import Reason
from potato.training.slurm.settings import SlurmSettings

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


def gone_status(scontrol: Optional[Mapping[str, str]]) -> int:
    """The exit status of a job that left the queue while its worker's ``exit_code`` never appeared:
    scontrol's ``ExitCode`` (:func:`exit_status`), but never 0, and 1 when SLURM no longer knows the job.

    job.sh writes ``exit_code`` whenever it runs to its end, so a job without one did not: SLURM
    ended it, or ended it before it started. For a job cancelled while it waited in the queue
    scontrol says ``ExitCode=0:0``; taken for the worker's status, that 0 read as a worker that
    exited 0 without a result, and the scheduler's reason was never asked for (issue 42).
    """
    status = exit_status(scontrol)
    return status if status else 1


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
