"""The agent's and the watchdog's pure parts: verdicts, backoff, addresses, nvidia-smi, reports
(R3, R22, R23, R35, R38, E6, E10). No sockets: the reporter talks to a stand-in client that keeps
state like the server does (it skips events it already has)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from potato.server.training.runs.store import Run, RunState
from potato.server.training.runs.watchdog import CANCEL_SLACK_S, Action, RunLimits, judge
from potato.training.agent.program import Agent
from potato.training.agent.reporting import Console, Reporter
from potato.training.gpus.nvidia import parse_nvidia_smi
from potato.training.agent.protocol import Endpoint, RunEnded, Unreachable, backoff_delay
from potato.training.job.results import Reason

LIMITS = RunLimits(heartbeat_timeout_s=120, queue_timeout_s=None, grace_seconds=20, max_wall_seconds=None)


def run(state: RunState = RunState.RUNNING, **fields: Any) -> Run:
    base = {"id": "r1", "trainer": "noop", "schemas": ["s"], "backend": "lab", "state": state, "created_at": 1000.0,
            "started_at": 1000.0, "last_seen": 1000.0}
    base.update(fields)
    return Run(**base)


def test_a_silent_agent_fails_its_run_after_heartbeat_timeout() -> None:
    assert judge(run(), 1119.0, LIMITS) is None
    verdict = judge(run(), 1121.0, LIMITS)
    assert verdict is not None and verdict.action is Action.FAIL and verdict.reason is Reason.AGENT_LOST
    assert verdict.message.startswith("No word from the agent on lab for 120 seconds")


def test_queue_timeout_only_when_configured() -> None:
    queued = run(RunState.QUEUED, started_at=None, last_seen=None)
    assert judge(queued, 10**9, LIMITS) is None  # without queue_timeout_s a run waits until cancelled
    limits = RunLimits(120, 60, 20, None)
    assert judge(queued, 1059.0, limits) is None
    verdict = judge(queued, 1061.0, limits)
    assert verdict is not None and verdict.reason is Reason.QUEUE_TIMEOUT
    assert "No agent asked for work on backend 'lab' for 60 seconds" in verdict.message


def test_a_cancel_ends_the_run_once_grace_seconds_passed() -> None:
    cancelling = run(cancel_requested=True, cancel_at=1050.0, stop_reason="cancelled", last_seen=1050.0)
    assert judge(cancelling, 1050.0 + 20 + CANCEL_SLACK_S - 0.1, LIMITS) is None
    verdict = judge(cancelling, 1050.0 + 20 + CANCEL_SLACK_S + 0.1, LIMITS)
    assert verdict is not None and verdict.reason is Reason.CANCELLED


def test_max_wall_seconds_asks_the_agent_to_stop_then_fails_the_run() -> None:
    limits = RunLimits(120, None, 5, 60)
    assert judge(run(last_seen=1061.0), 1059.0, limits) is None
    stop = judge(run(last_seen=1061.0), 1061.0, limits)
    assert stop is not None and stop.action is Action.STOP and stop.reason is Reason.TIMEOUT
    asked = run(last_seen=1061.0, cancel_requested=True, cancel_at=1061.0, stop_reason="timeout")
    assert judge(asked, 1062.0, limits) is None  # asked once, not again
    late = judge(asked, 1061.0 + 5 + CANCEL_SLACK_S + 1, limits)
    assert late is not None and late.action is Action.FAIL and late.reason is Reason.TIMEOUT


def test_a_local_agent_that_died_fails_its_run_at_once() -> None:
    verdict = judge(run(backend="local"), 1001.0, LIMITS, agent_alive=False)
    assert verdict is not None and verdict.reason is Reason.AGENT_LOST and "agent.log" in verdict.message
    assert judge(run(backend="local"), 1001.0, LIMITS, agent_alive=True) is None


def test_backoff_grows_with_jitter_and_a_cap() -> None:
    assert backoff_delay(0, rand=lambda: 1.0) == 1.0
    assert backoff_delay(3, rand=lambda: 1.0) == 8.0
    assert backoff_delay(30, rand=lambda: 1.0) == 30.0
    assert backoff_delay(5, rand=lambda: 0.0) == 0.05  # never a busy loop
    assert len({backoff_delay(4) for _ in range(20)}) > 1  # jitter: agents do not retry in lockstep


@pytest.mark.parametrize("url", ["ftp://host", "host:8000", "http://user:pw@host", "http://host/?token=x", "unix:rel"])
def test_bad_server_addresses_are_refused_with_the_forms_that_work(url: str) -> None:
    with pytest.raises(ValueError):
        Endpoint(url)


def test_server_addresses() -> None:
    e = Endpoint("https://annotate.example.org/potato/")
    assert (e.scheme, e.host, e.port, e.base) == ("https", "annotate.example.org", None, "/potato")
    u = Endpoint("unix:/tmp/potato-abc/agent.sock")
    assert (u.scheme, u.socket_path) == ("unix", "/tmp/potato-abc/agent.sock")


NVIDIA_SMI = """\
0, NVIDIA A100-SXM4-80GB, 81920, 80512, 0
1, NVIDIA A100-SXM4-80GB, 81920, 1210, 97
2, Tesla K80, 11441, [N/A], [N/A]
"""


def test_nvidia_smi_csv_is_parsed_and_unreadable_lines_left_out() -> None:
    gpus = parse_nvidia_smi(NVIDIA_SMI)
    assert [(g.index, g.name, g.memory_free_mb, g.utilization_pct) for g in gpus] == [
        (0, "NVIDIA A100-SXM4-80GB", 80512, 0), (1, "NVIDIA A100-SXM4-80GB", 1210, 97)]
    assert parse_nvidia_smi("") == []


class StandInServer:
    """Keeps events the way the real server does: by their number, skipping ones it has."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.down = False
        self.cancel = False
        self.ended = False
        self.lost_replies = 0

    def events_call(self, run_id: str, seq: int, events: list, log: list) -> dict:
        if self.down:
            raise Unreachable("connection refused")
        if self.ended:
            raise RunEnded(409, "Run r1 has already ended (failed).")
        self.events.extend(events[max(0, len(self.events) - seq):])
        if self.lost_replies:
            self.lost_replies -= 1
            raise Unreachable("the answer broke off")
        return {"cancel": self.cancel, "reason": "cancelled", "message": "Cancelled by an admin."} if self.cancel \
            else {"cancel": False}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def reporter(server: StandInServer, clock: Clock, give_up: float = 300) -> Reporter:
    client: Any = type("C", (), {"events": lambda self, *a: server.events_call(*a)})()
    return Reporter(client, "r1", Console(io.StringIO(), clock), give_up, clock)


def test_events_survive_an_outage_and_a_lost_reply_without_doubles() -> None:
    server, clock = StandInServer(), Clock()
    rep = reporter(server, clock)
    rep([{"type": "step", "text": "one"}])
    assert [e["text"] for e in server.events] == ["one"]
    server.down = True
    for i in range(5):
        clock.now += 20
        assert rep([{"type": "step", "text": f"down {i}"}]) is None  # the worker goes on
    server.down = False
    server.lost_replies = 1  # the server takes a batch, its reply never arrives: the agent resends
    clock.now += 60
    rep([])
    clock.now += 60
    rep([])
    assert [e["text"] for e in server.events] == ["one"] + [f"down {i}" for i in range(5)]


def test_a_cancel_in_a_reply_becomes_a_stop_request() -> None:
    server, clock = StandInServer(), Clock()
    rep = reporter(server, clock)
    assert rep([]) is None
    server.cancel = True
    clock.now += 5
    stop = rep([])
    assert stop is not None and stop.reason is Reason.CANCELLED and stop.message == "Cancelled by an admin."


def test_an_agent_out_of_reach_for_the_give_up_time_stops_the_run() -> None:
    server, clock = StandInServer(), Clock()
    rep = reporter(server, clock, give_up=300)
    rep([])
    server.down = True
    clock.now += 299
    assert rep([]) is None
    clock.now += 2
    stop = rep([])
    assert stop is not None and stop.reason is Reason.AGENT_LOST
    assert "could not reach the server for 300 s" in stop.message


def test_a_run_the_server_ended_stops_the_worker() -> None:
    server, clock = StandInServer(), Clock()
    rep = reporter(server, clock)
    server.ended = True
    stop = rep([{"type": "log", "text": "x"}])
    assert stop is not None and rep.ended and "no longer takes this run" in stop.message


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_bar_on_a_terminal_and_none_in_a_log_file() -> None:
    tty, log = Terminal(), io.StringIO()
    for out in (tty, log):
        console = Console(out)
        console.progress("bundle", 5_000_000, 10_000_000)
        console.progress("bundle", 10_000_000, 10_000_000)
        console.say("run r1: starting the worker")
    assert "\r  bundle [###############...............] 5.0 of 10.0 MB" in tty.getvalue()
    assert tty.getvalue().endswith("run r1: starting the worker\n")
    assert "bundle" not in log.getvalue() and log.getvalue().endswith("run r1: starting the worker\n")


def test_a_session_agent_sees_its_ssh_session_end_by_its_stdout(tmp_path: Any) -> None:
    """R23/R22 over one shared connection: sshd's process lives on when a multiplexed session ends,
    but it closes the session's pipes, which a real pipe shows here without a byte written."""
    import os

    from potato.training.agent.program import reader_gone

    read_end, write_end = os.pipe()
    try:
        assert not reader_gone(write_end)
        os.close(read_end)
        assert reader_gone(write_end)
    finally:
        os.close(write_end)
    with open(tmp_path / "agent.out", "w") as log:  # stdout to a file (a hand-started agent): never gone
        assert not reader_gone(log.fileno())
    assert not reader_gone(write_end)  # closed: not ours to judge


def test_the_worker_sees_an_allow_list_of_the_environment_not_the_servers_secrets() -> None:
    """Issue found in the worker's /proc environ: HF_TOKEN, AWS keys and the admin key were there."""
    from potato.training.launch.supervise import worker_env

    base = {"PATH": "/usr/bin", "HOME": "/home/a", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "CUDA_VISIBLE_DEVICES": "1", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64", "HF_HOME": "/data/hf",
            "OMP_PROC_BIND": "close", "HF_TOKEN": "hf_secret", "AWS_SECRET_ACCESS_KEY": "aws",
            "POTATO_ADMIN_API_KEY": "admin", "POTATO_TRAINING_TOKEN": "token", "DATABASE_URL": "postgres://x"}
    env = worker_env(4, base, extra_paths=["/code"])
    for kept in ("PATH", "HOME", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "HF_HOME",
                 "OMP_PROC_BIND"):
        assert env[kept] == base[kept]
    assert not {"HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "POTATO_ADMIN_API_KEY", "POTATO_TRAINING_TOKEN",
                "DATABASE_URL"} & set(env)
    assert env["PYTHONPATH"] == "/code" and env["OMP_NUM_THREADS"] == "4" and env["MKL_NUM_THREADS"] == "4"
    passed = worker_env(None, base, pass_env=["HF_TOKEN", "POTATO_ADMIN_API_KEY"])
    assert passed["HF_TOKEN"] == "hf_secret"  # named by the admin: passed on
    assert "POTATO_ADMIN_API_KEY" not in passed  # Potato's own: never, whoever names it


def test_a_bundle_download_waits_out_a_server_restart(tmp_path: Any) -> None:
    """The server was killed mid-download and back 3 s later: five quick tries (~2 s) failed the run
    (test_a_local_run_outlives_a_server_crash, once in three CI runs). The download now keeps trying
    as long as the agent's patience with an absent server lasts."""
    import hashlib
    from pathlib import Path

    from potato.training.agent import protocol

    data = b"x" * 1000
    clock = Clock()

    class Flaky(protocol.Client):  # type: ignore[misc]
        def __init__(self) -> None:
            pass

        def _fetch_range(self, run_id: str, part: Path, have: int, size: int, progress: Any) -> None:
            if clock.now < 30:
                raise Unreachable("connection refused")
            part.write_bytes(data)

    def sleep(seconds: float) -> None:
        clock.now += seconds

    said: list[str] = []
    dest = Path(tmp_path) / "bundle.tar.gz"
    Flaky().download_bundle("r1", dest, len(data), hashlib.sha256(data).hexdigest(), say=said.append, sleep=sleep,
                            keep_trying_s=300, clock=clock)
    assert dest.read_bytes() == data and len(said) > protocol.BUNDLE_TRIES
    with pytest.raises(Unreachable):  # and gives up once that patience is spent
        clock.now = 0.0
        Flaky().download_bundle("r1", Path(tmp_path) / "b2", len(data), "0" * 64, sleep=sleep,
                                keep_trying_s=10, clock=clock)


def test_an_unreachable_server_is_said_at_once_and_then_every_ten_tries(tmp_path: Path) -> None:
    """A newcomer read "trying again in 0 s" (the first wait rounds to 0) and then a minute of
    silence, and took the agent for hung: the first line now says it keeps trying and how far apart."""
    out = io.StringIO()
    waits: list[float] = []

    class Down:
        endpoint = Endpoint("http://10.0.0.9:8000")

        def next_job(self, *args: object) -> None:
            if len(waits) == 21:
                agent.stopping = True
            raise Unreachable("http://10.0.0.9:8000: ConnectionRefusedError: [Errno 111] Connection refused")

    agent = Agent(Down(), "lab", tmp_path, console=Console(out), sleep=waits.append)  # type: ignore[arg-type]
    agent.serve()
    said = [line.split(" ", 1)[1] for line in out.getvalue().splitlines()[2:]]
    refused = "(http://10.0.0.9:8000: ConnectionRefusedError: [Errno 111] Connection refused)"
    assert said == [f"cannot reach the server {refused}; trying again until it answers, at most 30 s apart",
                    f"cannot reach the server after 10 tries {refused}; still trying",
                    f"cannot reach the server after 20 tries {refused}; still trying"]
    assert len(waits) == 22 and all(0 < w <= 30 for w in waits)
