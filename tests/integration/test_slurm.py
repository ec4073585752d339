"""The slurm backend against a real SLURM over a real sshd (R24-R30, E8, E9): the agent on the login
node submits the worker with sbatch and follows it through the shared job dir. The rig's cluster is
one node on this machine, or a login node and two compute nodes in containers (tests/harness/slurmcluster.py);
what needs nodes of their own (a node that really dies, /tmp that really is not shared) runs on the
latter only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Dict

import pytest
import requests

from tests.harness import slurm_standin
from tests.harness.agents import register
from tests.conftest import ADMIN_KEY
from tests.harness.waiting import wait_until, worker_pids
from tests.harness.sshd import _remote_agent_pid, _session_pid
from tests.harness.runs import TERMINAL, log_of, run_dir, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.slurmcluster import Cluster, _check, slurm_config, slurm_job_id
from tests.faults.matrix import fault

pytestmark = [pytest.mark.integration, pytest.mark.rig]
H = {"X-API-Key": ADMIN_KEY}


def test_a_run_is_submitted_followed_through_the_queue_and_brings_predictions_and_the_model_back(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(slurm_config(cluster, mem="500M", time="00:10:00"))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"artifact_mb": 2, "sleep_s": 2})
    done = wait(srv, run["id"], TERMINAL, timeout=120)
    log = log_of(srv, run["id"])
    assert done["state"] == "succeeded", f"{done}\n{log}"
    assert "Python 3." in log and "runs the agent" in log  # the login node's Python (R28)
    assert "Submitted SLURM job " in log and "--time=00:10:00 --mem=500M" in log  # with the flags (R29)
    assert "SLURM job " in log and ": RUNNING on " in log  # each queue state change
    assert "Copied the model from 127.0.0.1: 2.1 MB" in log
    assert (run_dir(srv, run["id"]) / "artifacts" / "weights.bin").stat().st_size == 2 * 1024 * 1024
    export = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
    assert export["count"] == 40
    # The job dir goes from the shared storage (the clean-up follows the state); the pushed code stays.
    wait_until(lambda: cluster.run("ls ~/potato-slurm/jobs/").stdout.strip() == "", timeout=60,
               what="the job dir to go")
    assert cluster.run("ls -d ~/potato-slurm/code/*").stdout.strip().startswith("/home/trainer/potato-slurm/code/")


def wait_for_log(srv: ServerProcess, run_id: str, text: str, timeout: float = 60) -> None:
    wait_until(lambda: text in log_of(srv, run_id), timeout=timeout, what=f"{text!r} in run.log")


def test_a_job_pending_on_resources_says_so_then_runs(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    blocker = cluster.fill(60)
    try:
        wait_until(lambda: f"{blocker} RUNNING" in " ".join(cluster.jobs()), timeout=30, what="the blocker to run")
        srv = make_server(slurm_config(cluster))
        run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 3})
        job = slurm_job_id(srv, run["id"])
        wait_for_log(srv, run["id"], f"SLURM job {job}: PENDING (Resources)")
        step = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}", headers=H).json()["step"]
        assert step == f"SLURM job {job} pending: waiting for a free node (Resources)"
    finally:
        cluster.run(f"scancel {blocker}")
    done = wait(srv, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "succeeded", log_of(srv, run["id"])
    assert f"SLURM job {job}: RUNNING on " in log_of(srv, run["id"])


def kill_wait_s(cluster: Cluster) -> float:
    """The cluster's KillWait: how long SLURM waits between a cancel's SIGTERM and its SIGKILL."""
    for line in cluster.run("scontrol show config").stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "KillWait":
            return float(value.split()[0])
    raise AssertionError("scontrol show config names no KillWait")


@fault("SLURM clusters",
       "Cancel of a run whose worker ignores SIGTERM (real cluster)",
       "After grace_seconds the agent SIGKILLs every process of the job's batch step, then sends the plain "
       "scancel; the job leaves the queue at once instead of waiting in CG for SLURM's KillWait",
       "run.log: 'scancel --full --signal=TERM <id>', 'sending SIGKILL', 'scancel --batch --full --signal=KILL <id>', "
       "then 'scancel <id>'; the run is cancelled and the node is free")
def test_cancel_of_a_worker_that_ignores_sigterm_kills_the_job_without_waiting_for_killwait(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    """Issue 42: the cold stop was a plain scancel, which is a cancel like any other: SIGTERM again
    (ignored), and SIGKILL only after KillWait (30 s by default, 10 s on the rig), the job holding
    its node in CG all that time."""
    srv = make_server(slurm_config(cluster))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster",
                params={"sleep_s": 120, "ignore_term": True})
    job = slurm_job_id(srv, run["id"])
    wait_for_log(srv, run["id"], "noop: ignoring SIGTERM")
    requests.post(f"{srv.url}/admin/training/api/runs/{run['id']}/cancel", headers=H)
    done = wait(srv, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "cancelled", f"{done}\n{log_of(srv, run['id'])}"
    wait_until(lambda: not any(line.startswith(f"{job} ") for line in cluster.jobs()),
               timeout=kill_wait_s(cluster) / 2, what="the job to leave the queue before SLURM's KillWait ends it")
    assert not worker_pids(run["id"])
    log = log_of(srv, run["id"])
    steps = [f"scancel --full --signal=TERM {job}\n", "sending SIGKILL", f" scancel --batch --full --signal=KILL {job}\n",
             f" scancel {job}\n"]
    assert all(step in log for step in steps), log
    assert [log.index(step) for step in steps] == sorted(log.index(step) for step in steps), log


@fault("SLURM clusters",
       "scancel of the run's job from outside Potato, while it waits in the queue or runs (real cluster)",
       "The run fails with the scheduler's reason; a job cancelled before it started is not taken for a worker "
       "that exited 0",
       "'SLURM job <id> ended before the worker finished: it was cancelled outside Potato'")
@pytest.mark.parametrize("place", ["pending", "running"])
def test_a_job_slurm_cancels_from_outside_fails_the_run_with_that_reason(
        cluster: Cluster, make_server: Callable[..., ServerProcess], place: str) -> None:
    """Issue 42: a job cancelled while it waited left no exit_code, and scontrol's ExitCode=0:0 was
    taken for the worker's status: 'The worker exited with 0 and no result'."""
    blocker = cluster.fill(120) if place == "pending" else None
    try:
        if blocker is not None:
            wait_until(lambda: f"{blocker} RUNNING" in " ".join(cluster.jobs()), timeout=30, what="the blocker to run")
        srv = make_server(slurm_config(cluster))
        run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 300})
        job = slurm_job_id(srv, run["id"])
        wait_for_log(srv, run["id"], f"SLURM job {job}: PENDING (Resources)" if blocker else
                     f"SLURM job {job}: RUNNING on ")
        cluster.run(f"scancel {job}")
    finally:
        if blocker is not None:
            cluster.run(f"scancel {blocker}")
    done = wait(srv, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "failed" and done["reason"] == "scancelled", (done, log_of(srv, run["id"]))
    assert done["message"].startswith(f"SLURM job {job} ended before the worker finished: it was cancelled "
                                      "outside Potato (scancel).")


@fault("SLURM clusters",
       "The job passes its memory limit (real cluster)",
       "SLURM kills it; the run fails saying out of memory",
       "The scheduler's reason, out of memory")
def test_a_job_over_its_memory_is_killed_and_the_run_says_out_of_memory(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(slurm_config(cluster, mem="100M"))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"allocate_mb": 400, "sleep_s": 5})
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    job = slurm_job_id(srv, run["id"])
    assert done["state"] == "failed" and done["reason"] == "oom", (done, log_of(srv, run["id"]))
    assert done["message"].startswith(f"SLURM job {job} ended before the worker finished: it ran out of memory "
                                      "(more than its limit of 100M). Raise mem")


@pytest.mark.slow
@fault("SLURM clusters",
       "The job reaches its time limit (real cluster)",
       "The run fails with the tutorial's message",
       "'SLURM job <id> ended before the worker finished: it reached its time limit.'")
def test_a_job_at_its_time_limit_fails_the_run_with_the_tutorial_s_message(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    """SLURM rounds a limit up to whole minutes: this takes about 70 s."""
    srv = make_server(slurm_config(cluster, time="1"))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 300})
    done = wait(srv, run["id"], TERMINAL, timeout=180)
    job = slurm_job_id(srv, run["id"])
    assert done["state"] == "failed" and done["reason"] == "time_limit", (done, log_of(srv, run["id"]))
    assert done["message"].startswith(f"SLURM job {job} ended before the worker finished: it reached its time limit.")
    assert "It had time: 1; raise time" in done["message"]


@fault("SLURM clusters",
       "The ssh session to the login node is killed during a run",
       "The agent cancels its job, so the GPU is freed; the run fails naming the host",
       "The run fails; the job is gone from the queue")
def test_a_broken_ssh_session_to_the_login_node_cancels_the_job(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(slurm_config(cluster))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 120})
    job = slurm_job_id(srv, run["id"])
    wait_for_log(srv, run["id"], f"SLURM job {job}: RUNNING on ")
    os.kill(_session_pid(srv, run["id"]), signal.SIGKILL)
    done = wait(srv, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "failed" and done["reason"] == "agent_lost", done
    wait_until(lambda: not any(line.startswith(f"{job} ") for line in cluster.jobs()), timeout=60,
               what="the agent to scancel its job (the GPU is freed)")
    assert not worker_pids(run["id"])


@fault("SLURM clusters", "The agent on the login node is killed (kill -9) or hangs (SIGSTOP) while its job runs",
       "The run fails (its session ended, or no word for heartbeat_timeout_s); the server's clean-up cancels the job the agent can no longer cancel",
       "run.log: 'SLURM job <id> was still in the queue after its agent ended; cancelled it'; the GPU is freed")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["kill-9", "sigstop"])
def test_an_agent_killed_or_hung_on_the_login_node_leaves_no_job_behind(
        cluster: Cluster, make_server: Callable[..., ServerProcess], sig: signal.Signals) -> None:
    srv = make_server(slurm_config(cluster, heartbeat_timeout_s=5))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 300})
    job = slurm_job_id(srv, run["id"])
    wait_for_log(srv, run["id"], f"SLURM job {job}: RUNNING on ")
    agent = _remote_agent_pid(run["id"])
    os.kill(agent, sig)
    try:
        done = wait(srv, run["id"], TERMINAL, timeout=60)
        assert done["state"] == "failed" and done["reason"] == "agent_lost", done
        wait_until(lambda: not any(line.startswith(f"{job} ") for line in cluster.jobs()), timeout=60,
                   what="the server to scancel the job its agent left behind")
        wait_for_log(srv, run["id"], f"SLURM job {job} was still in the queue after its agent ended; cancelled it")
    finally:
        if sig == signal.SIGSTOP:
            try:
                os.kill(agent, signal.SIGCONT)
            except ProcessLookupError:
                pass


def test_check_reports_the_login_node_slurm_and_what_the_job_runs(
        cluster: Cluster, make_project: Callable[..., Path]) -> None:
    path = make_project(**slurm_config(cluster, mem="500M", prelude=["export EXAMPLE_PRELUDE=1"]))
    out = _check(path)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("cluster (slurm via 127.0.0.1): Python 3.") and "on the login node (/usr/bin/python3)" in lines[0]
    assert "SLURM: slurm-wlm 22.05" in out.stdout and "sbatch, squeue, scancel, scontrol on PATH" in out.stdout
    assert "remote_dir: /home/trainer/potato-slurm" in out.stdout
    assert "job_python: /usr/bin/python3 is Python 3." in out.stdout
    assert "(/usr/bin/python3) on the login node, after the prelude" in out.stdout
    assert "sbatch --test-only accepts the flags: Job " in out.stdout and "in partition debug" in out.stdout
    report = json.loads(_check(path, "--json").stdout)
    assert report["ok"] is True and report["remote_dir"] == "/home/trainer/potato-slurm"
    assert report["commands"]["sbatch"] == "/usr/bin/sbatch" and report["never_runs"] == []


def test_check_says_when_the_request_can_never_run(cluster: Cluster, make_project: Callable[..., Path]) -> None:
    out = _check(make_project(**slurm_config(cluster, cpus_per_task=4)))
    assert out.returncode == 1
    assert ("This request can never run: cpus_per_task is 4, but the largest node in partition debug has 2 CPUs: "
            "the job would wait forever (PartitionConfig).") in out.stdout
    assert "sbatch --test-only rejects the flags --cpus-per-task=4: allocation failure: Requested node " \
           "configuration is not available" in out.stdout
    gres = _check(make_project(**slurm_config(cluster, gres="gpu:1")))
    assert gres.returncode == 1 and "gres is gpu:1, but no node in partition debug has gpu gres" in gres.stdout
    assert "sbatch: error: Invalid generic resource (gres) specification" in gres.stdout


def test_a_login_node_without_sbatch_is_e8_in_the_check_and_the_run(
        cluster: Cluster, make_project: Callable[..., Path], make_server: Callable[..., ServerProcess]) -> None:
    cluster.run("mkdir -p ~/bin-without-slurm && ln -sf /bin/sh /bin/bash /bin/cat /bin/mkdir ~/bin-without-slurm/")
    config = slurm_config(cluster, env={"PATH": "/home/trainer/bin-without-slurm", "SLURM_CONF": cluster.slurm_conf})
    out = _check(make_project(**config))
    assert out.returncode == 1
    assert "127.0.0.1 has no sbatch on PATH, so it cannot submit jobs" in out.stdout
    srv = make_server(config)
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster")
    done = wait(srv, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "failed" and done["message"].startswith(
        "127.0.0.1 has no sbatch on PATH, so it cannot submit jobs. "), done


def needs_own_nodes(cluster: Cluster) -> None:
    if len(cluster.node_containers) < 2:
        pytest.skip("needs compute nodes of their own that can be powered off: the container rig "
                    "(scripts/test-infra start --containers)")


def test_a_remote_dir_on_node_local_storage_is_named_by_the_check(
        cluster: Cluster, make_project: Callable[..., Path]) -> None:
    """Issue 25: remote_dir through a link into /tmp looks like home in the config; the check follows
    the link and names it. On nodes of their own, a job really cannot see what the login node put there."""
    assert cluster.run("mkdir -p /tmp/potato-scratch && ln -sfn /tmp/potato-scratch ~/scratch").returncode == 0
    try:
        out = _check(make_project(**slurm_config(cluster, remote_dir="~/scratch")))
        assert out.returncode == 1, out.stdout + out.stderr
        assert ("remote_dir ~/scratch is /tmp/potato-scratch, under /tmp, which each node has its own copy of; use "
                "storage the login and compute nodes share") in out.stdout
        if len(cluster.node_containers) >= 2:
            cluster.run("echo from-login > ~/scratch/marker && echo from-login > ~/marker")
            seen = cluster.run("srun -N1 -o /dev/stdout bash -c 'cat ~/marker; cat ~/scratch/marker 2>&1 || true'")
            assert seen.stdout.splitlines()[0] == "from-login", seen  # home is shared storage
            assert "No such file or directory" in seen.stdout, seen  # /tmp is the node's own
    finally:
        cluster.run("rm -rf ~/scratch ~/marker /tmp/potato-scratch")


@fault("SLURM clusters",
       "A compute node dies while its job runs",
       "SLURM marks the node DOWN and requeues the job on another node; the agent follows the job there",
       "The run succeeds; run.log shows it running on the first node, then on the second")
def test_a_compute_node_that_dies_requeues_the_job_and_the_run_still_succeeds(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    needs_own_nodes(cluster)
    srv = make_server(slurm_config(cluster))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 15})
    job = slurm_job_id(srv, run["id"])
    wait_for_log(srv, run["id"], f"SLURM job {job}: RUNNING on ")
    first = cluster.run(f"squeue -h -j {job} -o %N").stdout.strip()
    assert first in cluster.nodes
    try:
        cluster.node_down(first)
        done = wait(srv, run["id"], TERMINAL, timeout=300)
        log = log_of(srv, run["id"])
        assert done["state"] == "succeeded", f"{done}\n{log}"
        (other,) = set(cluster.nodes) - {first}
        assert f"SLURM job {job}: RUNNING on {first}" in log and f"SLURM job {job}: RUNNING on {other}" in log, log
        export = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
        assert export["count"] == 40  # the second start's predictions, once
    finally:
        cluster.node_up(first)


# -- preemption and node failure: the scheduler stand-in (the one fault a real cluster cannot show cheaply)

@pytest.fixture
def standin(cluster: Cluster) -> Dict[str, str]:
    """SLURM's commands replaced by tests/harness/slurm_standin.py on the login node, for one backend (PATH
    through env)."""
    folder = "~/standin"
    source = (Path(__file__).parents[1] / "harness" / "slurm_standin.py").read_text()
    links = " ".join(f"ln -s ../slurm_standin.py {folder}/bin/{name};" for name in slurm_standin.COMMANDS)
    made = cluster.run(f"rm -rf {folder} && mkdir -p {folder}/bin && cat > {folder}/slurm_standin.py && "
                       f"chmod 755 {folder}/slurm_standin.py && {links} mktemp -d ~/standin/state-XXXXXX", input=source)
    assert made.returncode == 0, made.stderr
    return {"PATH": "/home/trainer/standin/bin:/usr/bin:/bin", "STANDIN_STATE": made.stdout.strip()}


@pytest.mark.parametrize("fault, reason, words", [
    ("preempt", "preempted", "it was preempted by a job with a higher priority."),
    ("fail_node", "node_lost", "its node failed (standin-node)."),
])
@fault("SLURM clusters",
       "Preemption and node failure (a stand-in scheduler: a real one cannot be made to show them cheaply)",
       "The run fails with the scheduler's reason",
       "'it was preempted' / 'its node failed'")
def test_preemption_and_node_failure_fail_the_run_with_the_scheduler_s_reason(
        standin: Dict[str, str], fault: str, reason: str, words: str,
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(slurm_config(cluster, env=standin))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 120})
    job = slurm_job_id(srv, run["id"])
    wait_for_log(srv, run["id"], f"SLURM job {job}: RUNNING on standin-node")
    wait_until(lambda: bool(worker_pids(run["id"])), timeout=30, what="the worker")
    done = cluster.run(f"~/standin/slurm_standin.py {fault} {standin['STANDIN_STATE']} {job}")  # the scheduler's act
    assert done.returncode == 0, done.stderr
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    assert done["state"] == "failed" and done["reason"] == reason, (done, log_of(srv, run["id"]))
    assert done["message"].startswith(f"SLURM job {job} ended before the worker finished: {words}")
    assert not worker_pids(run["id"])


# -- a hand-started agent on the login node (R31) ------------------------------------------------

def test_a_hand_started_agent_on_the_login_node_submits_to_slurm(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    from potato.server.training.backends.ssh.codepush import code_archive

    srv = make_server({"model_training": {
        "enabled": True, "grace_seconds": 2,
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
        "backends": {"login": {"type": "agent"}},
    }})
    _, token = register(srv.config_path, "login")
    # Potato installed on the login node (not on shared storage): the agent copies it there for the jobs.
    login = cluster.login
    for command, data in (("rm -rf ~/agent-code ~/shared && mkdir -p ~/agent-code && tar -x -C ~/agent-code",
                           code_archive()),
                          ("umask 077 && cat > ~/token", token.encode()),
                          ("cat > ~/slurm.json", json.dumps({"mem": "300M", "poll_interval_s": 1}).encode()),
                          ("cat > ~/bad-slurm.json", b'{"partiton": "gpu"}')):
        subprocess.run(login.argv(command), input=data, check=True, timeout=60)
    agent = (f"export SLURM_CONF={cluster.slurm_conf}; PYTHONPATH=~/agent-code exec python3 -m potato.training.agent "
             f"--server {srv.url} --backend login --token-file ~/token --workdir ~/shared --once")
    bad = cluster.run(agent.replace("--once", "--slurm-config ~/bad-slurm.json"))
    assert bad.returncode == 1
    assert ("error: --slurm-config /home/trainer/bad-slurm.json: unknown key 'partiton' (did you mean 'partition'?); "
            "valid keys: ") in bad.stdout
    proc = subprocess.Popen(login.argv(agent + " --slurm-config ~/slurm.json"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        run = start(srv, trainer="noop", schemas=["sentiment"], backend="login", params={"sleep_s": 2})
        done = wait(srv, run["id"], TERMINAL, timeout=90)
        output = proc.communicate(timeout=60)[0]
    finally:
        proc.kill()
    assert done["state"] == "succeeded", (done, output)
    assert "Submitted SLURM job " in output and "--mem=300M" in output
    log = log_of(srv, run["id"])
    assert "Submitted SLURM job " in log and ": RUNNING on " in log
    code = cluster.run("ls -d ~/shared/code/agent-*").stdout.split()
    assert len(code) == 1 and cluster.run(f"test -f {code[0]}/potato/training/worker/program.py").returncode == 0
    # the job imported that copy; its job dir stays (an agent backend keeps its jobs' model files)
    assert f"export PYTHONPATH={code[0]}" in cluster.run(f"cat ~/shared/jobs/{run['id']}/job.sh").stdout


@fault("Runs and their processes",
       "kill -9 or SIGTERM of the server during a SLURM run, then a restart",
       "The session, agent and job go on; the restarted server takes the run up",
       "The run succeeds")
@pytest.mark.parametrize("stop", ["kill-9", "sigterm"])
def test_a_server_restart_during_a_slurm_run_loses_nothing(
        cluster: Cluster, make_server: Callable[..., ServerProcess], stop: str) -> None:
    """kill -9 of the server leaves the ssh session, the agent and the job; the restarted server
    takes the run over, the job finishes, the model comes back and the job dir goes."""
    srv = make_server(slurm_config(cluster))
    # The worker sleeps long enough to be running still when the server is down, however late the
    # agent's squeue poll reports it RUNNING on a loaded machine (8 s was not, under pytest -n 4).
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 20, "artifact_mb": 1})
    job = slurm_job_id(srv, run["id"])
    wait_for_log(srv, run["id"], f"SLURM job {job}: RUNNING on ")
    srv_stop = srv.kill9 if stop == "kill-9" else srv.stop
    srv_stop()  # SIGTERM: gunicorn's graceful stop; the run's processes live apart from it
    time.sleep(2)
    assert any(line.startswith(f"{job} RUNNING") for line in cluster.jobs()), "the job goes on while the server is down"
    again = ServerProcess(srv.config_path, port=srv.port).start()
    try:
        done = wait(again, run["id"], TERMINAL, timeout=90)
        log = log_of(again, run["id"])
        assert done["state"] == "succeeded", f"{done}\n{log}"
        assert "took the run over from its ssh session" in log and "Copied the model from 127.0.0.1: 1.0 MB" in log
        assert (run_dir(srv, run["id"]) / "artifacts" / "weights.bin").stat().st_size == 1024 * 1024
        # the clean-up follows the state: wait for it as an admin would look again
        wait_until(lambda: cluster.run(f"test -e ~/potato-slurm/jobs/{run['id']}").returncode == 1, timeout=60,
                   what="the job dir to go")
    finally:
        again.stop()


def test_a_remote_dir_with_a_quote_and_spaces_works_end_to_end(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    hostile = "~/potato-slurm/it's a \"dir\"; echo pwned"
    srv = make_server(slurm_config(cluster, remote_dir=hostile))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"artifact_mb": 1})
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    assert done["state"] == "succeeded", (done, log_of(srv, run["id"]))
    listing = cluster.run("ls ~/potato-slurm/").stdout
    assert "it's a \"dir\"; echo pwned" in listing and "pwned" not in listing.replace("it's a \"dir\"; echo pwned", "")
    jobs = cluster.run("ls -A ~/potato-slurm/*/jobs/")
    assert jobs.returncode == 0 and jobs.stdout.strip() == ""  # the job dir is gone, as always
