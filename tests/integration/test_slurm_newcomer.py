"""What a newcomer to the slurm backend met on the real single-node SLURM (issue 21; R26, R28, R29,
R31): a queue state logged without its reason (or with Python's ``None``), a step line that went
back from the worker's progress to ``running on vm``, a short job never logged as running, a prelude
line that failed without a word, and a hand-started agent that took ``--workdir /tmp/...`` and
a misspelt slurm.json key without a hint."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from potato.training.slurm.state import PENDING_REASONS
from tests.harness.agents import register
from tests.harness.runs import TERMINAL, log_of, run_dir, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.slurmcluster import Cluster, _check, slurm_config, slurm_job_id, start_cluster

pytestmark = [pytest.mark.integration, pytest.mark.rig]


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return start_cluster()


def node_name(cluster: Cluster, job: str) -> str:
    """The node the job ran on as SLURM names it (squeue's %N; SLURM lists an ended job for MinJobAge),
    the name the log must show."""
    return cluster.run(f"squeue -h -t all -j {job} -o %N").stdout.strip()


def ends_on_a_node(cluster: Cluster, line: str, text: str) -> bool:
    """``line`` ends with "on NODE" + ``text`` for one of the cluster's compute nodes (the check's test
    job goes to whichever is free)."""
    return any(line.endswith(f"on {node}{text}") for node in cluster.nodes)


def run_events(srv: ServerProcess, run_id: str) -> List[Dict[str, Any]]:
    """Every event the server recorded for the run, in order (the worker's and the agent's)."""
    text = (run_dir(srv, run_id) / "events.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_every_pending_line_says_why_and_none_never_reaches_the_user(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    """Issue 21 (R29): right after sbatch, squeue says ``PENDING|None|``; the log said
    ``SLURM job 2: PENDING`` and the step line ``waiting for the scheduler's next pass (None)``."""
    srv = make_server(slurm_config(cluster))
    # An idle cluster may start the job before the agent's first squeue sees it pend (seen on the
    # container rig): then there is no pending line to check, and the run is tried again.
    for _ in range(3):
        run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 1})
        done = wait(srv, run["id"], TERMINAL, timeout=120)
        log = log_of(srv, run["id"])
        assert done["state"] == "succeeded", f"{done}\n{log}"
        job = slurm_job_id(srv, run["id"])
        pending = [line.split(" ", 1)[1] for line in log.splitlines() if f"SLURM job {job}: PENDING" in line]
        if pending:
            break
    assert pending == [f"SLURM job {job}: PENDING (waiting for the scheduler's next pass)"], log
    steps = [e["text"] for e in run_events(srv, run["id"]) if e.get("type") == "step"]
    assert f"SLURM job {job} pending: {PENDING_REASONS['None']}" in steps, steps
    assert not any("None" in text for text in steps), steps
    assert not any("None" in line for line in log.splitlines() if f"SLURM job {job}" in line), log


def test_a_job_shorter_than_one_squeue_poll_is_still_logged_running_on_its_node(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    """Issue 21 (R29): squeue once a minute never sees a two-second job running; the job's own
    word that it started (on which node) puts the line in the log all the same."""
    srv = make_server(slurm_config(cluster, poll_interval_s=60))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster")
    done = wait(srv, run["id"], TERMINAL, timeout=120)
    log = log_of(srv, run["id"])
    assert done["state"] == "succeeded", f"{done}\n{log}"
    job = slurm_job_id(srv, run["id"])
    running = [line for line in log.splitlines() if f"SLURM job {job}: RUNNING" in line]
    assert [line.split(" ", 1)[1] for line in running] == [f"SLURM job {job}: RUNNING on {node_name(cluster, job)}"], log


def test_the_step_line_never_goes_back_from_the_worker_s_words_to_a_queue_state(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    """Issue 21 (R29): squeue every 5 s saw the job running after the worker had said
    ``training on 26 items (5%)``, and the step line went back to ``SLURM job 3 running on vm``."""
    srv = make_server(slurm_config(cluster, poll_interval_s=5))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 8})
    done = wait(srv, run["id"], TERMINAL, timeout=120)
    log = log_of(srv, run["id"])
    assert done["state"] == "succeeded", f"{done}\n{log}"
    job = slurm_job_id(srv, run["id"])
    steps = [e["text"] for e in run_events(srv, run["id"]) if e.get("type") == "step"]
    first_own = next(i for i, text in enumerate(steps) if text == "reading the job")  # the worker's first step
    assert not [text for text in steps[first_own:] if text.startswith("SLURM job")], steps
    assert sum(f"SLURM job {job}: RUNNING on {node_name(cluster, job)}" in line for line in log.splitlines()) == 1, log


def test_a_failing_prelude_line_fails_the_run_and_names_the_line(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    """Issue 21 (R26): ``module load cuda`` on a cluster without modules printed ``module: command
    not found`` into slurm.out and the run went on to succeed; neither run.log nor the run said so."""
    config = slurm_config(cluster, prelude=["export EXAMPLE=1", "module load cuda"])
    config["model_training"]["backends"]["lenient"] = cluster.backend(prelude=["module load cuda || true"])
    srv = make_server(config)
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster")
    done = wait(srv, run["id"], TERMINAL, timeout=120)
    log = log_of(srv, run["id"])
    job = slurm_job_id(srv, run["id"])
    message = (f"SLURM job {job} stopped before the worker started: prelude line 2 (`module load cuda`) failed "
               "with exit 127: module: command not found. Fix that line in the backend's prelude (try it by hand "
               "on a compute node), remove it, or end it with `|| true` if it may fail.")
    assert done["state"] == "failed" and done["reason"] == "error" and done["message"] == message, f"{done}\n{log}"
    assert f"Run failed (error): {message}" in log
    # the way out the message names, `|| true`, really lets a run through
    failed = run
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="lenient")
    done = wait(srv, run["id"], TERMINAL, timeout=120)
    assert done["state"] == "succeeded", (done, log_of(srv, run["id"]))
    # the failed run's job dir went, as always (its clean-up ends before the next run on the login node starts)
    assert cluster.run(f"test -e ~/potato-slurm/jobs/{failed['id']}").returncode == 1


def test_check_runs_the_prelude_in_a_test_job_and_names_the_line_that_fails(
        cluster: Cluster, make_project: Callable[..., Path]) -> None:
    """Issue 21 (R28): the check ran the prelude and job_python in one ``bash -c`` and looked at
    job_python only, so ``module load cuda`` failing went unnoticed."""
    before = set(cluster.run("ls ~/potato-slurm").stdout.split())
    out = _check(make_project(**slurm_config(cluster, prelude=["module load cuda"])))
    assert out.returncode == 1, out.stdout + out.stderr
    assert ("The prelude fails on the login node: prelude line 1 (`module load cuda`) failed with exit 127: "
            "module: command not found.") in out.stdout
    test_job = [line for line in out.stdout.splitlines() if line.startswith("Test job ")]
    assert len(test_job) == 1 and ends_on_a_node(cluster, test_job[0],
        ": prelude line 1 (`module load cuda`) failed with exit 127: module: command not "
        "found. A run would fail the same way before its worker starts. Fix that line in the backend's prelude "
        "(try it by hand on a compute node), remove it, or end it with `|| true` if it may fail."), out.stdout
    assert set(cluster.run("ls ~/potato-slurm").stdout.split()) == before  # the test job's folder is gone
    good = _check(make_project(**slurm_config(cluster, prelude=["export EXAMPLE_PRELUDE=1"])))
    assert good.returncode == 0, good.stdout + good.stderr
    assert any(f"on {node}: job_python /usr/bin/python3 is Python 3." in good.stdout for node in cluster.nodes)
    assert "(/usr/bin/python3), after the prelude" in good.stdout


def test_a_hand_started_agent_refuses_a_node_local_workdir_and_suggests_the_key_meant(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    """Issue 21 (R26, R31): on the login node, ``--slurm-config`` with ``--workdir /tmp/...`` was
    taken silently (the config refuses that remote_dir), and ``gress`` got no "did you mean"."""
    from potato.server.training.backends.ssh.codepush import code_archive

    srv = make_server({"model_training": {
        "enabled": True, "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
        "backends": {"login": {"type": "agent"}},
    }})
    _, token = register(srv.config_path, "login")
    login = cluster.login
    home = "~/newcomer-agent"
    try:
        for command, data in ((f"rm -rf {home} && mkdir -p {home}/code && tar -x -C {home}/code", code_archive()),
                              (f"umask 077 && cat > {home}/token", token.encode()),
                              (f"cat > {home}/slurm.json", json.dumps({"mem": "300M"}).encode()),
                              (f"cat > {home}/typo.json", json.dumps({"gress": "gpu:1"}).encode())):
            subprocess.run(login.argv(command), input=data, check=True, timeout=60)
        # (timeout: an agent that took the folder would wait for a job)
        agent = (f"export SLURM_CONF={cluster.slurm_conf}; PYTHONPATH={home}/code exec timeout 30 "
                 f"python3 -m potato.training.agent --server {srv.url} --backend login --token-file {home}/token --once")
        local = cluster.run(f"{agent} --slurm-config {home}/slurm.json --workdir /tmp/potato-newcomer-jobs")
        assert local.returncode == 1, local.stdout + local.stderr
        assert local.stdout.strip().split(" ", 1)[1] == (  # after the console's time
            "error: --workdir /tmp/potato-newcomer-jobs is under /tmp; /tmp, /var/tmp and /dev/shm are local to "
            "each node, so the job on a compute node would not see the files the agent writes on the login node. "
            "Use storage the login and compute nodes share, e.g. --workdir /shared/projects/me/potato-training")
        assert cluster.run("test -e /tmp/potato-newcomer-jobs").returncode == 1  # refused before making it
        typo = cluster.run(f"{agent} --slurm-config {home}/typo.json --workdir {home}/jobs")
        assert typo.returncode == 1
        assert typo.stdout.split(" ", 1)[1].startswith(
            f"error: --slurm-config /home/{login.user}/newcomer-agent/typo.json: unknown key 'gress' (did you mean "
            "'gres'?); valid keys: account, "), typo.stdout
    finally:
        cluster.run(f"rm -rf {home} /tmp/potato-newcomer-jobs")
