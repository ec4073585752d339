"""The ssh backend against a real OpenSSH server (R13-R22, E1, E2): code push and reuse, the agent
over a reverse-forwarded Unix socket, copy-back, cancel, a broken session, wrong key and python."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
import requests

from tests.harness import procs
from tests.conftest import ADMIN_KEY
from tests.harness.waiting import wait_until, worker_pids
from tests.harness.runs import TERMINAL, log_of, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.sshd import SshHost, _remote_agent_pid, _session_pid, cleaned_up, ssh_config
from tests.faults.matrix import fault

pytestmark = [pytest.mark.integration, pytest.mark.rig]
H = {"X-API-Key": ADMIN_KEY}


def test_a_run_pushes_the_code_once_trains_there_and_brings_the_model_back(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(ssh_config(sshd))
    first = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"artifact_mb": 3})
    done = wait(srv, first["id"], TERMINAL, timeout=90)
    assert done["state"] == "succeeded", (done, log_of(srv, first["id"]))
    log = log_of(srv, first["id"])
    assert "Python 3." in log and "on 127.0.0.1 (/usr/bin/python3)" in log  # the host's Python (R19)
    assert "This run gets the CPU (no GPU on this host) on 127.0.0.1" in log  # and what it trained on
    assert "Copied Potato's code" in log
    assert "(mode 600, in a 0700 folder)" in log  # the socket is the trainer's only (R21)
    assert "Copied the model from 127.0.0.1: 3.1 MB" in log
    artifacts = srv.config_path.parent / "annotation_output" / "training" / "runs" / first["id"] / "artifacts"
    assert (artifacts / "weights.bin").stat().st_size == 3 * 1024 * 1024 and (artifacts / "labels.json").exists()
    assert done["artifact_uri"] == str(artifacts)
    export = requests.get(f"{srv.url}/admin/training/api/runs/{first['id']}/suggestions", headers=H).json()
    assert export["count"] == 40  # predictions came back and were written back
    # The host keeps the code, not the job; the socket folder is gone, the connection stays a while.
    cleaned_up(sshd, f"ls ~/.cache/potato-training/jobs; ls -d /tmp/potato-{first['id']}-* 2>/dev/null; true")
    masters = _masters(srv)
    assert len(masters) == 1, masters
    # A second run reuses the code (no copy) and the connection (no new login).
    second = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    assert wait(srv, second["id"], TERMINAL, timeout=90)["state"] == "succeeded"
    assert "is on 127.0.0.1 already" in log_of(srv, second["id"])
    assert "Copied Potato's code" not in log_of(srv, second["id"])
    assert _masters(srv) == masters


def _masters(srv: ServerProcess) -> list[int]:
    """The pids of the server's ssh control masters (``ssh: <control dir>/<hash> [mux]``)."""
    from potato.server.training.backends.ssh.host import control_dir

    control = str(control_dir(srv.config_path.parent / "annotation_output" / "training")).encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(b"ssh: " + control + b"/") and b"[mux]" in cmdline:
            found.append(int(proc.name))
    return sorted(found)


def test_the_connection_closes_keep_connection_s_after_the_run(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    """keep_connection_s: 0 closes it as the run ends; otherwise it closes once idle that long."""
    srv = make_server(ssh_config(sshd, keep_connection_s=0))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    assert wait(srv, run["id"], TERMINAL, timeout=90)["state"] == "succeeded"
    wait_until(lambda: not _masters(srv), timeout=10, what="the connection to close")
    srv.stop()
    srv = make_server(ssh_config(sshd, keep_connection_s=3))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    assert wait(srv, run["id"], TERMINAL, timeout=90)["state"] == "succeeded"
    assert _masters(srv), "the connection should outlive the run for keep_connection_s"
    wait_until(lambda: not _masters(srv), timeout=15, what="the idle connection to close")


@fault("Tokens and secrets",
       "Someone reads the command lines and environments of an ssh run, on the server and on the host",
       "The run token reaches the agent on stdin; no process of the run has it in its arguments, the worker has no POTATO_ variable",
       "Nothing to see")
def test_the_run_token_is_on_no_command_line_and_not_in_the_remote_worker(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(ssh_config(sshd, env={"RUN_LABEL": "set-by-the-backend"}))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"sleep_s": 4})
    wait_until(lambda: bool(worker_pids(run["id"])), timeout=60, what="the remote worker")
    agents = []
    # This test's processes only: the server's (its ssh clients) and, on the host, those of this run
    # (the agent has --run <id>, the worker its job dir), never another suite's or person's.
    assert srv.proc is not None
    own = procs.descendants(srv.proc.pid) + [p for p in procs.descendants(1)
                                             if any(run["id"].encode() in a for a in procs.cmdline(p))]
    for pid in sorted(set(own)):
        cmdline = procs.cmdline(pid)
        assert not any(len(arg) >= 40 and b"/" not in arg and b"=" not in arg for arg in cmdline), cmdline
        if b"potato.training.agent" in cmdline and b"--session" in cmdline:
            agents.append(cmdline)
            assert b"--token-stdin" in cmdline
        if b"potato.training.worker" in cmdline:
            environ = procs.environ(pid)
            assert b"POTATO_" not in environ
            assert b"CUDA_VISIBLE_DEVICES=" in environ  # the GPU choice reached the worker (none: the CPU)
            assert b"RUN_LABEL=set-by-the-backend" in environ  # the backend's env is the run's
    assert agents, "the remote agent was not found"
    assert wait(srv, run["id"], TERMINAL, timeout=60)["state"] == "succeeded"


def test_cancel_reaches_the_remote_worker_and_kill_follows_term(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(ssh_config(sshd))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"sleep_s": 60, "ignore_term": True})
    wait_until(lambda: bool(worker_pids(run["id"])), timeout=60, what="the remote worker")
    time.sleep(1.5)
    requests.post(f"{srv.url}/admin/training/api/runs/{run['id']}/cancel", headers=H)
    done = wait(srv, run["id"], TERMINAL, timeout=40)
    assert done["state"] == "cancelled"
    assert "sending SIGKILL" in log_of(srv, run["id"])
    wait_until(lambda: not worker_pids(run["id"]), timeout=20, what="the remote worker to be gone")


@fault("ssh hosts",
       "The ssh session carrying a run's agent is killed",
       "The run fails naming the host; the agent on the host stops the worker, so the GPU is free",
       "'The ssh session to <host> ended during the run'")
def test_a_broken_ssh_session_fails_the_run_and_stops_the_remote_worker(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(ssh_config(sshd))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"sleep_s": 120})
    wait_until(lambda: bool(worker_pids(run["id"])), timeout=60, what="the remote worker")
    session = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}", headers=H).json()
    pid = _session_pid(srv, run["id"])
    os.kill(pid, signal.SIGKILL)
    done = wait(srv, run["id"], TERMINAL, timeout=40)
    assert done["state"] == "failed" and done["reason"] == "agent_lost", (done, session)
    assert "The ssh session to 127.0.0.1 ended during the run" in done["message"]
    wait_until(lambda: not worker_pids(run["id"]), timeout=30, what="the remote worker to be stopped")


def test_keep_remote_and_fetch_artifacts_false_leave_the_files_on_the_host(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(ssh_config(sshd, fetch_artifacts=False, keep_remote=True))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    assert done["state"] == "succeeded"
    host, _, folder = done["artifact_uri"].partition(":")
    assert folder.endswith(f"/.cache/potato-training/jobs/{run['id']}/artifacts")
    assert sshd.run(f"test -f {folder}/labels.json").returncode == 0
    assert not (srv.config_path.parent / "annotation_output" / "training" / "runs" / run["id"] / "artifacts").exists()


@fault("ssh hosts",
       "A model file over max_artifact_mb",
       "It stays on the host; the rest comes back",
       "run.log names the file and its size",
       lost="only that file is not copied (it stays on the host)")
def test_files_over_max_artifact_mb_stay_on_the_host_and_are_named(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(ssh_config(sshd, max_artifact_mb=1))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"artifact_mb": 2})
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    assert done["state"] == "succeeded"
    log = log_of(srv, run["id"])
    assert "Left on 127.0.0.1 (over max_artifact_mb 1 MB): weights.bin (2 MB)" in log
    artifacts = srv.config_path.parent / "annotation_output" / "training" / "runs" / run["id"] / "artifacts"
    assert (artifacts / "labels.json").exists() and not (artifacts / "weights.bin").exists()
    assert sshd.run(f"test -f ~/.cache/potato-training/jobs/{run['id']}/artifacts/weights.bin").returncode == 0


def test_a_key_the_host_refuses_fails_with_permission_denied(
        sshd: SshHost, make_server: Callable[..., ServerProcess], tmp_path: Path) -> None:
    key = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    srv = make_server(ssh_config(sshd, identity_file=str(key)))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    done = wait(srv, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "failed"
    assert done["message"].startswith("ssh to 127.0.0.1 failed: Permission denied")


def test_a_python_the_host_lacks_is_named(sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(ssh_config(sshd, python="/usr/bin/python9"))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    done = wait(srv, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "failed"
    assert done["message"].startswith("/usr/bin/python9 was not found on 127.0.0.1")


STAND_IN_NVIDIA_SMI = """#!/bin/sh
# The one hardware stand-in: what nvidia-smi prints on a host with two A100s, one of them busy.
printf '%s\\n' '0, NVIDIA A100-SXM4-80GB, 81920, 1210, 97' '1, NVIDIA A100-SXM4-80GB, 81920, 80512, 0'
"""


def _stand_in_gpus(sshd: SshHost) -> str:
    folder = "/home/trainer/fake-gpus"
    script = STAND_IN_NVIDIA_SMI.replace("'", "'\"'\"'")
    assert sshd.run(f"mkdir -p {folder} && printf '%s' '{script}' > {folder}/nvidia-smi && "
                    f"chmod +x {folder}/nvidia-smi").returncode == 0
    return f"{folder}:/usr/local/bin:/usr/bin:/bin"


def test_check_reports_python_and_gpus_and_a_run_gets_the_freest_gpu(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    import json
    import sys

    path = _stand_in_gpus(sshd)
    config = ssh_config(sshd, env={"PATH": path})
    config["model_training"]["trainer"] = "noop"  # the host's Python has the standard library only
    srv = make_server(config)
    cmd = [sys.executable, "-m", "potato", "training", "check", "gpu", str(srv.config_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert ("Trainer 'sklearn-text-classification' could not be imported on 127.0.0.1: /usr/bin/python3 lacks "
            "scikit-learn") in out.stdout
    assert out.stdout.startswith("gpu (ssh to 127.0.0.1): Python 3.")
    assert "GPU 0: NVIDIA A100-SXM4-80GB, 1210 of 81920 MB free, 97 % busy" in out.stdout
    assert "A run would get GPU 1: NVIDIA A100-SXM4-80GB (80512 MB free)." in out.stdout
    report = json.loads(subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=60).stdout)
    assert report["ok"] is True and report["cuda_visible_devices"] == "1" and len(report["gpus"]) == 2
    page = requests.post(f"{srv.url}/admin/training/api/backends/gpu/check", headers=H).json()
    assert page["lines"] == report["lines"]
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"sleep_s": 3})
    wait_until(lambda: bool(worker_pids(run["id"])), timeout=60, what="the remote worker")
    worker = worker_pids(run["id"])[0]
    environ = Path(f"/proc/{worker}/environ").read_bytes().split(b"\0")
    assert b"CUDA_VISIBLE_DEVICES=1" in environ
    assert wait(srv, run["id"], TERMINAL, timeout=60)["state"] == "succeeded"
    assert "This run gets GPU 1: NVIDIA A100-SXM4-80GB (80512 MB free) on 127.0.0.1" in log_of(srv, run["id"])


def test_check_says_a_run_with_two_pinned_gpus_trains_on_both(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    """Issue 34: ``gpus: "0,1"``: check says how many GPUs a run would use."""
    import sys

    config = ssh_config(sshd, env={"PATH": _stand_in_gpus(sshd)}, gpus="0,1")
    config["model_training"]["trainer"] = "noop"
    srv = make_server(config)
    out = subprocess.run([sys.executable, "-m", "potato", "training", "check", "gpu", str(srv.config_path)],
                         capture_output=True, text=True, timeout=60)
    assert ("A run would get GPU 0: NVIDIA A100-SXM4-80GB, 1: NVIDIA A100-SXM4-80GB (pinned).\n"
            "A torch trainer trains data-parallel on all 2 of them (one process per GPU); the others use the "
            "first.") in out.stdout, out.stdout


def test_check_names_bitsandbytes_only_for_a_trainer_that_quantises(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    """Issue 34: hf-llm-classification needs bitsandbytes only with quantize: 8bit or 4bit."""
    import sys

    def check(params: Dict[str, Any]) -> str:
        config = ssh_config(sshd)
        config["model_training"]["trainer"] = "noop"
        config["model_training"]["trainer_params"] = {"hf-llm-classification": params}
        srv = make_server(config)
        return subprocess.run([sys.executable, "-m", "potato", "training", "check", "gpu", str(srv.config_path)],
                              capture_output=True, text=True, timeout=60).stdout

    plain = check({})
    assert "Trainer 'hf-llm-classification' could not be imported on 127.0.0.1: /usr/bin/python3 lacks torch, " \
           "transformers, peft (" in plain, plain
    quantised = check({"quantize": "4bit"})
    assert "Trainer 'hf-llm-classification' could not be imported on 127.0.0.1: /usr/bin/python3 lacks torch, " \
           "transformers, peft, bitsandbytes (" in quantised, quantised


def test_check_fails_when_no_gpu_has_enough_free(sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    import sys

    path = _stand_in_gpus(sshd)
    srv = make_server(ssh_config(sshd, env={"PATH": path}, min_free_gpu_mb=90000))
    out = subprocess.run([sys.executable, "-m", "potato", "training", "check", "gpu", str(srv.config_path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "No GPU has 90000 MB free" in out.stdout
    srv2_check = out.stdout
    assert "A run would get" not in srv2_check
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    done = wait(srv, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "failed" and done["message"].startswith("No GPU has 90000 MB free")


def test_check_fails_when_the_default_trainer_cannot_be_imported_there(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    import sys

    srv = make_server(ssh_config(sshd))  # default trainer: scikit-learn, which the host's Python lacks
    out = subprocess.run([sys.executable, "-m", "potato", "training", "check", "gpu", str(srv.config_path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "Trainer 'sklearn-text-classification' could not be imported on 127.0.0.1" in out.stdout
    assert '        packages: ["scikit-learn"]' in out.stdout  # issue 21: the config fix, not pip on Debian's Python


@fault("ssh hosts",
       "The agent on the host hangs (SIGSTOP)",
       "After heartbeat_timeout_s the run fails and the session is closed; awake again, the agent stops its worker",
       "'No word from the agent on gpu for 3 seconds'")
def test_a_silent_remote_agent_fails_the_run_after_heartbeat_timeout(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(ssh_config(sshd, heartbeat_timeout_s=3))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"sleep_s": 60})
    run_dir = srv.config_path.parent / "annotation_output" / "training" / "runs" / run["id"]
    wait_until(lambda: "starting the worker" in _text(run_dir / "agent.log"), timeout=60, what="the agent's report")
    agent = _remote_agent_pid(run["id"])
    os.kill(agent, signal.SIGSTOP)
    try:
        done = wait(srv, run["id"], TERMINAL, timeout=30)
    finally:
        os.kill(agent, signal.SIGCONT)
    assert done["state"] == "failed" and done["reason"] == "agent_lost"
    assert done["message"].startswith("No word from the agent on gpu for 3 seconds")
    assert "starting the worker" in (run_dir / "agent.log").read_text()  # its last words are kept
    # The server closes the session; the agent, awake again, stops its worker.
    wait_until(lambda: not worker_pids(run["id"]), timeout=40, what="the remote worker to be stopped")


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_packages_build_a_venv_once_that_sees_the_hosts_own_packages(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    """R14: pip installs from the package registry into remote_dir/venvs/<hash> (six: tiny, pure)."""
    srv = make_server(ssh_config(sshd, packages=["six"]))
    first = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    done = wait(srv, first["id"], TERMINAL, timeout=300)
    log = log_of(srv, first["id"])
    assert done["state"] == "succeeded", f"{done}\n{log}"
    assert "pip: " in log and "six" in log and "(built)" in log
    run_dir = srv.config_path.parent / "annotation_output" / "training" / "runs" / first["id"]
    assert "/.cache/potato-training/venvs/" in (run_dir / "agent.log").read_text()  # the worker ran in it
    probe = sshd.run("for v in ~/.cache/potato-training/venvs/*/; do $v/bin/python -c "
                     "'import six, sys; print(sys.prefix != sys.base_prefix)'; "
                     "grep -c 'include-system-site-packages = true' $v/pyvenv.cfg; done")
    assert probe.stdout.split() == ["True", "1"], probe.stdout + probe.stderr
    second = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    assert wait(srv, second["id"], TERMINAL, timeout=90)["state"] == "succeeded"
    assert "(reused)" in log_of(srv, second["id"]) and "pip: " not in log_of(srv, second["id"])


@fault("ssh hosts",
       "A socket folder left on the host by a crashed run",
       "The next run's probe clears it and the run starts",
       "Nothing; the run succeeds")
def test_a_stale_socket_left_by_a_crashed_run_is_cleared(sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    stale = "/tmp/potato-20200101-000000-dead-0badc0de"
    made = sshd.run(f"mkdir -m 700 {stale} && python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); "
                    f"s.bind('{stale}/agent.sock')\" && test -S {stale}/agent.sock")  # bound, then its owner exits
    assert made.returncode == 0, made.stderr
    srv = make_server(ssh_config(sshd))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    assert wait(srv, run["id"], TERMINAL, timeout=90)["state"] == "succeeded"
    # Other tests' crashed runs on the same host may have left folders too: this one must be among those named.
    said = re.search(r"Removed (\d+) stale agent socket folder\(s\) on 127\.0\.0\.1: (.*)", log_of(srv, run["id"]))
    assert said is not None and stale in said.group(2).split(", "), log_of(srv, run["id"])
    assert sshd.run(f"test -e {stale}").returncode == 1


@fault("Runs and their processes",
       "kill -9 or SIGTERM of the server during an ssh run, then a restart",
       "The ssh session runs apart from the server; the restarted server takes the run up again and copies the model back",
       "The run succeeds")
@pytest.mark.parametrize("stop", ["kill-9", "sigterm"])
def test_a_server_restart_during_an_ssh_run_loses_nothing(
        sshd: SshHost, make_server: Callable[..., ServerProcess], stop: str) -> None:
    """The ssh client runs apart from the server: kill -9 of the server leaves the session, the
    agent and its worker; the restarted server takes the run over and copies the model back."""
    srv = make_server(ssh_config(sshd))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"sleep_s": 8, "artifact_mb": 1})
    wait_until(lambda: bool(worker_pids(run["id"])), timeout=60, what="the remote worker")
    srv_stop = srv.kill9 if stop == "kill-9" else srv.stop
    srv_stop()  # SIGTERM: gunicorn's graceful stop; the run's processes live apart from it
    time.sleep(2)
    assert worker_pids(run["id"]), "the remote worker should go on while the server is down"
    again = ServerProcess(srv.config_path, port=srv.port).start()
    try:
        done = wait(again, run["id"], TERMINAL, timeout=90)
        log = log_of(again, run["id"])
        assert done["state"] == "succeeded", f"{done}\n{log}"
        assert "took the run over from its ssh session" in log and "Copied the model from 127.0.0.1" in log
        artifacts = srv.config_path.parent / "annotation_output" / "training" / "runs" / run["id"] / "artifacts"
        assert (artifacts / "weights.bin").stat().st_size == 1024 * 1024
        cleaned_up(sshd, f"ls -d /tmp/potato-{run['id']}-* ~/.cache/potato-training/jobs/{run['id']} 2>/dev/null; true")
    finally:
        again.stop()


def test_a_run_on_the_host_s_python_3_8_trains_and_brings_predictions_back(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    """Issue 25: a training machine may have Python 3.8 only; the code Potato copies there (worker,
    agent) runs on it, over the same ssh as with a newer Python."""
    if not sshd.python38:
        pytest.skip("the rig's host has no Python 3.8 the trainer may run (the container rig has one)")
    srv = make_server(ssh_config(sshd, python=sshd.python38))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"artifact_mb": 1})
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    log = log_of(srv, run["id"])
    assert done["state"] == "succeeded", f"{done}\n{log}"
    assert "Python 3.8." in log and f"on 127.0.0.1 ({sshd.python38})" in log, log
    export = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
    assert export["count"] == 40
