"""The agent backend's logic on the server: whether an agent is there (issue 21, R34, E10: the check,
the Agents table and a queued run's step line agree), and an agent that stops says it leaves (issue 33
item 11): what the server keeps of it, and that a stop is never held up by a server that does not
answer. tests/integration/test_agent_leave.py shows it with real processes."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from potato.config import load_config
from potato.config.schema import AgentBackendSettings, Config
from potato.db import Database
from potato.server.training.backends.agent import agent_entries, check_agent, explain_queued
from potato.server.training.runs.store import RunState, RunStore
from potato.server.training.runs.tokens import (
    LAST_SEEN_EVERY_S,
    LEFT_MEMORY_S,
    AgentRecord,
    BackendTokens,
    after_leave,
    after_poll,
)
from potato.training.agent import program as agent_module
from potato.training.agent.program import Agent
from potato.training.agent.protocol import Unreachable
from potato.training.agent.reporting import Console

A = {"id": "agent-a", "host": "box-a"}
B = {"id": "agent-b", "host": "box-b"}


def test_a_poll_the_stopped_agent_left_open_does_not_make_it_look_back() -> None:
    shown = AgentRecord(A, None, {})
    gone = after_leave(shown, "agent-a", 1000.0)
    assert gone.left_at == 1000.0 and gone.left == {"agent-a": 1000.0}
    assert after_poll(gone, 990.0, None, 1020.0) is None  # its long poll ending later writes nothing
    assert AgentRecord.parse(gone.text()) == gone


def test_a_new_agent_polling_is_shown_at_once_and_the_one_that_left_stays_gone() -> None:
    gone = after_leave(AgentRecord(A, None, {}), "agent-a", 1000.0)
    back = after_poll(gone, 999.0, B, 1001.0)  # within LAST_SEEN_EVERY_S: written all the same
    assert 1001.0 - 999.0 < LAST_SEEN_EVERY_S
    assert back is not None and back.info == B and back.left_at is None and "agent-a" in back.left
    later = after_poll(back, 1001.0, B, 1000.0 + LEFT_MEMORY_S + 1)
    assert later is not None and later.left == {}  # forgotten once no poll of it can still be open


def test_an_agent_of_ones_own_with_one_id_across_restarts_is_back_with_its_first_poll() -> None:
    gone = after_leave(AgentRecord(A, None, {}), "agent-a", 1000.0)
    back = after_poll(gone, 1000.0, A, 1002.0)
    assert back is not None and back.left_at is None and back.left == {}


def test_another_agent_leaving_does_not_mark_the_shown_one_gone() -> None:
    record = after_leave(AgentRecord(B, None, {}), "agent-a", 1000.0)
    assert record.left_at is None and record.info == B and "agent-a" in record.left


def test_a_stored_description_of_an_older_release_still_reads() -> None:
    assert AgentRecord.parse('{"host": "box", "id": "x"}') == AgentRecord({"host": "box", "id": "x"}, None, {})
    assert AgentRecord.parse(None) == AgentRecord(None, None, {})


def agent_project(make_project: Callable[..., Path], **lab: Any) -> Config:
    backend: dict[str, Any] = {"type": "agent"}
    backend.update(lab)
    return load_config(make_project(model_training={"enabled": True, "backends": {"lab": backend}}))


def test_the_check_the_agents_table_and_a_queued_run_say_the_agent_left(make_project: Callable[..., Path]) -> None:
    config = agent_project(make_project)
    backend = config.model_training.all_backends()["lab"]
    assert isinstance(backend, AgentBackendSettings)
    db = Database(config.database_path)
    tokens = BackendTokens(db)
    tokens.issue("lab")
    tokens.seen("lab", A)
    store = RunStore(db, config.training_dir / "runs")
    assert check_agent(config, backend).ok
    left_at = tokens.leave("lab", "agent-a")
    assert tokens.has_left("lab", "agent-a") and not tokens.has_left("lab", "agent-b")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(left_at))
    report = check_agent(config, backend)
    assert not report.ok
    assert f"no agent polls for backend 'lab' (its agent on box-a left at {when}): start one" in report.lines[-1]
    entry = agent_entries(config, tokens, store)[0]
    assert entry["connected"] is False and entry["left_at"] == left_at and entry["agent"] == A
    run = store.create("noop", ["sentiment"], "lab", {})
    explain_queued(config, store, [run])
    assert f"(its agent on box-a left at {when})" in run.step
    tokens.seen("lab", B)  # another agent starts polling
    assert check_agent(config, backend).ok and agent_entries(config, tokens, store)[0]["left_at"] is None


class SilentClient:
    """A server that takes the connection and never answers, or answers at once."""

    def __init__(self, hang: bool) -> None:
        self.hang = hang
        self.calls: list[tuple[str, str]] = []
        self.release = threading.Event()

    def leave(self, backend: str, agent_id: str, timeout: float) -> None:
        self.calls.append((backend, agent_id))
        if self.hang:
            self.release.wait(30)
            raise Unreachable("timed out")


def make_agent(client: Any, tmp_path: Path) -> tuple[Agent, list[str]]:
    said: list[str] = []
    console = Console()
    console.say = said.append  # type: ignore[method-assign]
    return Agent(client, "lab", tmp_path, console=console), said


def test_a_stopping_agent_says_it_leaves(tmp_path: Path) -> None:
    client = SilentClient(hang=False)
    agent, said = make_agent(client, tmp_path)
    agent.leave()
    assert client.calls == [("lab", agent.id)] and said == ["told the server this agent stops"]


def test_a_server_that_does_not_answer_holds_the_stop_up_for_leave_wait_s_at_most(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_module, "LEAVE_WAIT_S", 0.3)
    client = SilentClient(hang=True)
    agent, said = make_agent(client, tmp_path)
    started = time.monotonic()
    agent.leave()
    took = time.monotonic() - started
    client.release.set()
    assert took < 5
    assert said == ["could not tell the server this agent stops (no answer within 0.3 s); the training page shows "
                    "it as connected until it misses its polls"]


# -- check on an agent backend: is an agent there (issue 21, R34, E10) --------------------------------

def test_check_agent_is_not_ok_while_no_agent_polls(make_project: Callable[..., Path]) -> None:
    """A token alone runs nothing: the check said ok while the Agents table said "not connected"."""
    config = agent_project(make_project)
    backend = config.model_training.all_backends()["lab"]
    assert isinstance(backend, AgentBackendSettings)
    tokens = BackendTokens(Database(config.database_path))
    tokens.issue("lab")
    report = check_agent(config, backend)
    assert not report.ok and report.details["polling"] is False
    assert report.lines[1] == "last_seen: never (no agent has connected with this token yet)"
    assert report.lines[-1] == (
        "no agent polls for backend 'lab' (none has connected with its token yet): start one on the training "
        "machine with the backend's token in POTATO_TRAINING_TOKEN: `potato training agent --server "
        "http://127.0.0.1:8000 --backend lab` (a lost token: `potato training register lab config.yaml` "
        "issues a new one)")

    now = time.time()
    tokens.seen("lab", {"host": "box"}, now=now)
    polled = check_agent(config, backend, now=now + 10)
    assert polled.ok and polled.lines[1].startswith("last_seen: ") and "(10 s ago)" in polled.lines[1]
    assert not any("no agent polls" in line for line in polled.lines)
    gone = check_agent(config, backend, now=now + backend.heartbeat_timeout_s + 1)
    assert not gone.ok
    assert gone.lines[-1].startswith(f"no agent polls for backend 'lab' (the last request came "
                                     f"{backend.heartbeat_timeout_s + 1} s ago): ")


def test_the_agents_table_and_the_check_agree(make_project: Callable[..., Path]) -> None:
    """The Check button said ok while the Agents table beside it said "not connected": both now follow one
    rule, at every age of the agent's last request (here the backend waits 120 s, the table's old 60 s)."""
    config = agent_project(make_project, heartbeat_timeout_s=120)
    backend = config.model_training.all_backends()["lab"]
    assert isinstance(backend, AgentBackendSettings)
    db = Database(config.database_path)
    tokens = BackendTokens(db)
    store = RunStore(db, config.training_dir / "runs")
    tokens.issue("lab")
    now = time.time()
    tokens.seen("lab", {"host": "box"}, now=now)
    for age in (0, 30, 59, 61, 90, 119, 121, 600):
        [row] = agent_entries(config, tokens, store, now=now + age)
        report = check_agent(config, backend, now=now + age)
        assert row["connected"] is report.ok, age
        assert row["connected"] is (age <= 120), age


def test_check_agent_counts_an_agent_busy_with_a_run_as_there(make_project: Callable[..., Path]) -> None:
    """An agent that runs a job reports on the run, not on jobs/next: it is there all the same."""
    config = agent_project(make_project, heartbeat_timeout_s=60)
    backend = config.model_training.all_backends()["lab"]
    assert isinstance(backend, AgentBackendSettings)
    db = Database(config.database_path)
    BackendTokens(db).issue("lab")
    BackendTokens(db).seen("lab", {"host": "box"}, now=time.time() - 3600)
    store = RunStore(db, config.training_dir / "runs")
    run = store.create("noop", ["sentiment"], "lab", {})
    assert store.claim("lab", "agent-1", "box") is not None
    report = check_agent(config, backend)
    assert report.ok and f"The agent is running run {run.id}." in report.lines


def test_queued_step_says_why_the_run_waits(make_project: Callable[..., Path]) -> None:
    """E10 at read time: no agent polls (with the command that starts one), then, with one there, the run
    it waits behind."""
    config = agent_project(make_project)
    db = Database(config.database_path)
    store = RunStore(db, config.training_dir / "runs")
    first = store.create("noop", ["sentiment"], "lab", {})
    explain_queued(config, store, [first])
    assert first.step == ("no agent polls for backend 'lab': no token issued yet; on the server run `potato training "
                          "register lab config.yaml`, then on the training machine the commands it prints")
    BackendTokens(db).issue("lab")
    BackendTokens(db).seen("lab", {"host": "box"})
    second = store.create("noop", ["sentiment"], "lab", {})
    explain_queued(config, store, [second])
    assert second.step == "waiting in the queue"
    store.claim("lab", "agent-1", "box")
    waiting = store.get(second.id)
    assert waiting is not None and waiting.state is RunState.QUEUED
    explain_queued(config, store, [waiting])
    assert waiting.step == f"waiting in the queue behind run {first.id} (lab)"
