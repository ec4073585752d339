"""When the watchdog judges an agent silent (pure): from its last word, or from the server's start when
that came later, so the server's own downtime is never the agent's silence (issue 42)."""

from __future__ import annotations

from typing import Any

from potato.server.training.runs.store import Run, RunState
from potato.server.training.runs.watchdog import Action, RunLimits, judge, silent_since
from potato.training.job.results import Reason

LIMITS = RunLimits(heartbeat_timeout_s=8, queue_timeout_s=None, grace_seconds=2, max_wall_seconds=None)


def running(**fields: Any) -> Run:
    base = {"id": "r1", "trainer": "noop", "schemas": ["s"], "backend": "lab", "state": RunState.RUNNING,
            "created_at": 1000.0, "started_at": 1000.0, "last_seen": 1000.0}
    base.update(fields)
    return Run(**base)


def test_silence_counts_from_the_agent_s_last_word_or_the_server_s_start_whichever_is_later() -> None:
    assert silent_since(1000.0, None) == 1000.0  # no start to count from: the last word alone
    assert silent_since(1000.0, 1012.0) == 1012.0  # the server was down from 1004 to 1012
    assert silent_since(1020.0, 1012.0) == 1020.0  # heard from since the start
    assert silent_since(None, 1012.0) is None  # no agent speaks for the run (yet): nothing to judge


def test_after_a_start_a_running_run_gets_a_whole_heartbeat_window_before_it_is_judged() -> None:
    """The issue's numbers: the agent's last word at 1000, the server down for 4 s and started at 1006;
    at 1009 the server had counted 9 s of silence and failed the run, though it had been up for 3 s."""
    run = running(last_seen=1000.0)
    counted_downtime = judge(run, 1009.0, LIMITS)  # no start given: the silence from the last word alone
    assert counted_downtime is not None and counted_downtime.action is Action.FAIL
    assert judge(run, 1009.0, LIMITS, watching_since=1006.0) is None
    assert judge(run, 1014.0, LIMITS, watching_since=1006.0) is None
    verdict = judge(run, 1014.5, LIMITS, watching_since=1006.0)  # 8.5 s up, and still no word
    assert verdict is not None and verdict.action is Action.FAIL and verdict.reason is Reason.AGENT_LOST
    assert verdict.message.startswith("No word from the agent on lab for 8 seconds")


def test_a_start_long_ago_changes_nothing() -> None:
    run = running(last_seen=5000.0)
    assert judge(run, 5008.5, LIMITS, watching_since=1000.0) is not None
    assert judge(run, 5007.5, LIMITS, watching_since=1000.0) is None
