#!/usr/bin/env python3
"""A stand-in for sbatch, squeue, scontrol and scancel, for the two faults the real test cluster
cannot show cheaply: preemption and node failure. Everything else is tested on the real SLURM.

Installed as symlinks named after the commands (``install(folder)``) and put first on the
backend's PATH; it keeps each job's state in ``$STANDIN_STATE/<id>.json`` and prints what SLURM
22.05 prints (the same formats the real-cluster tests see). A job runs its script with bash, in a
session of its own, as sbatch would on a node. ``preempt`` and ``fail_node`` (``slurm_standin.py
preempt|fail_node STATE_DIR JOB_ID``, run on the login node beside the jobs) are what the scheduler does: TERM to every process then KILL (preemption, with slurmstepd's line
in slurm.out), or KILL at once with nothing written (the node is gone).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

NODE = "standin-node"
COMMANDS = ("sbatch", "squeue", "scontrol", "scancel")


def install(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in COMMANDS:
        link = folder / name
        if not link.exists():
            link.symlink_to(Path(__file__).resolve())


def _state_dir() -> Path:
    return Path(os.environ["STANDIN_STATE"])


def _load(state: Path, job_id: str) -> dict | None:
    try:
        return json.loads((state / f"{job_id}.json").read_text())
    except (OSError, ValueError):
        return None


def _save(state: Path, job: dict) -> None:
    tmp = state / f".{job['id']}.tmp"
    tmp.write_text(json.dumps(job))
    os.replace(tmp, state / f"{job['id']}.json")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) is not running
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _refresh(state: Path, job: dict) -> dict:
    if job["state"] == "RUNNING" and not _alive(job["pid"]):
        job["state"] = "COMPLETED"
        _save(state, job)
    return job


def sbatch(argv: list[str]) -> int:
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    script = argv[-1]
    state = _state_dir()
    ids = sorted(int(p.stem) for p in state.glob("[0-9]*.json"))
    job_id = str((ids[-1] if ids else 100) + 1)
    out = open(opts.get("output", "slurm.out"), "ab")
    env = dict(os.environ, SLURM_JOB_ID=job_id, SLURMD_NODENAME=NODE)
    proc = subprocess.Popen(["bash", script], cwd=opts.get("chdir", "."), stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True, env=env)
    _save(state, {"id": job_id, "pid": proc.pid, "state": "RUNNING", "output": opts.get("output", "slurm.out")})
    print(job_id)
    return 0


def squeue(argv: list[str]) -> int:
    job_id = argv[argv.index("-j") + 1]
    job = _load(_state_dir(), job_id)
    if job is None:
        print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
        return 1
    if _refresh(_state_dir(), job)["state"] == "RUNNING":
        print(f"RUNNING|None|{NODE}")
    return 0


def scontrol(argv: list[str]) -> int:
    job = _load(_state_dir(), argv[-1])
    if job is None:
        print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
        return 1
    job = _refresh(_state_dir(), job)
    exit_code = {"PREEMPTED": "0:15", "NODE_FAIL": "0:9", "CANCELLED": "0:15"}.get(job["state"], "0:0")
    print(f"JobId={job['id']} JobName=standin\n   JobState={job['state']} Reason=None Dependency=(null)\n"
          f"   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode={exit_code}\n   NodeList={NODE}")
    return 0


def scancel(argv: list[str]) -> int:
    state = _state_dir()
    job = _load(state, argv[-1])
    if job is None:
        return 0  # as SLURM: an unknown id is no error
    if "--full" not in argv:
        job["state"] = "CANCELLED"
        _save(state, job)
    _killpg(job["pid"], signal.SIGTERM)
    return 0


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def preempt(state: Path, job_id: str) -> None:
    """What a preemption (PreemptMode=CANCEL) does: TERM to every process, KILL after a grace."""
    job = _load(state, job_id)
    assert job is not None, f"no stand-in job {job_id}"
    job["state"] = "PREEMPTED"
    _save(state, job)
    with open(job["output"], "a") as out:
        out.write(f"slurmstepd: error: *** JOB {job_id} ON {NODE} CANCELLED AT "
                  f"{time.strftime('%Y-%m-%dT%H:%M:%S')} DUE TO PREEMPTION ***\n")
    _killpg(job["pid"], signal.SIGTERM)


def fail_node(state: Path, job_id: str) -> None:
    """The node is gone: every process of the job dies at once and nothing more is written."""
    job = _load(state, job_id)
    assert job is not None, f"no stand-in job {job_id}"
    job["state"] = "NODE_FAIL"
    _save(state, job)
    _killpg(job["pid"], signal.SIGKILL)


def main() -> int:
    name = Path(sys.argv[0]).name
    commands = {"sbatch": sbatch, "squeue": squeue, "scontrol": scontrol, "scancel": scancel}
    faults = {"preempt": preempt, "fail_node": fail_node}
    if name in commands:
        return commands[name](sys.argv[1:])
    if len(sys.argv) == 4 and sys.argv[1] in faults:  # the scheduler's act: slurm_standin.py FAULT STATE JOB
        faults[sys.argv[1]](Path(sys.argv[2]), sys.argv[3])
        return 0
    print(f"slurm_standin: run me as one of {', '.join(COMMANDS)}, or as slurm_standin.py "
          f"{'|'.join(faults)} STATE_DIR JOB_ID", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
