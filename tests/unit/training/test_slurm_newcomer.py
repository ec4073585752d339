"""The slurm backend's newcomer problems (issue 21; R26, R28, R29, R31) without a cluster: queue
states on squeue's real output, the job's own word that it started, a failing prelude line in a
job.sh that bash really runs, and a hand-started agent's
``--slurm-config`` and ``--workdir`` on its real command line. The same behaviour on the real
SLURM: tests/integration/test_slurm_newcomer.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from potato.config import validate
from potato.training.job.results import Reason
from potato.training.slurm.script import job_script, prelude_failure
from potato.training.slurm.settings import SlurmConfigError, SlurmSettings
from potato.training.slurm.state import QueueState, parse_squeue, step_text
from potato.training.slurm.job import SlurmJob
from tests.harness.slurmfakes import Clock, FakeSlurm

# What squeue -h -j ID -o '%T|%r|%N' printed on the test cluster right after sbatch (SLURM 22.05).
SQUEUE_JUST_SUBMITTED = "PENDING|None|\n"

# slurm.out of a job whose prelude was ["export A=1", "module load cuda"], from the test cluster.
SLURM_OUT_PRELUDE_FAILED = """\
job.sh: SLURM job 153 on vm, CUDA_VISIBLE_DEVICES=none
/tmp/potato-testcluster/spool/slurmd.vm/job00153/slurm_script: line 16: module: command not found
job.sh: prelude line 2 failed (exit 127): module load cuda
"""
SCONTROL_PRELUDE_FAILED = """\
JobId=153 JobName=potato-r1
   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=127:0
   NodeList=vm
"""


# -- 1. a pending job says why, never "None" ---------------------------------------------------------

def test_a_job_the_scheduler_has_not_looked_at_yet_says_so_in_words() -> None:
    """Issue 21 (R29): the log said ``SLURM job 2: PENDING`` and the step line
    ``... waiting for the scheduler's next pass (None)``."""
    state = parse_squeue(SQUEUE_JUST_SUBMITTED)
    assert state is not None
    assert state.line("2") == "SLURM job 2: PENDING (waiting for the scheduler's next pass)"
    assert step_text("2", state) == "SLURM job 2 pending: waiting for the scheduler's next pass"
    assert QueueState("PENDING", "Priority", "").line("4242") == "SLURM job 4242: PENDING (Priority)"  # the tutorial's
    # a reason Potato has no words for is said once, not "pending: BadConstraints (BadConstraints)"
    assert step_text("2", QueueState("PENDING", "BadConstraints", "")) == "SLURM job 2 pending: BadConstraints"


def _submit(tmp_path: Path, squeue: List[str], log: List[str], steps: List[str], clock: Clock) -> SlurmJob:
    fake = FakeSlurm([(0, text, "") for text in squeue], scontrol=SCONTROL_PRELUDE_FAILED)
    return SlurmJob.submit(tmp_path, SlurmSettings(poll_interval_s=60), "r1", sys.executable, "/code",
                           str(tmp_path), "login1", log.append, steps.append, run=fake, clock=clock)


# -- 2. the job's own start, and a step line that only goes forward ---------------------------------

def test_a_job_that_ends_between_two_squeue_calls_is_logged_running_on_its_node(tmp_path: Path) -> None:
    """Issue 21 (R29): squeue saw the job pending, then never again before it ended; the log had
    no RUNNING line. job.sh's slurm_started names the node."""
    clock, log, steps = Clock(), [], []
    job = _submit(tmp_path, [SQUEUE_JUST_SUBMITTED], log, steps, clock)
    assert job.poll() is None
    (tmp_path / "slurm_started").write_text("node07 1796189253\n")
    (tmp_path / "events.jsonl").write_text('{"t": 1796189254.0, "type": "step", "text": "reading the job"}\n')
    (tmp_path / "exit_code").write_text("0\n")
    clock.now += 2
    assert job.poll() == 0
    assert log[1:] == ["SLURM job 4242: PENDING (waiting for the scheduler's next pass)",
                       "SLURM job 4242: RUNNING on node07"]
    # the worker already spoke: its step stands
    assert steps == ["SLURM job 4242 submitted", "SLURM job 4242 pending: waiting for the scheduler's next pass"]


def test_squeue_seeing_the_job_run_late_neither_logs_it_twice_nor_moves_the_step_back(tmp_path: Path) -> None:
    """Issue 21 (R29): the step line went from ``training on 26 items (5%)`` back to
    ``SLURM job 3 running on vm`` when squeue's next answer came."""
    clock, log, steps = Clock(), [], []
    job = _submit(tmp_path, [SQUEUE_JUST_SUBMITTED, "RUNNING|None|node07\n"], log, steps, clock)
    assert job.poll() is None
    (tmp_path / "slurm_started").write_text("node07 1796189253\n")
    clock.now += 0.2
    assert job.poll() is None  # the job's word, before the worker said anything: the step may say it
    assert steps[-1] == "SLURM job 4242 running on node07"
    (tmp_path / "events.jsonl").write_text('{"t": 1, "type": "step", "text": "training on 26 items (5%)"}\n')
    clock.now += 60
    assert job.poll() is None  # squeue now says RUNNING
    assert [line for line in log if "RUNNING" in line] == ["SLURM job 4242: RUNNING on node07"]
    assert steps[-1] == "SLURM job 4242 running on node07" and len(steps) == 3


def test_job_sh_says_where_it_started_before_its_prelude(tmp_path: Path) -> None:
    """The marker comes from job.sh itself, run here by bash as sbatch would run it on a node."""
    job, code, out = _run_job(tmp_path, ("export A=1",), "exit 0")
    assert code == 0
    node, when = (job / "slurm_started").read_text().split()
    assert node == "node07" and when.isdigit()


# -- 3. a prelude line that fails --------------------------------------------------------------------

def _run_job(tmp_path: Path, prelude: tuple, worker_body: str) -> tuple:
    """job.sh for real, by bash, with a stand-in interpreter; stdout+stderr as slurm.out would hold."""
    job = tmp_path / "job"
    job.mkdir()
    python = tmp_path / "python"
    python.write_text(f"#!/bin/bash\necho worker ran >> {tmp_path}/ran\n{worker_body}\n")
    python.chmod(0o755)
    (job / "job.sh").write_text(job_script(SlurmSettings(prelude=prelude), "r1", str(python), str(job),
                                           str(tmp_path / "code"), str(tmp_path)))
    env = {k: v for k, v in os.environ.items() if k != "SLURMD_NODENAME"}
    env.update(SLURM_JOB_ID="153", SLURMD_NODENAME="node07", PATH="/usr/bin:/bin")
    out = subprocess.run(["bash", str(job / "job.sh")], cwd=str(job), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=30)
    return job, out.returncode, out.stdout


def test_a_failing_prelude_line_ends_the_job_names_itself_and_the_worker_never_runs(tmp_path: Path) -> None:
    """Issue 21 (R26): ``module load cuda`` failed, slurm.out said ``module: command not found``,
    and the worker ran anyway; the run succeeded and nobody was told."""
    job, code, out = _run_job(tmp_path, ("export A=1", "module load cuda  # the GPU toolkit", "echo after"),
                              "exit 0")
    assert code == 127 and (job / "exit_code").read_text() == "127\n"
    assert not (tmp_path / "ran").exists() and "after" not in out.split("\n")
    failed = prelude_failure(out)
    assert failed is not None and (failed.number, failed.status) == (2, 127)
    assert failed.describe() == ("prelude line 2 (`module load cuda  # the GPU toolkit`) failed with exit 127: "
                                 "module: command not found")
    # the way out the message names: a line that may fail says so itself
    again = tmp_path / "again"
    again.mkdir()
    job, code, out = _run_job(again, ("module load cuda || true", "if true; then A=1; fi"), "exit 0")
    assert code == 0 and (again / "ran").exists() and prelude_failure(out) is None


def test_the_run_fails_naming_the_prelude_line_from_the_real_slurm_out(tmp_path: Path) -> None:
    clock, log, steps = Clock(), [], []
    job = _submit(tmp_path, [SQUEUE_JUST_SUBMITTED], log, steps, clock)
    (tmp_path / "slurm.out").write_text(SLURM_OUT_PRELUDE_FAILED)
    (tmp_path / "exit_code").write_text("127\n")
    assert job.poll() == 127
    stop = job.ended_by()
    assert stop is not None and stop.reason is Reason.ERROR
    assert stop.message == (
        "SLURM job 4242 stopped before the worker started: prelude line 2 (`module load cuda`) failed with exit "
        "127: module: command not found. Fix that line in the backend's prelude (try it by hand on a compute "
        "node), remove it, or end it with `|| true` if it may fail.")
    assert "SLURM job 4242 ended: JobState=FAILED Reason=NonZeroExitCode ExitCode=127:0" in log
    assert not any("None" in line for line in log)


# -- 4. a hand-started agent's --slurm-config and --workdir -------------------------------------------

def _agent(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, POTATO_TRAINING_TOKEN="t" * 43)
    return subprocess.run([sys.executable, "-m", "potato.training.agent", "--server", "http://127.0.0.1:9",
                           "--backend", "login", "--once", *args], capture_output=True, text=True, timeout=60,
                          env=env, cwd=str(tmp_path))


def test_settings_name_the_key_a_misspelt_one_meant() -> None:
    with pytest.raises(SlurmConfigError,
                       match=r"^unknown key 'gress' \(did you mean 'gres'\?\); valid keys: account, "):
        SlurmSettings.from_json({"gress": "gpu:1"})
    with pytest.raises(SlurmConfigError, match=r"^unknown key 'flavour'; valid keys: "):
        SlurmSettings.from_json({"flavour": "x"})


def test_a_hand_started_agent_suggests_the_key_a_misspelt_one_meant(tmp_path: Path) -> None:
    """Issue 21 (R31): ``gress`` in slurm.json got the list of keys but no "did you mean"."""
    (tmp_path / "slurm.json").write_text('{"gress": "gpu:1"}')
    out = _agent(tmp_path, "--slurm-config", "slurm.json", "--workdir", str(tmp_path / "jobs"))
    assert out.returncode == 1
    assert "error: --slurm-config slurm.json: unknown key 'gress' (did you mean 'gres'?); valid keys: " in out.stdout


def test_a_hand_started_agent_refuses_a_node_local_workdir_as_the_config_refuses_remote_dir(tmp_path: Path) -> None:
    """Issue 21 (R26, R31): the config refuses remote_dir under /tmp; the agent took the same
    folder as --workdir without a word. The same rule and words now, before any folder is made."""
    (tmp_path / "slurm.json").write_text('{"mem": "1G"}')
    workdir = f"/tmp/potato-newcomer-{os.getpid()}/jobs"
    try:
        out = _agent(tmp_path, "--slurm-config", "slurm.json", "--workdir", workdir)
    finally:
        made = Path(workdir).parent.exists()
        shutil.rmtree(Path(workdir).parent, ignore_errors=True)
    assert out.returncode == 1, out.stdout + out.stderr
    said = f"--workdir {workdir} is under /tmp; /tmp, /var/tmp and /dev/shm are local to each node, so the job on a " \
           "compute node would not see the files the agent writes on the login node. Use storage the login and " \
           "compute nodes share, e.g. "
    assert f"error: {said}--workdir /shared/projects/me/potato-training" in out.stdout
    assert not made  # refused before any folder was made
    backend = {"type": "slurm", "host": "login", "remote_dir": workdir}
    report = validate({"model_training": {"backends": {"c": backend}}}, tmp_path / "config.yaml")
    assert any(said.replace(f"--workdir {workdir}", repr(workdir)) + "remote_dir: /shared/projects/me/potato-training"
               in str(issue) for issue in report.errors), report.errors
