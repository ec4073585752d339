"""The control group's figures (issue 44, item 3): proportions with Wilson intervals, agreement with
the AI's options, with reference answers and between annotators of one group, and the config key."""

from __future__ import annotations

import pytest

from potato.study.holdout import CONTROL, HELPED, Proportion, agreed_reference, compare, draw
from tests.unit.test_upstream_configs import messages, report_of, upstream


def test_wilson_intervals_stay_inside_zero_and_one() -> None:
    assert Proportion(10, 10).to_json() == {"agree": 10, "cases": 10, "rate": 1.0, "ci95": [0.7225, 1.0]}
    assert Proportion(0, 10).interval == pytest.approx((0.0, 0.2775), abs=1e-4)
    low, high = Proportion(50, 100).interval
    assert (round(low, 4), round(high, 4)) == (0.4038, 0.5962)
    assert Proportion(0, 0).to_json() == {"agree": 0, "cases": 0, "rate": None, "ci95": None}


def test_draw_puts_the_share_in_the_control_group() -> None:
    assert [draw(0.2, u) for u in (0.0, 0.19, 0.2, 0.99)] == [CONTROL, CONTROL, HELPED, HELPED]


def test_each_group_is_compared_on_its_own_labels() -> None:
    answers = [("h1", "i1", "s", "pos"), ("h2", "i1", "s", "pos"), ("h1", "i2", "s", "neg"),
               ("c1", "i1", "s", "neg"), ("c2", "i1", "s", "pos"), ("c1", "i2", "s", "pos"),
               ("x", "i1", "s", "pos"),            # signed in before the holdout: no group, left out
               ("h1", "i1", "multi", ["a"])]       # not a single-choice question
    groups = {"h1": HELPED, "h2": HELPED, "c1": CONTROL, "c2": CONTROL}
    picks = {("i1", "s"): ["pos"], ("i2", "s"): ["neg"]}
    reference = {("i1", "s"): "pos"}
    out = compare(answers, groups, picks, reference, ["s"])
    helped, control = out[HELPED], out[CONTROL]
    assert (len(helped.annotators), helped.labels) == (2, 3)
    assert (helped.with_ai.agree, helped.with_ai.cases) == (3, 3)
    assert (control.with_ai.agree, control.with_ai.cases) == (1, 3)
    assert (helped.with_reference.agree, helped.with_reference.cases) == (2, 2)
    assert (control.with_reference.agree, control.with_reference.cases) == (1, 2)
    assert (helped.between.agree, helped.between.cases) == (1, 1)  # h1 and h2 on i1
    assert (control.between.agree, control.between.cases) == (0, 1)


def test_imported_answers_that_disagree_are_no_reference() -> None:
    assert agreed_reference([("i1", "s", "pos"), ("i1", "s", "pos"), ("i2", "s", "pos"), ("i2", "s", "neg"),
                             ("i3", "s", ["a"])]) == {("i1", "s"): "pos"}


RUNS = {"enabled": True, "endpoint_type": "runs", "option_highlighting": {"enabled": True}}


def test_the_holdout_key_is_checked() -> None:
    report = report_of(upstream(ai_support={**RUNS, "assist_holdout": {"share": 0.2}}))
    assert report.errors == []
    holdout = report.config.ai_support.holdout
    assert (holdout.share, holdout.train_on) == (0.2, "all")
    assert messages(report_of(upstream(ai_support={**RUNS, "assist_holdout": {"share": 1}})).errors) == [
        "ai_support.assist_holdout.share: must be a number greater than 0 and less than 1, got 1"]
    assert messages(report_of(upstream(ai_support={**RUNS, "assist_holdout": {}})).errors) == [
        "ai_support.assist_holdout.share: missing; say which share of annotators sees no AI help, e.g. share: 0.2"]
    [wrong] = messages(report_of(upstream(ai_support={**RUNS, "assist_holdout": {"share": 0.2,
                                                                                 "train_on": "control"}})).errors)
    assert wrong.startswith("ai_support.assist_holdout.train_on: 'control' is not a valid "
                            "ai_support.assist_holdout.train_on") and wrong.endswith("valid choices: all, unhelped")
