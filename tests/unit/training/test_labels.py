"""Several annotators, one training target: the majority vote (pure)."""

from __future__ import annotations

import pytest

from potato.training.job.spec import LabelRow
from potato.training.job.schemes import Scheme, SchemeType
from potato.training.job.labels import (
    Targets,
    aggregate,
    class_labels,
    majority_label,
    majority_set,
    unknown_labels,
)

RADIO = Scheme(name="sentiment", annotation_type=SchemeType.RADIO, labels=("positive", "negative", "neutral"))
MULTI = Scheme(name="aspects", annotation_type=SchemeType.MULTISELECT, labels=("price", "quality", "delivery"))


def test_majority_label() -> None:
    assert majority_label(["a", "b", "b"]) == "b"
    assert majority_label(["negative", "positive"]) == "negative"  # tie: the label that sorts first
    assert majority_label(["z", "y", "y", "z", "x"]) == "y"
    with pytest.raises(ValueError):
        majority_label([])


def test_majority_set_needs_more_than_half() -> None:
    order = ("price", "quality", "delivery")
    assert majority_set([("price",), ("price", "quality"), ()], order) == ("price",)
    assert majority_set([("price",), ("quality",)], order) == ()  # half is not a majority
    assert majority_set([("delivery", "price"), ("price", "delivery")], order) == ("price", "delivery")
    assert majority_set([("other",)], order) == ("other",)


def test_aggregate_votes_per_item_and_schema() -> None:
    rows = [
        LabelRow("i1", "sentiment", "positive", "ann"),
        LabelRow("i1", "sentiment", "negative", "bob"),
        LabelRow("i1", "sentiment", "negative", "cat"),
        LabelRow("i1", "aspects", ("price",), "ann"),
        LabelRow("i2", "sentiment", "positive", "ann"),
        LabelRow("i2", "sentiment", "negative", "ann"),  # ann changed her mind: the last answer counts
        LabelRow("i3", "aspects", (), "ann"),
        LabelRow("i3", "other", "x", "ann"),  # a schema the job does not train
    ]
    targets = aggregate(rows, [RADIO, MULTI])
    assert targets == {
        "i1": {"sentiment": "negative", "aspects": ("price",)},
        "i2": {"sentiment": "negative"},
        "i3": {"aspects": ()},
    }


def test_class_labels_keep_the_scheme_order_and_add_unknown_labels() -> None:
    targets: Targets = {"i1": {"sentiment": "mixed"}, "i2": {"sentiment": "positive"}, "i3": {"aspects": ("size",)}}
    assert class_labels(RADIO, targets) == ("positive", "negative", "neutral", "mixed")
    assert unknown_labels(RADIO, targets) == ["mixed"]
    assert class_labels(MULTI, targets) == ("price", "quality", "delivery", "size")
