"""Issue 20 on the ssh backend, against the real OpenSSH server: the remote worker ends with its agent
(``kill -9`` included) and leaves no job folder behind after clean-up; the job folder and its files
are the trainer account's only."""

from __future__ import annotations

import time
from typing import Callable

import pytest

from tests.harness.runs import TERMINAL, log_of, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.sshd import SshHost, ssh_config
from tests.harness.sshd import sshd  # noqa: F401 - sshd is a fixture
from tests.faults.matrix import fault

pytestmark = [pytest.mark.integration, pytest.mark.rig]
JOBS = "~/.cache/potato-training/jobs"


def remote_worker(host: SshHost, run_id: str, timeout: float = 60) -> tuple[int, int, str]:
    """(worker pid, its agent's pid, the worker's start time) from the pid file the agent wrote."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = host.run(f"p=$(cat {JOBS}/{run_id}/worker.pid 2>/dev/null) && grep -q {run_id} /proc/$p/cmdline && "
                       f"cut -d' ' -f4,22 /proc/$p/stat && echo $p").stdout.split()
        if len(out) == 3:
            return int(out[2]), int(out[0]), out[1]
        time.sleep(0.2)
    raise AssertionError(f"no remote worker for {run_id} within {timeout} s")


def alive(host: SshHost, pid: int, start: str) -> bool:
    out = host.run(f"cut -d' ' -f3,22 /proc/{pid}/stat 2>/dev/null; true").stdout.split()
    return len(out) == 2 and out[0] not in ("Z", "X") and out[1] == start


@fault("ssh hosts",
       "kill -9 of the agent on the ssh host",
       "The worker ends with it; after clean-up nothing re-creates the job folder",
       "The run fails; the host is left clean")
def test_kill_9_of_the_remote_agent_ends_its_worker_and_nothing_comes_back_after_clean_up(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:  # noqa: F811
    srv = make_server(ssh_config(sshd))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu", params={"sleep_s": 120})
    worker, agent, started = remote_worker(sshd, run["id"])
    try:
        assert "potato.training.agent" in sshd.run(f"tr '\\0' ' ' < /proc/{agent}/cmdline").stdout
        sshd.run(f"kill -9 {agent}")
        done = wait(srv, run["id"], TERMINAL, timeout=60)
        assert done["state"] == "failed", (done, log_of(srv, run["id"]))
        deadline = time.monotonic() + 30
        while alive(sshd, worker, started):
            assert time.monotonic() < deadline, "the remote worker outlived its agent"
            time.sleep(0.2)
        time.sleep(2)  # what an orphan would write after clean-up
        assert sshd.run(f"test -e {JOBS}/{run['id']}").returncode != 0, "the job folder came back after clean-up"
    finally:
        if alive(sshd, worker, started):
            sshd.run(f"kill -9 -{worker}")  # its process group: ours, never left behind by a failure


@fault("Tokens and secrets",
       "Another account on the ssh host looks into a kept job folder",
       "Folders 0700, files 0600",
       "Nothing to read")
def test_a_kept_remote_job_folder_is_the_trainer_s_only(
        sshd: SshHost, make_server: Callable[..., ServerProcess]) -> None:  # noqa: F811
    srv = make_server(ssh_config(sshd, fetch_artifacts=False, keep_remote=True))
    sshd.run(f"mkdir -p {JOBS} && chmod 755 {JOBS}")  # as an older version or a plain mkdir -p left it
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu")
    assert wait(srv, run["id"], TERMINAL, timeout=90)["state"] == "succeeded"
    listing = sshd.run(f"cd {JOBS} && stat -c '%a %n' . {run['id']} && find {run['id']} -mindepth 1 "
                       "-exec stat -c '%a %n' {} +").stdout.splitlines()
    names = {line.split(" ", 1)[1] for line in listing}
    assert {f"{run['id']}/predictions.jsonl", f"{run['id']}/result.json", f"{run['id']}/events.jsonl"} <= names
    loose = [line for line in listing if not line.split(" ", 1)[0].endswith("00")]
    assert loose == []
