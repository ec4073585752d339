"""SLURM as pure functions (R24-R30, E8, E9), on output pasted from the real SLURM 22.05 in
scripts/test-infra: the job script (also run for real by bash), the sbatch command line, squeue
and scontrol, the reasons a job waits or ended; and SlurmJob's cadence and explanations with
SLURM's commands answered from those pastes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from potato.training.launch.containers import ContainerSpec
from potato.training.job.results import Reason
from potato.training.slurm.script import job_script, sbatch_argv, worker_command
from potato.training.slurm.settings import SlurmConfigError, SlurmSettings
from potato.training.slurm.state import (
    ENDED_BEFORE,
    QueueState,
    exit_status,
    explain_end,
    gone_status,
    mem_mb,
    never_runs,
    parse_scontrol,
    parse_sinfo,
    parse_squeue,
    pending_words,
    squeue_says_gone,
    step_text,
)
from potato.training.slurm.job import LOST_GRACE_S, SlurmError, SlurmJob
from tests.harness.slurmfakes import Clock, FakeSlurm

PASTED = Path(__file__).parent / "slurm_output"


def pasted(name: str) -> str:
    return (PASTED / name).read_text()


# -- job.sh -----------------------------------------------------------------------------------------

HOSTILE = "/shared/it's here"


def reference_script() -> str:
    settings = SlurmSettings(prelude=("module load cuda/12.4", "source /shared/envs/torch/bin/activate"),
                             num_threads=4)
    return job_script(settings, "20261201-101500-ab12", "/shared/envs/torch/bin/python",
                      f"{HOSTILE}/jobs/20261201-101500-ab12", f"{HOSTILE}/code/cf2aaf2eb49ec971", HOSTILE)


def test_job_script_is_the_reference_file() -> None:
    """The reference job.sh (prelude, thread caps, a folder with a quote in its name) is reviewed by
    hand; a change to the generator shows up here as a diff to review again."""
    assert reference_script() == pasted("job.sh")


def test_job_script_quotes_a_hostile_folder_and_runs_the_prelude_first() -> None:
    text = reference_script()
    assert "cd '/shared/it'\"'\"'s here/jobs/20261201-101500-ab12' || exit 1" in text
    assert text.index("module load cuda/12.4") < text.index("potato.training.worker")
    assert text.index("trap ") < text.index("potato.training.worker")  # no window where TERM kills the script


def _run_script(tmp_path: Path, worker_body: str, signal_after: float | None = None) -> Tuple[Path, int]:
    """job.sh for real, by bash, with a stand-in interpreter that runs ``worker_body`` (shell)."""
    job = tmp_path / "job dir; touch pwned"
    job.mkdir()
    python = tmp_path / "python"
    python.write_text(f"#!/bin/bash\n{worker_body}\n")
    python.chmod(0o755)
    script = job / "job.sh"
    script.write_text(job_script(SlurmSettings(), "r1", str(python), str(job), str(tmp_path / "code"), str(tmp_path)))
    proc = subprocess.Popen(["bash", str(script)], cwd=str(tmp_path), start_new_session=True)
    if signal_after is not None:
        time.sleep(signal_after)
        os.killpg(proc.pid, signal.SIGTERM)  # as SLURM does: every process of the job at once
    return job, proc.wait(timeout=30)


def test_job_script_writes_exit_code_when_the_worker_could_not(tmp_path: Path) -> None:
    job, code = _run_script(tmp_path, "exit 7")
    assert code == 7 and (job / "exit_code").read_text() == "7\n"
    assert not (tmp_path / "pwned").exists() and not (job.parent / "pwned").exists()


def test_job_script_makes_the_job_s_files_private_whatever_the_node_s_umask(tmp_path: Path) -> None:
    """Shared storage is read by every account of the cluster: what the job writes is the user's only."""
    old = os.umask(0o022)  # a compute node's usual default, inherited by the script
    try:
        job, code = _run_script(tmp_path, "echo '{}' > predictions.jsonl; mkdir artifacts; exit 3")
    finally:
        os.umask(old)
    assert code == 3
    written = [job / "predictions.jsonl", job / "artifacts", job / "worker.out", job / "exit_code"]
    assert {p.name: oct(p.stat().st_mode & 0o077) for p in written} == {p.name: "0o0" for p in written}


def test_job_script_keeps_the_workers_own_exit_code(tmp_path: Path) -> None:
    job, code = _run_script(tmp_path, 'echo 0 > exit_code; exit 3')
    assert code == 3 and (job / "exit_code").read_text() == "0\n"


def test_job_script_outlives_a_term_to_every_process_and_passes_on_none(tmp_path: Path) -> None:
    """A time limit or scancel signals the script and the worker together: the worker gets exactly
    one TERM (a second is its "stop at once"), and the script waits for it to finish saving."""
    body = ('n=0; trap \'n=$((n+1)); echo "term $n" >> terms\' TERM; '
            'for i in $(seq 40); do sleep 0.05; done; echo 143 > exit_code; exit 143')
    job, code = _run_script(tmp_path, body, signal_after=0.5)
    assert (job / "terms").read_text() == "term 1\n"
    assert code == 143 and (job / "exit_code").read_text() == "143\n"


def test_container_runs_the_worker_inside_with_the_shared_folder_at_the_same_path() -> None:
    apptainer = SlurmSettings(container=ContainerSpec("apptainer", "/shared/images/worker.sif", ("--contain",)))
    line = worker_command(apptainer, "/shared/envs/torch/bin/python", "/shared/p/jobs/r1", "/shared/p/code/h", "/shared/p")
    assert line.startswith("apptainer exec --nv --cleanenv --env PYTHONPATH=/shared/p/code/h")
    assert "--bind /shared/p:/shared/p --pwd /shared/p/jobs/r1 --contain /shared/images/worker.sif python3 -m " in line
    docker = SlurmSettings(container=ContainerSpec("docker", "potato-worker:cuda"))
    line = worker_command(docker, "python3", "/shared/p/jobs/r1", "/shared/p/code/h", "/shared/p")
    assert line.startswith('docker run --rm --init --user "$(id -u):$(id -g)" ')
    assert '${CUDA_VISIBLE_DEVICES:+--gpus "device=${CUDA_VISIBLE_DEVICES}"}' in line and "-v /shared/p:/shared/p" in line


# -- sbatch ---------------------------------------------------------------------------------------

def test_sbatch_argv_maps_every_setting_to_its_flag_and_extra_args_come_last() -> None:
    settings = SlurmSettings(partition="gpu", account="nlp", qos="normal", gres="gpu:a100:1", time="02:00:00",
                             mem="32G", cpus_per_task=8, constraint="a100", extra_sbatch_args=("--exclusive",))
    argv = sbatch_argv(settings, "/shared/p/jobs/r1", "r1")
    assert argv == ["sbatch", "--parsable", "--job-name=potato-r1", "--output=/shared/p/jobs/r1/slurm.out",
                    "--chdir=/shared/p/jobs/r1", "--partition=gpu", "--account=nlp", "--qos=normal",
                    "--gres=gpu:a100:1", "--time=02:00:00", "--mem=32G", "--cpus-per-task=8", "--constraint=a100",
                    "--exclusive", "/shared/p/jobs/r1/job.sh"]
    assert sbatch_argv(SlurmSettings(), "/j", "r")[-2:] == ["--chdir=/j", "/j/job.sh"]  # no gres: no GPU


def test_settings_from_json_name_the_bad_key() -> None:
    with pytest.raises(SlurmConfigError, match="unknown key 'partiton' \\(did you mean 'partition'\\?\\); valid keys: account, constraint, "):
        SlurmSettings.from_json({"partiton": "gpu"})
    with pytest.raises(SlurmConfigError, match="cpus_per_task must be a whole number"):
        SlurmSettings.from_json({"cpus_per_task": "8"})
    settings = SlurmSettings(gres="gpu:1", prelude=("module load cuda",), poll_interval_s=5.0)
    assert SlurmSettings.from_json(settings.to_json()) == settings


# -- squeue, scontrol ----------------------------------------------------------------------------

def test_squeue_lines_as_slurm_prints_them() -> None:
    assert parse_squeue("PENDING|Resources|\n") == QueueState("PENDING", "Resources", "")
    assert parse_squeue("RUNNING|None|vm\n") == QueueState("RUNNING", "None", "vm")
    assert parse_squeue("") is None  # a finished job: nothing, rc 0
    assert squeue_says_gone(1, "slurm_load_jobs error: Invalid job id specified\n")
    assert not squeue_says_gone(1, "squeue: error: Unable to contact slurm controller (connect failure)")
    lines = pasted("squeue-all.txt").splitlines()
    assert [parse_squeue(line.split("|", 1)[1]) for line in lines][:2] == [
        QueueState("PENDING", "Resources", ""), QueueState("PENDING", "Priority", "")]


def test_queue_state_lines_and_step_texts() -> None:
    assert QueueState("PENDING", "Priority", "").line("4242") == "SLURM job 4242: PENDING (Priority)"
    assert QueueState("RUNNING", "None", "node07").line("4242") == "SLURM job 4242: RUNNING on node07"
    assert QueueState("PENDING", "None", "").line("4242") == \
        "SLURM job 4242: PENDING (waiting for the scheduler's next pass)"  # issue 21: never a bare "None"
    assert step_text("4242", QueueState("PENDING", "Resources", "")) == \
        "SLURM job 4242 pending: waiting for a free node (Resources)"
    assert pending_words("Priority") == "other jobs are ahead in the queue"
    assert pending_words("QOSMaxJobsPerUserLimit").startswith("held by QOS or association limits")
    assert pending_words("AssocGrpGRES").startswith("held by QOS or association limits")
    assert pending_words("PartitionConfig") == "the request can never run in that partition, check the flags"


def test_scontrol_fields_and_exit_status() -> None:
    fields = parse_scontrol(pasted("timeout.scontrol"))
    assert (fields["JobState"], fields["Reason"], fields["ExitCode"], fields["NodeList"]) == \
        ("TIMEOUT", "TimeLimit", "0:15", "vm")
    assert exit_status(fields) == 143
    assert exit_status(parse_scontrol(pasted("memory.scontrol"))) == 137
    assert exit_status({"ExitCode": "3:0"}) == 3 and exit_status({}) is None


@pytest.mark.parametrize("case, reason, words", [
    ("timeout", Reason.TIME_LIMIT, "it reached its time limit."),
    ("memory", Reason.OOM, "it ran out of memory (more than its limit of 50M)."),
    ("scancel", Reason.SCANCELLED, "it was cancelled outside Potato (scancel)."),
])
def test_the_scheduler_s_reason_from_real_output(case: str, reason: Reason, words: str) -> None:
    settings = SlurmSettings(mem="50M", time="00:00:30")
    ended = explain_end("4242", parse_scontrol(pasted(f"{case}.scontrol")), pasted(f"{case}.slurm.out"), settings)
    assert ended is not None and ended.reason is reason
    assert ended.message.startswith(f"SLURM job 4242 ended before the worker finished: {words}")


def test_slurm_out_explains_after_slurm_forgot_the_job() -> None:
    """Past MinJobAge scontrol knows nothing; slurm.out still says why (E9)."""
    ended = explain_end("4242", None, pasted("timeout.slurm.out"), SlurmSettings())
    assert ended is not None and ended.message.startswith(
        "SLURM job 4242 ended before the worker finished: it reached its time limit.")
    memory = explain_end("7", None, pasted("memory.slurm.out"), SlurmSettings())
    assert memory is not None and memory.reason is Reason.OOM  # not "cancelled": slurm.out has both lines


def test_preemption_and_node_failure_as_scontrol_prints_them() -> None:
    preempted = explain_end("9", {"JobState": "PREEMPTED", "Reason": "None"}, "", SlurmSettings())
    assert preempted is not None and preempted.reason is Reason.PREEMPTED
    node = explain_end("9", {"JobState": "NODE_FAIL", "NodeList": "node07"}, "", SlurmSettings())
    assert node is not None and node.reason is Reason.NODE_LOST and "(node07)" in node.message
    assert explain_end("9", {"JobState": "FAILED", "Reason": "NonZeroExitCode"}, "", SlurmSettings()) is None


def test_what_the_cluster_can_never_run() -> None:
    cluster = parse_sinfo(pasted("sinfo.txt"))  # debug*|2|24105|(null)|up
    assert never_runs(SlurmSettings(), cluster) == []
    problems = never_runs(SlurmSettings(cpus_per_task=4, mem="100G", gres="gpu:1"), cluster)
    assert problems == [
        "cpus_per_task is 4, but the largest node in partition debug has 2 CPUs: the job would wait forever "
        "(PartitionConfig)",
        "mem is 100G, but the largest node in partition debug has 24105 MB",
        "gres is gpu:1, but no node in partition debug has gpu gres",
    ]
    assert never_runs(SlurmSettings(partition="gpu"), cluster) == ["partition gpu does not exist; this cluster has debug"]
    assert mem_mb("32G") == 32768 and mem_mb("500") == 500 and mem_mb("lots") is None


# -- SlurmJob, with SLURM's commands answered from the pastes ----------------------------------------

def _submit(tmp_path: Path, fake: FakeSlurm, clock: Clock, log: List[str], steps: List[str]) -> SlurmJob:
    return SlurmJob.submit(tmp_path, SlurmSettings(poll_interval_s=10, mem="50M"), "r1", sys.executable, "/code",
                           str(tmp_path), "login1", log.append, steps.append, run=fake, clock=clock)


def test_squeue_at_most_once_per_poll_interval_and_each_state_change_logged_once(tmp_path: Path) -> None:
    fake = FakeSlurm([(0, "PENDING|Priority|\n", ""), (0, "PENDING|Priority|\n", ""), (0, "RUNNING|None|node07\n", "")])
    clock, log, steps = Clock(), [], []
    job = _submit(tmp_path, fake, clock, log, steps)
    assert log[0].startswith("Submitted SLURM job 4242: sbatch --parsable --job-name=potato-r1 ")
    for _ in range(300):  # the Supervisor polls every 0.2 s: 60 s
        assert job.poll() is None
        clock.now += 0.2
    assert fake.count("squeue") <= 60 / 10 + 2
    assert log[1:] == ["SLURM job 4242: PENDING (Priority)", "SLURM job 4242: RUNNING on node07"]
    assert steps[-1] == "SLURM job 4242 running on node07"
    (tmp_path / "exit_code").write_text("0\n")
    assert job.poll() == 0


def test_a_requeued_job_s_next_node_is_logged_not_the_first_start_s_word(tmp_path: Path) -> None:
    """A node dies, SLURM requeues the job and starts it on another node: run.log names both nodes.
    The first start's slurm_started is still there while the job pends; it is old news, not a start
    on c1 (the container rig's CI run logged "RUNNING on c1" twice and never c2)."""
    fake = FakeSlurm([(0, "RUNNING|None|c1\n", ""), (0, "PENDING|BeginTime|\n", ""), (0, "PENDING|BeginTime|\n", ""),
                      (0, "RUNNING|None|c2\n", "")])
    clock, log, steps = Clock(), [], []
    job = _submit(tmp_path, fake, clock, log, steps)
    for seconds in range(40):
        if seconds == 1:
            (tmp_path / "slurm_started").write_text("c1 1796189253\n")
        if seconds == 35:
            (tmp_path / "slurm_started").write_text("c2 1796189290\n")
        assert job.poll() is None
        clock.now += 1.0
    assert log[1:] == ["SLURM job 4242: RUNNING on c1", "SLURM job 4242: PENDING (BeginTime)",
                       "SLURM job 4242: RUNNING on c2"]


def test_a_job_gone_without_exit_code_is_explained_by_slurm_out(tmp_path: Path) -> None:
    fake = FakeSlurm([(0, "RUNNING|None|vm\n", ""), (0, "", "")], scontrol=pasted("memory.scontrol"))
    clock, log, steps = Clock(), [], []
    job = _submit(tmp_path, fake, clock, log, steps)
    (tmp_path / "slurm.out").write_text(pasted("memory.slurm.out"))
    code = None
    for _ in range(int((LOST_GRACE_S + 30) / 0.2)):
        code = job.poll()
        if code is not None:
            break
        clock.now += 0.2
    assert code == 137  # ExitCode=0:9, as a shell reports SIGKILL
    stop = job.ended_by()
    assert stop is not None and stop.reason is Reason.OOM
    assert stop.message.startswith(ENDED_BEFORE.format(id="4242") + "it ran out of memory (more than its limit of 50M)")


def test_a_job_slurm_forgot_with_nothing_said_is_lost_not_passed_off(tmp_path: Path) -> None:
    fake = FakeSlurm([(1, "", "slurm_load_jobs error: Invalid job id specified\n")])
    clock, log, steps = Clock(), [], []
    job = _submit(tmp_path, fake, clock, log, steps)
    while job.poll() is None:
        clock.now += 1.0
    stop = job.ended_by()
    assert stop is not None and stop.reason is Reason.JOB_LOST
    assert "is no longer in the queue and its worker left no exit_code" in stop.message


def test_squeue_trouble_is_logged_once_and_the_job_is_not_given_up(tmp_path: Path) -> None:
    down = (1, "", "squeue: error: Unable to contact slurm controller (connect failure)\n")
    fake = FakeSlurm([down])
    clock, log, steps = Clock(), [], []
    job = _submit(tmp_path, fake, clock, log, steps)
    for _ in range(50):
        assert job.poll() is None
        clock.now += 10
    assert sum("squeue failed for SLURM job 4242 (squeue: error: Unable to contact" in line for line in log) == 1


def test_sbatch_missing_is_e8_and_a_refused_request_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match="^login1 has no sbatch on PATH, so it cannot submit jobs"):
        SlurmJob.submit(tmp_path, SlurmSettings(), "r1", "python3", "/c", str(tmp_path), "login1",
                        print, print, run=lambda argv: (127, "", "sbatch: command not found"))
    refused = (1, "", "sbatch: error: Invalid generic resource (gres) specification\n")
    with pytest.raises(SlurmError, match=r"sbatch refused the job: sbatch: error: Invalid generic resource \(gres\) "
                                         r"specification\. .*--gres=gpu:1"):
        SlurmJob.submit(tmp_path, SlurmSettings(gres="gpu:1"), "r1", "python3", "/c", str(tmp_path), "login1",
                        print, print, run=lambda argv: refused)


def test_cancel_is_term_to_the_whole_job_then_sigkill_to_its_processes_then_plain_scancel(tmp_path: Path) -> None:
    """Issue 42: the cold stop kills the batch step's processes itself; a plain scancel alone would
    send SIGTERM again and leave the job in CG until SLURM's KillWait."""
    fake = FakeSlurm([(0, "RUNNING|None|vm\n", "")])
    log: List[str] = []
    job = _submit(tmp_path, fake, Clock(), log, [])
    job.terminate()
    assert job.poll() is None  # the worker saves and stops on its own time
    job.kill()
    assert [c for c in fake.calls if c[0] == "scancel"] == [
        ["scancel", "--full", "--signal=TERM", "4242"], ["scancel", "--batch", "--full", "--signal=KILL", "4242"],
        ["scancel", "4242"]]
    assert [line for line in log if line.startswith("scancel")] == [
        "scancel --full --signal=TERM 4242", "scancel --batch --full --signal=KILL 4242", "scancel 4242"]
    assert job.poll() == 137  # killed: the run is over for us now
    assert all(argv[0] not in ("srun", "sacct") for argv in fake.calls)


def test_a_job_cancelled_while_it_waited_is_the_scheduler_s_doing_not_a_worker_that_exited_0(tmp_path: Path) -> None:
    """Issue 42: scancel of a pending job leaves no exit_code and scontrol says ExitCode=0:0 (pasted);
    that 0 is not the worker's, so the scheduler is asked why, and says it was cancelled."""
    fields = parse_scontrol(pasted("scancel-pending.scontrol"))
    assert (fields["JobState"], fields["Reason"], fields["ExitCode"]) == ("CANCELLED", "Resources", "0:0")
    assert exit_status(fields) == 0 and gone_status(fields) == 1
    assert gone_status(parse_scontrol(pasted("scancel.scontrol"))) == 143 and gone_status(None) == 1
    fake = FakeSlurm([(0, "PENDING|Resources|\n", ""), (0, "", "")], scontrol=pasted("scancel-pending.scontrol"))
    clock = Clock()
    log: List[str] = []
    job = _submit(tmp_path, fake, clock, log, [])
    code = None
    for _ in range(int((LOST_GRACE_S + 30) / 0.2)):
        code = job.poll()
        if code is not None:
            break
        clock.now += 0.2
    assert code == 1  # not 0: the Supervisor asks ended_by for any other status
    stop = job.ended_by()
    assert stop is not None and stop.reason is Reason.SCANCELLED
    assert stop.message.startswith(ENDED_BEFORE.format(id="4242") + "it was cancelled outside Potato (scancel).")


def test_slurm_commands_get_none_of_potato_s_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """sbatch exports its environment to the job: a hand-started agent's token must not go with it."""
    from potato.training.slurm.job import run_command

    monkeypatch.setenv("POTATO_TRAINING_TOKEN", "secret-token-value")
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/slurm.conf")
    code, out, _ = run_command(["env"])
    assert code == 0 and "SLURM_CONF=/etc/slurm/slurm.conf" in out
    assert "POTATO_" not in out and "secret-token-value" not in out


def test_check_says_a_job_with_two_gpus_trains_on_both() -> None:
    """Issue 34: ``gres: gpu:2`` gives a run two GPUs on one node, and check says a torch trainer uses both."""
    from potato.training.slurm.state import gpus_line, gres_gpus

    assert [gres_gpus(g) for g in ("gpu:2", "gpu:a100:2", "gpu", None, "shard:4", "gpu:1,gpu:h100:2")] == [
        2, 2, 1, 0, 0, 3]
    assert gpus_line("gpu:1") is None
    assert gpus_line("gpu:a100:2") == ("A run gets 2 GPUs on one node (gres gpu:a100:2); a torch trainer trains "
                                       "data-parallel on all 2 (one process per GPU), the others use the first.")
