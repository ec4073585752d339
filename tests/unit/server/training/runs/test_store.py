"""Run states and their store: legal moves only, terminal states final, cancel semantics (R4, R22)."""

from __future__ import annotations

from pathlib import Path

import pytest

from potato.db import Database
from potato.server.training.runs.recorder import outcome
from potato.training.launch.supervise import Stop, StopRequest, check_limits
from potato.server.training.runs.store import Reason, RunState, RunStore, can_move


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(Database(tmp_path / "db.sqlite3"), tmp_path / "runs")


def test_transition_table() -> None:
    assert can_move(RunState.QUEUED, RunState.PREPARING)
    assert can_move(RunState.RUNNING, RunState.COPYING)
    assert can_move(RunState.QUEUED, RunState.CANCELLED)
    assert not can_move(RunState.QUEUED, RunState.SUCCEEDED)
    assert not can_move(RunState.COPYING, RunState.RUNNING)
    for terminal in (RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED):
        assert terminal.terminal
        assert not any(can_move(terminal, dst) for dst in RunState)


def test_store_moves_and_refuses_illegal_moves(store: RunStore) -> None:
    run = store.create("noop", ["sentiment"], "local", {"sleep_s": 1})
    assert store.get(run.id).state is RunState.QUEUED  # type: ignore[union-attr]
    assert store.run_dir(run.id).is_dir()
    assert not store.move(run.id, RunState.SUCCEEDED)
    assert store.move(run.id, RunState.PREPARING, step="building the bundle")
    got = store.get(run.id)
    assert got is not None and got.started_at is not None and got.step == "building the bundle"
    assert store.move(run.id, RunState.RUNNING)
    assert store.move(run.id, RunState.FAILED, reason="oom", message="too big", metrics={"x": 1})
    got = store.get(run.id)
    assert got is not None and got.reason == "oom" and got.metrics == {"x": 1} and got.finished_at
    assert not store.move(run.id, RunState.SUCCEEDED)  # a late success cannot overwrite the end


def test_cancel_queued_is_immediate_and_active_is_requested(store: RunStore) -> None:
    a = store.create("noop", ["s"], "local", {})
    b = store.create("noop", ["s"], "local", {})
    cancelled = store.request_cancel(a.id)
    assert cancelled is not None and cancelled.state is RunState.CANCELLED and cancelled.reason == "cancelled"
    store.move(b.id, RunState.PREPARING)
    requested = store.request_cancel(b.id)
    assert requested is not None and requested.state is RunState.PREPARING and requested.cancel_requested


def test_list_is_newest_first_and_queue_oldest_first(store: RunStore) -> None:
    ids = [store.create("noop", ["s"], "local", {}).id for _ in range(3)]
    assert [r.id for r in store.in_states([RunState.QUEUED])] == ids
    assert [r.id for r in store.list()] == list(reversed(ids))


def test_check_limits_cancel_and_wall_time() -> None:
    t0 = 1000.0
    assert check_limits(t0, t0 + 5, 10, 20, None) is None
    stop = check_limits(t0, t0 + 11, 10, 20, None)
    assert stop is not None and stop.reason is Reason.TIMEOUT and stop.kill_at == t0 + 31
    assert "max_wall_seconds (10 s)" in stop.message
    stop = check_limits(t0, t0 + 1, None, 3, StopRequest(Reason.CANCELLED, "Cancelled by an admin."))
    assert stop is not None and stop.reason is Reason.CANCELLED and stop.kill_at == t0 + 4


def test_outcome_table() -> None:
    ok = {"status": "succeeded"}
    assert outcome(0, ok, None) == (RunState.SUCCEEDED, None, None)
    failed = outcome(3, {"status": "failed", "reason": "import", "message": "Trainer 'x' could not be imported"}, None)
    assert failed == (RunState.FAILED, "import", "Trainer 'x' could not be imported")
    assert outcome(-9, None, None)[0:2] == (RunState.FAILED, "error")
    assert outcome(None, None, None)[2] == "The worker ended without writing exit_code; see run.log."
    assert outcome(143, {"status": "cancelled"}, Stop(Reason.CANCELLED, "Cancelled by an admin.", 0))[0] is RunState.CANCELLED
    assert outcome(-9, None, Stop(Reason.TIMEOUT, "late", 0))[:2] == (RunState.FAILED, "timeout")
