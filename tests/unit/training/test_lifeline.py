"""The worker ends with its agent, however the agent ends (issue 20): its stdin is a lifeline pipe
that only the agent holds. A stand-in agent (a child process that starts the worker exactly as the
agent does, with ``WorkerProcess.start``) is killed with SIGKILL; the worker must notice, say so
and be gone. Only processes these tests started are looked at."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from potato.training.launch import supervise
from potato.training.worker import program as worker
from potato.training.launch.containers import ContainerSpec, worker_argv
from tests.faults.matrix import fault
from tests.harness.jobdirs import read_exit_code, read_jsonl, read_result, review_job, worker_env
from tests.harness.procs import process_start

STAND_IN_AGENT = """
import sys, time
from pathlib import Path
from potato.training.launch.supervise import WorkerProcess
proc = WorkerProcess.start(Path(sys.argv[1]), sys.executable)
print(proc.pid, flush=True)
time.sleep(600)
"""
AGENT_ENDED = "The agent that started this worker ended"


def wait_gone(pid: int, start: str, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process_start(pid) != start:
            return True
        time.sleep(0.1)
    return False


def wait_for_event(job_dir: Path, text: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    path = job_dir / "events.jsonl"
    while time.monotonic() < deadline:
        if path.exists() and any(text in str(e.get("text", "")) for e in read_jsonl(path)):
            return
        time.sleep(0.05)
    raise AssertionError(f"no event with {text!r} within {timeout} s")


@pytest.fixture
def stand_in_agent() -> Iterator[Any]:
    """Starts the stand-in agent for a job dir; returns (agent process, worker pid, worker start time)."""
    started: list[tuple[subprocess.Popen[bytes], int, str]] = []

    def start(job_dir: Path) -> tuple[subprocess.Popen[bytes], int, str]:
        agent = subprocess.Popen([sys.executable, "-c", STAND_IN_AGENT, str(job_dir)], env=worker_env(),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        assert agent.stdout is not None
        pid = int(agent.stdout.readline())
        start_time = process_start(pid)
        assert start_time is not None
        assert b"potato.training.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
        started.append((agent, pid, start_time))
        return agent, pid, start_time

    yield start
    for agent, pid, start_time in started:  # whatever a failed test left: ours only, by pid and start time
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        if agent.stdout is not None:
            agent.stdout.close()
        if process_start(pid) == start_time:
            os.killpg(pid, signal.SIGKILL)


def test_the_worker_stops_itself_when_its_agent_is_killed(tmp_path: Path, stand_in_agent: Any) -> None:
    job_dir = review_job(tmp_path / "jobs" / "r1", "noop", params={"sleep_s": 300}, num_threads=1)
    agent, pid, start = stand_in_agent(job_dir)
    wait_for_event(job_dir, "training on")  # in the trainer's fit
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    assert wait_gone(pid, start), "the worker outlived its agent"
    # A warm stop: the run's files are final, and say why it stopped.
    assert read_exit_code(job_dir) == 143
    result = read_result(job_dir)
    assert result["status"] == "cancelled" and "agent that started this worker ended" in result["message"]
    warnings = [e["text"] for e in read_jsonl(job_dir / "events.jsonl") if e.get("level") == "warning"]
    assert any(AGENT_ENDED in text and "SIGTERM" in text for text in warnings), warnings
    assert AGENT_ENDED in (job_dir / "stderr.log").read_text()


@fault("Runs and their processes",
       "The agent dies and its worker ignores SIGTERM",
       "The worker kills itself grace_seconds later",
       "Nothing keeps running")
def test_a_worker_that_ignores_sigterm_is_killed_grace_seconds_after_its_agent(tmp_path: Path,
                                                                              stand_in_agent: Any) -> None:
    job_dir = review_job(tmp_path / "jobs" / "r2", "noop", params={"sleep_s": 300, "ignore_term": True},
                         num_threads=1, grace_seconds=1)
    agent, pid, start = stand_in_agent(job_dir)
    wait_for_event(job_dir, "ignoring SIGTERM")
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    assert wait_gone(pid, start), "the worker outlived its agent"
    assert not (job_dir / "exit_code").exists()  # SIGKILL: nothing written, as for the agent's own cold stop
    assert any(AGENT_ENDED in str(e.get("text")) and "SIGKILL in 1 s" in str(e.get("text"))
               for e in read_jsonl(job_dir / "events.jsonl"))


def test_a_worker_started_by_hand_ignores_its_stdin(tmp_path: Path) -> None:
    """No lifeline option: /dev/null (end of file at once) or a terminal on stdin means nothing."""
    job_dir = review_job(tmp_path, "noop", params={"sleep_s": 1.0}, num_threads=1)
    proc = subprocess.run([sys.executable, "-m", "potato.training.worker", str(job_dir)], env=worker_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert read_result(job_dir)["status"] == "succeeded"
    assert AGENT_ENDED not in (job_dir / "events.jsonl").read_text()


def test_a_supervised_worker_that_ends_leaves_no_lifeline_open(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop", num_threads=1)
    proc = supervise.WorkerProcess.start(job_dir)
    ending = supervise.Supervisor(proc, lambda events: None, grace_seconds=5).run()
    assert ending.exit_code == 0, (job_dir / "worker.out").read_text()
    assert proc.proc.stdin is not None and proc.proc.stdin.closed


def test_the_lifeline_reaches_a_worker_in_a_container() -> None:
    docker = worker_argv(ContainerSpec("docker", "img"), "/s/jobs/r1", "/s/code", "/s", lifeline=True)
    assert docker[:5] == ["docker", "run", "--rm", "--init", "-i"]  # -i: stdin (and its end) into the container
    assert docker[-3:] == ["potato.training.worker", "--lifeline-stdin", "/s/jobs/r1"]
    apptainer = worker_argv(ContainerSpec("apptainer", "i.sif"), "/s/jobs/r1", "/s/code", "/s", lifeline=True)
    assert apptainer[-3:] == ["potato.training.worker", "--lifeline-stdin", "/s/jobs/r1"]  # stdin is inherited
    assert supervise.LIFELINE_FLAG == worker.LIFELINE_FLAG


def test_worker_files_are_private_under_a_permissive_umask(tmp_path: Path) -> None:
    """Another account on the training host must not read items, labels or predictions (issue 20)."""
    job_dir = review_job(tmp_path / "job", "noop", num_threads=1)
    job_dir.chmod(0o700)  # as the agent makes it
    wrote_before = {p for p in job_dir.rglob("*")}
    proc = subprocess.run(["/bin/sh", "-c", 'umask 022; exec "$0" -m potato.training.worker "$1"', sys.executable,
                           str(job_dir)], env=worker_env(), capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    written = {p for p in job_dir.rglob("*")} - wrote_before
    assert {"result.json", "predictions.jsonl", "events.jsonl", "stderr.log", "exit_code", "artifacts"} <= {
        p.name for p in written}
    loose = {str(p.relative_to(job_dir)): oct(p.stat().st_mode & 0o777) for p in written if p.stat().st_mode & 0o077}
    assert loose == {}


def test_the_agent_tightens_a_job_folder_that_was_there_with_wider_modes(tmp_path: Path) -> None:
    from potato.training.job.private import private_dir  # the agent's, as the server's

    jobs = tmp_path / "workdir" / "jobs"
    (jobs / "r1").mkdir(parents=True)
    jobs.chmod(0o755)
    (jobs / "r1").chmod(0o755)
    made = private_dir(private_dir(jobs) / "r1")
    assert made == jobs / "r1"
    assert jobs.stat().st_mode & 0o777 == 0o700 and made.stat().st_mode & 0o777 == 0o700
    fresh = private_dir(tmp_path / "elsewhere" / "jobs" / "r2")
    assert fresh.stat().st_mode & 0o777 == 0o700


def test_the_agent_makes_everything_it_writes_private(tmp_path: Path) -> None:
    """The agent's entry point sets umask 077 first (the bundle it downloads, worker.out, job.sh); here
    it cannot reach its server, gives up at once, and says what its umask then is."""
    token = tmp_path / "token"
    token.write_text("t" * 40)
    script = ("import os, sys; os.umask(0o022); from potato.training.agent import program as agent; "
              "code = agent.main(sys.argv[1:]); print('umask', oct(os.umask(0)), code)")
    proc = subprocess.run([sys.executable, "-c", script, "--server", "http://127.0.0.1:9", "--backend", "b", "--run",
                           "r1", "--token-file", str(token), "--workdir", str(tmp_path / "w"), "--give-up-after", "0"],
                          env=worker_env(), capture_output=True, timeout=60, check=False)
    assert proc.stdout.decode().split()[-3:] == ["umask", "0o77", "1"], proc.stderr.decode()


class EndsAsTheStopIsAsked:
    """A worker that exits with 3 (its own SIGTERM handler: 'Cancelled (SIGTERM)') in the same poll in
    which the agent's reporter first answers with a stop request."""

    def __init__(self, job_dir: Path, code: int = 3) -> None:
        self.job_dir = job_dir
        self.code = code
        self.polls = 0
        self.signals: list[str] = []

    def poll(self) -> int | None:
        self.polls += 1
        return self.code if self.polls >= 2 else None

    def terminate(self) -> None:
        self.signals.append("TERM")

    def kill(self) -> None:
        self.signals.append("KILL")

    def ended_by(self) -> supervise.Stop | None:
        return None


def test_a_stop_asked_for_as_the_worker_ends_is_what_ended_it(tmp_path: Path) -> None:
    """How it was found: `systemctl stop potato-agent` under real systemd signals the agent and its
    worker at once; the worker's SIGTERM exit came before the agent's warm stop reached it, and the run
    was recorded failed (reason cancelled) instead of cancelled."""
    from potato.training.job.results import Reason

    asked = supervise.StopRequest(Reason.CANCELLED, "Stopped on the training machine (lab).")
    calls = [None, asked, asked]
    worker = EndsAsTheStopIsAsked(tmp_path)
    ending = supervise.Supervisor(worker, lambda events: calls.pop(0), grace_seconds=5, sleep=lambda s: None).run()
    assert ending.stop is not None and (ending.stop.reason, ending.stop.message) == (asked.reason, asked.message)
    assert worker.signals == []  # it had ended: nothing to signal

    succeeded = EndsAsTheStopIsAsked(tmp_path, code=0)  # a worker that finished anyway keeps its success
    calls = [None, asked, asked]
    assert supervise.Supervisor(succeeded, lambda events: calls.pop(0), grace_seconds=5,
                                sleep=lambda s: None).run().stop is None
