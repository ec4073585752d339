"""The holdout score (C6) the worker computes itself, checked against scikit-learn where it is installed."""

from __future__ import annotations

import random

import pytest

from potato.training.job.schemes import Scheme, SchemeType
from potato.training.worker.metrics import accuracy, brier, macro_f1, multilabel_macro_f1, score_holdout
from potato.training.job.results import Label
from potato.training.trainers.base import Prediction

RADIO = Scheme(name="sentiment", annotation_type=SchemeType.RADIO, labels=("positive", "negative"))
MULTI = Scheme(name="aspects", annotation_type=SchemeType.MULTISELECT, labels=("price", "quality", "delivery"))


def test_small_cases_by_hand() -> None:
    truth = ["a", "a", "b", "c"]
    pred = ["a", "b", "b", "b"]
    assert accuracy(truth, pred) == 0.5
    # F1: a = 2/3, b = 2*1/(2+2) = 0.5, c = 0
    assert macro_f1(truth, pred) == pytest.approx((2 / 3 + 0.5 + 0) / 3)
    assert multilabel_macro_f1([{"x"}, set()], [{"x"}, set()]) == 1.0
    assert multilabel_macro_f1([set()], [set()]) == 1.0
    assert brier(["a", "b"], [("a", 1.0), ("a", 0.5)]) == pytest.approx((0 + 0.25) / 2)


def test_matches_scikit_learn() -> None:
    sk = pytest.importorskip("sklearn.metrics")
    from sklearn.preprocessing import MultiLabelBinarizer

    rng = random.Random(3)
    for _ in range(20):
        truth = [rng.choice("abcd") for _ in range(50)]
        pred = [rng.choice("abce") for _ in range(50)]
        assert accuracy(truth, pred) == pytest.approx(sk.accuracy_score(truth, pred))
        assert macro_f1(truth, pred) == pytest.approx(sk.f1_score(truth, pred, average="macro"))
        t_sets = [set(rng.sample("pqr", rng.randint(1, 3))) for _ in range(40)]
        p_sets = [set(rng.sample("pqr", rng.randint(1, 3))) for _ in range(40)]
        binarizer = MultiLabelBinarizer(classes=sorted("pqr"))
        expected = sk.f1_score(binarizer.fit_transform(t_sets), binarizer.transform(p_sets), average="macro")
        assert multilabel_macro_f1(t_sets, p_sets) == pytest.approx(expected)


def test_score_holdout_overall_and_per_schema() -> None:
    truth: dict[str, dict[str, Label]] = {
        "i1": {"sentiment": "positive", "aspects": ("price", "quality")},
        "i2": {"sentiment": "negative"},
        "i3": {"sentiment": "positive"},  # not in the holdout: never scored
    }
    predicted = {
        "i1": {"sentiment": Prediction("positive", 0.9), "aspects": Prediction(("quality", "price"), 0.8)},
        "i2": {"sentiment": Prediction("positive", 0.6), "aspects": Prediction((), 0.7)},
        "i3": {"sentiment": Prediction("negative", 0.9), "aspects": Prediction((), 0.7)},
    }
    m = score_holdout([RADIO, MULTI], truth, predicted, ["i1", "i2", "i9"])
    assert m["n_holdout"] == 2
    assert m["sentiment/n_holdout"] == 2 and m["aspects/n_holdout"] == 1
    assert m["sentiment/holdout_accuracy"] == 0.5
    assert m["aspects/holdout_accuracy"] == 1.0  # a label set: order does not matter
    assert m["holdout_accuracy"] == pytest.approx(2 / 3)  # 2 of 3 (item, schema) pairs
    assert m["holdout_macro_f1"] == pytest.approx((m["sentiment/holdout_macro_f1"] + 1.0) / 2)
    assert m["aspects/holdout_brier"] == pytest.approx((0.8 - 1) ** 2)


def test_empty_holdout_has_no_accuracy() -> None:
    m = score_holdout([RADIO], {"i1": {"sentiment": "positive"}}, {"i1": {"sentiment": Prediction("positive", 1)}}, [])
    assert m == {"sentiment/n_holdout": 0, "n_holdout": 0}
