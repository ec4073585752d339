"""What real hosts do that the ssh backend must survive, against the real sshd and SLURM (issue 20):
a ~/.bashrc that prints, a hung nvidia-smi, a step that never ends, the server's secrets, a model
too large in total, and a shared control master closed under another command.

Tests that need their own login shell get a throwaway account (its own HOME and ~/.bashrc), so the
``trainer`` account the other suites use is never changed."""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from potato.config.schema import SshBackendSettings
from potato.server.training.backends.ssh.command import SshFailed, SshTarget, SshStep
from potato.server.training.backends.ssh.host import close_connection, run_ssh
from tests.conftest import ADMIN_KEY
from tests.harness.waiting import wait_until
from tests.harness.runs import TERMINAL, log_of, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.slurmcluster import start_cluster
from tests.harness.sshd import SshHost, cleaned_up, ssh_config, start_sshd
from tests.faults.matrix import fault

pytestmark = [pytest.mark.integration, pytest.mark.rig]

WELCOME = "Welcome to the GPU box"


@pytest.fixture(scope="module")
def sshd() -> SshHost:
    return start_sshd()


@pytest.fixture
def account(sshd: SshHost) -> Iterator[SshHost]:
    """A new account on the test host that logs in with the rig's key, removed afterwards."""
    with sshd.account() as host:
        yield host


def greeting_bashrc(host: SshHost) -> None:
    """An ``echo`` at the top of ~/.bashrc, before Debian's "not interactive: return" guard."""
    lines = f'echo "{WELCOME}"\necho "bashrc says hello on stderr" >&2\n'
    done = host.run("cat - ~/.bashrc > ~/.bashrc.new && mv ~/.bashrc.new ~/.bashrc", input=lines)
    assert done.returncode == 0, done.stderr


def artifacts_of(srv: ServerProcess, run_id: str) -> Path:
    return srv.config_path.parent / "annotation_output" / "training" / "runs" / run_id / "artifacts"


def check(srv: ServerProcess, backend: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "potato", "training", "check", backend, str(srv.config_path)],
                          capture_output=True, text=True, timeout=150)


# -- 1. a login shell that prints ------------------------------------------------------------------

@fault("ssh hosts",
       "The host's ~/.bashrc prints a greeting",
       "Every command's output is framed; what the login shell prints is skipped and named once",
       "run.log: 'The login shell on <host> printed text before the command's output'; the run succeeds")
def test_a_bashrc_that_prints_is_ignored_and_named_once(
        account: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    """Debian's bash reads ~/.bashrc for `ssh host command` too: what it prints comes before every
    command's output, the copy-back's tar stream included."""
    greeting_bashrc(account)
    assert account.run("true").stdout == WELCOME + "\n"  # this sshd's bash does read it
    srv = make_server(ssh_config(account, keep_connection_s=0))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"artifact_mb": 1})
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    log = log_of(srv, run["id"])
    assert done["state"] == "succeeded", f"{done}\n{log}"
    notice = (f"The login shell on 127.0.0.1 printed text before the command's output (from ~/.bashrc or similar); "
              f"it is ignored: '{WELCOME}")
    assert "on 127.0.0.1 (/usr/bin/python3)" in log and "(mode 600, in a 0700 folder)" in log
    assert (artifacts_of(srv, run["id"]) / "weights.bin").stat().st_size == 1024 * 1024
    cleaned_up(account, "ls ~/.cache/potato-training/jobs", WELCOME)  # the job folder is gone
    log = log_of(srv, run["id"])  # with the clean-up's lines, if it had any to say
    assert log.count(notice) == 1, log
    assert "Clean-up:" not in log and "Could not clean up" not in log, log
    out = check(srv, "gpu")
    assert out.stdout.startswith("gpu (ssh to 127.0.0.1): Python 3."), out.stdout + out.stderr
    assert notice in out.stdout
    assert "/usr/bin/python3 lacks scikit-learn (" in out.stdout  # the module list is not the greeting's words


@pytest.fixture
def login_account() -> Iterator[SshHost]:
    """A throwaway account on the rig's SLURM login node (which clears nothing of the trainer's)."""
    with start_cluster(clean=False).login.account() as host:
        yield host


@fault("SLURM clusters",
       "The login node's ~/.bashrc prints a greeting",
       "Skipped and named once, as on an ssh host",
       "The check and the run succeed")
def test_a_bashrc_that_prints_on_a_slurm_login_node(
        login_account: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    """SLURM's probe, remote_dir's real path, job_python, sinfo and the run's own commands."""
    account = login_account
    greeting_bashrc(account)
    login = dataclasses.replace(start_cluster(clean=False), login=account)
    srv = make_server({"model_training": {
        "enabled": True, "grace_seconds": 2,
        "backends": {"cluster": login.backend(mem="500M", keep_connection_s=0)},
    }})
    out = check(srv, "cluster")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"remote_dir: /home/{account.user}/potato-slurm\n" in out.stdout
    assert "SLURM: slurm-wlm 2" in out.stdout and WELCOME not in out.stdout.replace(f"ignored: '{WELCOME}", "")
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"artifact_mb": 1})
    done = wait(srv, run["id"], TERMINAL, timeout=120)
    log = log_of(srv, run["id"])
    assert done["state"] == "succeeded", f"{done}\n{log}"
    assert log.count("The login shell on 127.0.0.1 printed text before the command's output") == 1
    assert (artifacts_of(srv, run["id"]) / "weights.bin").stat().st_size == 1024 * 1024


# -- 2. deadlines ------------------------------------------------------------------------------------

HUNG_NVIDIA_SMI = '#!/bin/sh\necho $$ > "$HOME/hung-gpus/pid"\nexec sleep 86400\n'


@pytest.fixture
def hung_gpus(sshd: SshHost) -> Iterator[str]:
    """A PATH whose nvidia-smi never answers (a hung driver), on the trainer's account; removed after."""
    folder = "/home/trainer/hung-gpus"
    made = sshd.run(f"mkdir -p {folder} && cat > {folder}/nvidia-smi && chmod 755 {folder}/nvidia-smi",
                    input=HUNG_NVIDIA_SMI)
    assert made.returncode == 0, made.stderr
    try:
        yield f"{folder}:/usr/local/bin:/usr/bin:/bin"
    finally:
        sshd.run(f"kill -KILL $(cat {folder}/pid 2>/dev/null) 2>/dev/null; rm -rf {folder}")


def smi_ran_and_is_gone(sshd: SshHost) -> bool:
    """The fake nvidia-smi ran and is gone now (dead: a zombie until reaped counts as gone)."""
    pid = sshd.run("cat ~/hung-gpus/pid").stdout.strip()
    if not pid:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def smi_killed(sshd: SshHost) -> None:
    wait_until(lambda: smi_ran_and_is_gone(sshd), timeout=10, what="the hung nvidia-smi to be killed on the host")


@pytest.mark.slow  # nvidia-smi gets its 20 s, twice
@fault("ssh hosts",
       "nvidia-smi hangs on the host",
       "The probe kills it after 20 s; the check says the GPUs are unknown; a run that needs a GPU fails saying so",
       "'nvidia-smi on <host> did not answer within 20 s'")
def test_a_hung_nvidia_smi_is_killed_and_named(
        hung_gpus: str, sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(ssh_config(sshd, env={"PATH": hung_gpus}, heartbeat_timeout_s=5))
    out = check(srv, "gpu")
    assert out.returncode == 1
    assert "GPUs unknown: nvidia-smi on 127.0.0.1 did not answer within 20 s; the GPUs are not listed" in out.stdout
    assert "gpus: none trains on the CPU" in out.stdout
    smi_killed(sshd)  # on the host, not left hanging there
    sshd.run("rm ~/hung-gpus/pid")
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    assert done["state"] == "failed"
    assert done["message"].startswith("nvidia-smi on 127.0.0.1 did not answer within 20 s; the GPUs are not listed, "
                                      "so gpus: auto cannot choose one."), done  # not "No word from the agent"
    smi_killed(sshd)
    srv.stop()
    srv = make_server(ssh_config(sshd, env={"PATH": hung_gpus}, gpus="none"))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    assert done["state"] == "succeeded", log_of(srv, run["id"])
    assert "This run gets the CPU" in log_of(srv, run["id"])


@pytest.fixture
def control() -> Iterator[Path]:
    """A control folder of this test's own, short enough for ssh's socket names."""
    folder = Path(tempfile.mkdtemp(prefix="pq-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _target(host: SshHost, control: Path, **extra: Any) -> SshTarget:
    return SshTarget(SshBackendSettings(name="gpu", host=host.host, port=host.port, user=host.user,
                                identity_file=host.identity_file, python=host.python, **extra), control)


@fault("ssh hosts",
       "A remote step hangs",
       "At its deadline it fails naming the step, and its processes on the host are ended",
       "'<host>: <step> took longer than N s'")
def test_a_step_past_its_deadline_is_named_and_what_it_started_is_stopped(sshd: SshHost, control: Path) -> None:
    target = _target(sshd, control, keep_connection_s=0)
    pid_file = f"/tmp/potato-deadline-{secrets.token_hex(4)}"
    try:
        with pytest.raises(SshFailed) as failed:
            run_ssh(target, f"sh -c 'echo $$ > {pid_file}; exec sleep 600'", step=SshStep("copying Potato's code", 2,
                                                                                         "check the disk there"))
        assert str(failed.value) == ("127.0.0.1: copying Potato's code took longer than 2 s; check the disk there. "
                                     "The ssh command was ended and what it started there was stopped.")
        remote = sshd.run(f"cat {pid_file}").stdout.strip()
        assert remote, "the remote command wrote its pid"
        wait_until(lambda: not Path(f"/proc/{remote}").exists(), timeout=10, what="the remote sleep to end")
    finally:
        sshd.run(f"rm -f {pid_file}")
        subprocess.run(target.exit_master(), capture_output=True, timeout=30)


# -- 3. the ssh client's environment --------------------------------------------------------------

def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1:
        status = Path(f"/proc/{pid}/status").read_text()
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        chain.append(pid)
    return chain


def _environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
    return dict(p.split("=", 1) for p in pairs if "=" in p)


@fault("Tokens and secrets",
       "The server's environment holds HF_TOKEN and cloud keys; someone reads the ssh client's environment",
       "The ssh client gets an allow-list (PATH, HOME, SSH_AUTH_SOCK, ...)",
       "No secret of the server's")
def test_the_ssh_client_gets_no_server_secrets(
        sshd: SshHost, make_server: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    agent_sock = tmp_path / "agent.sock"
    agent = subprocess.run(["ssh-agent", "-a", str(agent_sock), "-s"], capture_output=True, text=True, check=True)
    agent_pid = int(agent.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        monkeypatch.setenv("HF_TOKEN", "hf_secret_of_the_server")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-of-the-server")
        monkeypatch.setenv("POTATO_SOMETHING_SECRET", "potato-secret")
        monkeypatch.setenv("SSH_AUTH_SOCK", str(agent_sock))
        monkeypatch.setenv("LC_ALL", "C.UTF-8")
        srv = make_server(ssh_config(sshd))
        run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"sleep_s": 5})
        session_file = srv.config_path.parent / "annotation_output" / "training" / "runs" / run["id"] / "ssh-session.json"
        wait_until(session_file.exists, timeout=60, what="the run's ssh session")
        client = int(json.loads(session_file.read_text())["pid"])
        assert srv.proc is not None and srv.proc.pid in _ancestors(client)  # this test's server started it
        env = _environ(client)
        assert "HF_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env and "POTATO_SOMETHING_SECRET" not in env
        assert env["SSH_AUTH_SOCK"] == str(agent_sock) and env["LC_ALL"] == "C.UTF-8" and env["PATH"]
        assert wait(srv, run["id"], TERMINAL, timeout=60)["state"] == "succeeded"
    finally:
        os.kill(agent_pid, signal.SIGTERM)


# -- 4. the model's total size ---------------------------------------------------------------------

@fault("The disk",
       "Many model files that together pass max_artifacts_total_mb",
       "None is copied (nothing partial); all stay on the host with the job folder, artifact_uri names them",
       "run.log names the total and the fix; the run succeeds with its predictions",
       lost="no file is copied (all stay on the host)")
def test_model_files_over_max_artifacts_total_mb_all_stay_on_the_host(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:
    """Each file is under max_artifact_mb, together they pass max_artifacts_total_mb: none comes back,
    nothing partial, and the run says where they are."""
    srv = make_server(ssh_config(sshd, max_artifact_mb=3, max_artifacts_total_mb=2))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"artifact_mb": 2})
    done = wait(srv, run["id"], TERMINAL, timeout=90)
    log = log_of(srv, run["id"])
    assert done["state"] == "succeeded", f"{done}\n{log}"
    folder = f"/home/trainer/.cache/potato-training/jobs/{run['id']}/artifacts"
    assert done["artifact_uri"] == f"127.0.0.1:{folder}"
    assert "over max_artifacts_total_mb (2 MB): none was copied; they stay on 127.0.0.1 in " + folder in log
    assert "Raise max_artifacts_total_mb" in log
    assert not artifacts_of(srv, run["id"]).exists() and not artifacts_of(srv, run["id"]).with_suffix(".part").exists()
    assert sshd.run(f"ls {folder}").stdout.split() == ["labels.json", "model.json", "weights.bin"]
    export = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions",
                          headers={"X-API-Key": ADMIN_KEY}).json()
    assert export["count"] == 40  # the predictions came back all the same
    sshd.run(f"rm -rf ~/.cache/potato-training/jobs/{run['id']}")


# -- 5. one control master, shared -----------------------------------------------------------------

@fault("ssh hosts",
       "A run's end closes the shared connection while another backend's command runs on it",
       "The connection is stopped for new commands only; the running one finishes",
       "Nothing; no 'ssh exited 255'")
def test_closing_the_connection_at_a_runs_end_spares_a_command_still_on_it(sshd: SshHost, control: Path) -> None:
    """Backends and checks that reach the same user@host:port share one master. A run with
    keep_connection_s: 0 closes it at its end; a check (or another backend's command) running on
    it just then must finish, not die with "ssh exited 255" and no message."""
    ssh_run, check_ = _target(sshd, control, keep_connection_s=0), _target(sshd, control)
    started = f"/tmp/potato-started-{secrets.token_hex(4)}"  # written by the trainer, on the host
    assert run_ssh(check_, "true").returncode == 0  # the master is up
    answer: list[Any] = []

    def in_flight() -> None:
        try:
            answer.append(run_ssh(check_, f"touch {started}; sleep 2; echo finished"))
        except SshFailed as exc:
            answer.append(exc)

    thread = threading.Thread(target=in_flight)
    thread.start()
    try:
        wait_until(lambda: sshd.run(f"test -e {started}").returncode == 0, timeout=30,
                   what="the command on the shared connection")
        assert close_connection(ssh_run) is None  # what the run's clean-up does
    finally:
        thread.join(30)
        sshd.run(f"rm -f {started}")
    assert not isinstance(answer[0], SshFailed), answer[0]
    assert answer[0].returncode == 0 and answer[0].stdout == b"finished\n"
    assert run_ssh(check_, "echo next").stdout == b"next\n"  # the next command gets a new connection
    subprocess.run(check_.exit_master(), capture_output=True, timeout=30)
