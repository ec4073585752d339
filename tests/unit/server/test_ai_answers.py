"""The LLM server's answers and calls as every server process shares them (issue 44, item 2b): one
process asks per question, the per-minute limit and the cap hold across processes, a dead asker's
claim expires, and a failure is asked again only after a while."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from potato.db import Database
from potato.server.assist.answers import RETRY_AFTER_S, STALE_AFTER_S, AnswerKey, Answers, Claim


@pytest.fixture
def answers(tmp_path: Path) -> Iterator[Answers]:
    db = Database(tmp_path / "p.db")
    yield Answers(db)
    db.close()


KEY = AnswerKey("r1", "sentiment", "m", "digest")


def test_one_asker_per_question_and_the_answer_is_kept(answers: Answers) -> None:
    claim, call = answers.claim(KEY, per_minute=10, max_calls=None, timeout=5, now=1000.0)
    assert claim is Claim.ASK and call is not None
    assert answers.claim(KEY, 10, None, 5, now=1001.0) == (Claim.PENDING, None)  # another process: wait
    answers.finish(KEY, call, 0.4, ["positive"], None)
    assert answers.claim(KEY, 10, None, 5, now=9999.0) == (Claim.READY, None)
    [(key, found)] = answers.get([KEY, AnswerKey("r2", "sentiment", "m", "digest")]).items()
    assert key == KEY and (found.state, found.value, found.problem) == ("ready", ["positive"], None)


def test_a_dead_askers_claim_expires(answers: Answers) -> None:
    answers.claim(KEY, 10, None, timeout=5, now=1000.0)
    assert answers.claim(KEY, 10, None, 5, now=1000.0 + 5 + STALE_AFTER_S - 1)[0] is Claim.PENDING
    assert answers.claim(KEY, 10, None, 5, now=1000.0 + 5 + STALE_AFTER_S + 1)[0] is Claim.ASK


def test_a_failure_is_kept_a_while_then_asked_again(answers: Answers) -> None:
    _, call = answers.claim(KEY, 10, None, 5, now=1000.0)
    answers.finish(KEY, call, 5.0, None, "no answer within 5 s (ai_config.timeout)")
    assert answers.claim(KEY, 10, None, 5, now=1000.0 + RETRY_AFTER_S - 1)[0] is Claim.FAILED
    assert answers.claim(KEY, 10, None, 5, now=1000.0 + RETRY_AFTER_S + 1)[0] is Claim.ASK
    status = answers.status("m", now=1000.0 + RETRY_AFTER_S + 2)
    assert (status["calls"], status["calls_last_minute"], status["pending"]) == (2, 1, 1)
    assert status["last_problem"] == {"at": 1000.0, "problem": "no answer within 5 s (ai_config.timeout)"}


def test_the_per_minute_limit_and_the_cap_count_every_call(answers: Answers) -> None:
    keys = [AnswerKey(f"r{i}", "sentiment", "m", "d") for i in range(5)]
    assert [answers.claim(k, per_minute=2, max_calls=3, timeout=5, now=1000.0)[0] for k in keys[:3]] == [
        Claim.ASK, Claim.ASK, Claim.WAITING]
    assert answers.claim(keys[2], 2, 3, 5, now=1061.0)[0] is Claim.ASK  # a minute later
    assert not answers.capped(4) and answers.capped(3)
    assert answers.claim(keys[3], 2, 3, 5, now=2000.0)[0] is Claim.CAPPED
    assert answers.claim(keys[3], 2, None, 5, now=2000.0)[0] is Claim.ASK  # the admin raised the cap
