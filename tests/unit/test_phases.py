"""Issue 36 (phases): what comes next, and the training's pass rule as upstream counts it (pure)."""

from __future__ import annotations

from potato.study.platforms import Outcome
from potato.study.phases import Attempt, GoldItem, PassRule, Phase, PhaseKind, Phases, next_step, training_state

GOLD = Phase("training", PhaseKind.TRAINING, gold=(GoldItem("t1", "a", {"s": "x"}), GoldItem("t2", "b", {"s": "y"}),
                                                   GoldItem("t3", "c", {"s": "x"})))


def test_the_pages_come_in_order_around_the_items() -> None:
    phases = Phases((Phase("consent", PhaseKind.CONSENT), Phase("annotation", PhaseKind.ANNOTATION),
                     Phase("post", PhaseKind.POSTSTUDY)))
    assert next_step(phases, {}, items_done=False).phase == phases.order[0]
    assert next_step(phases, {"consent": "done"}, items_done=False).annotating
    assert next_step(phases, {"consent": "done"}, items_done=True).phase == phases.order[2]
    assert next_step(phases, {"consent": "done", "post": "done"}, items_done=True) == next_step(None, {}, True)
    assert next_step(phases, {"consent": "screened_out"}, items_done=False).ended is Outcome.SCREENED_OUT


def test_mistakes_end_the_training_at_the_limit() -> None:
    wrong, right = (lambda i: Attempt(i, False)), (lambda i: Attempt(i, True))
    rule = PassRule(min_correct=1, max_mistakes=2)
    assert training_state(GOLD, rule, [wrong("t1")]).verdict is None  # one mistake of two allowed: try again
    assert training_state(GOLD, rule, [wrong("t1"), wrong("t1")]).verdict == "failed"
    per_question = PassRule(min_correct=0, max_mistakes_per_question=2)
    assert training_state(GOLD, per_question, [wrong("t1"), right("t1"), wrong("t2")]).verdict is None
    assert training_state(GOLD, per_question, [wrong("t1"), right("t1"), wrong("t2"), wrong("t2")]).verdict == "failed"


def test_min_correct_counts_first_tries() -> None:
    wrong, right = (lambda i: Attempt(i, False)), (lambda i: Attempt(i, True))
    attempts = [wrong("t1"), right("t1"), right("t2"), right("t3")]
    assert training_state(GOLD, PassRule(min_correct=2), attempts).verdict == "passed"
    assert training_state(GOLD, PassRule(min_correct=3), attempts).verdict == "failed"
    assert training_state(GOLD, PassRule(require_all_correct=True), attempts).verdict == "failed"
    assert training_state(GOLD, PassRule(min_correct=9), [right("t1"), right("t2"), right("t3")]).verdict == "passed"
    no_retry = PassRule(min_correct=2, allow_retry=False)
    state = training_state(GOLD, no_retry, [wrong("t1")])
    assert state.position == 1 and state.verdict is None  # on to the next item, the mistake counted
    assert training_state(GOLD, no_retry, [wrong("t1"), right("t2"), right("t3")]).verdict == "passed"
