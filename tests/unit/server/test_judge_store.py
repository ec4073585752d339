"""judge_calibration's run as every server process shares it (issue 44, item 4): one run at a time,
a run whose process died may be taken over, and a process that lost its run stops writing to it."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from potato.db import Database
from potato.server.judging.store import GENERATING, SAMPLED, STOPPED, Draw, JudgeStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JudgeStore]:
    db = Database(tmp_path / "p.db")
    yield JudgeStore(db)
    db.close()


def test_one_run_at_a_time_and_a_silent_one_is_taken_over(store: JudgeStore) -> None:
    assert store.start("digest", "worker-1", stale_after=120, now=1000.0) is None
    running = store.start("digest", "worker-2", stale_after=120, now=1060.0)
    assert running is not None and (running.owner, running.state) == ("worker-1", GENERATING)
    assert store.start("digest", "worker-2", stale_after=120, now=1121.0) is None  # worker-1 stopped beating
    assert not store.beat("worker-1")  # it lost the run: it stops rather than write beside worker-2
    assert store.beat("worker-2")
    store.finish("worker-1", ["x"])  # a late finish of the lost run changes nothing
    assert store.state().state == GENERATING
    store.finish("worker-2", ["r2", "r1"])
    state = store.state()
    assert (state.state, state.sample, state.problem) == (SAMPLED, ["r2", "r1"], None)


def test_a_stopped_run_keeps_its_answers_and_says_why(store: JudgeStore) -> None:
    store.start("digest", "w", stale_after=120)
    store.add("digest", [Draw("m", "r1", "sentiment", 0, "positive", "{}", None, 0.5),
                         Draw("m", "r1", "sentiment", 1, None, "joy", "the reply names none", 0.4)])
    store.stop("w", "m: nothing answers")
    assert (store.state().state, store.state().problem) == (STOPPED, "m: nothing answers")
    assert store.done("digest") == {("m", "r1", "sentiment", 0), ("m", "r1", "sentiment", 1)}
    assert store.count("digest") == (2, 1)
    assert [d.label for d in store.draws("digest")[("m", "r1", "sentiment")]] == ["positive", None]
    assert store.done("another prompt") == set() and store.count("another prompt") == (0, 0)
