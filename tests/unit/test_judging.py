"""Issue 44, item 4: judge_calibration's figures (pure)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from potato.study.judging import (calibration, cohen_kappa, confusion, draw_sample, fleiss_kappa,
                                  gold_labels, mean_absolute_error, per_label, report, vote)


def test_vote_takes_the_modal_label_and_its_share_of_all_draws() -> None:
    # "a" twice of 4 draws; the failed draw (None) counts in k: 2/4.
    assert vote(["a", "b", "a", None]) == ("a", 0.5)
    assert vote(["x"] * 5) == ("x", 1.0)
    # 3 of 5: the two failures lower the confidence, they are not dropped.
    assert vote([None, "x", "x", None, "x"]) == ("x", 0.6)


def test_vote_ties_go_to_the_label_drawn_first() -> None:
    assert vote(["b", "a", "a", "b"]) == ("b", 0.5)
    assert vote(["a", "b", "b", "a"]) == ("a", 0.5)
    assert vote([None, "c", "d"]) == ("c", pytest.approx(1 / 3))


def test_vote_without_an_answer_is_none() -> None:
    assert vote([None, None, None]) == (None, 0.0)
    assert vote([]) == (None, 0.0)


IDS = [f"i{n:02d}" for n in range(20)]
# Interleaved so that the order of ids is not the strata's: 10 items in A (even numbers), 6 in B
# (ending in 1, 3, 7), 3 in C (i05, i09, i15) and i19 with no stratum, so in stratum ''.
STRATA = {item: "A" if n % 2 == 0 else "B" if n % 10 in (1, 3, 7) else "C" for n, item in enumerate(IDS)}
STRATA.pop("i19")


def test_the_strata_of_the_fixture_are_as_the_comments_say() -> None:
    counts = Counter(STRATA.get(item, "") for item in IDS)
    assert counts == {"A": 10, "B": 6, "C": 3, "": 1}


def test_stratified_sample_is_proportional_and_keeps_every_stratum() -> None:
    # size 10 over 20 items: exact shares A 5, B 3, C 1.5, '' 0.5. Floors 5+3+1+0 = 9; the last unit
    # goes to the larger remainder, C and '' tie at 0.5, C is seen first: C 2, '' 0. '' has items and
    # 10 >= 4 strata, so it gets one, taken from C (the only stratum 0.5 over its exact share).
    sample = draw_sample(IDS, 10, "stratified", 7, STRATA)
    assert Counter(STRATA.get(item, "") for item in sample) == {"A": 5, "B": 3, "C": 1, "": 1}
    assert sample == [item for item in IDS if item in sample]          # the order of ids
    assert draw_sample(IDS, 10, "stratified", 7, STRATA) == sample     # same inputs, same items
    a_items = [item for item in IDS if STRATA.get(item) == "A"]
    # A's five are Random("7:A")'s draw from A's items, whatever the other strata hold.
    drawn_a = {item for item in sample if STRATA.get(item) == "A"}
    assert drawn_a == set(random.Random("7:A").sample(a_items, 5))


def test_stratified_sample_with_fewer_places_than_strata() -> None:
    # size 2: exact shares A 1, B 0.6, C 0.3, '' 0.1: floors give A 1, the remainder goes to B.
    sample = draw_sample(IDS, 2, "stratified", 3, STRATA)
    assert Counter(STRATA.get(item, "") for item in sample) == {"A": 1, "B": 1}


def test_stratified_sample_total_is_exact_for_every_size() -> None:
    for size in range(0, 25):
        sample = draw_sample(IDS, size, "stratified", 11, STRATA)
        assert len(sample) == min(size, 20)
        assert len(set(sample)) == len(sample)
        if size >= 4:
            assert {STRATA.get(item, "") for item in sample} == {"A", "B", "C", ""}
    # Without strata every id is in stratum '': one stratum of all 20, 5 drawn.
    assert len(draw_sample(IDS, 5, "stratified", 1)) == 5


def test_random_sample_is_seeded_and_in_the_order_of_ids() -> None:
    sample = draw_sample(IDS, 6, "random", 42)
    chosen = set(random.Random(42).sample(range(20), 6))
    assert sample == [item for n, item in enumerate(IDS) if n in chosen]
    assert len(sample) == 6
    assert draw_sample(IDS, 6, "random", 42) == sample
    assert draw_sample(IDS, 6, "random", 43) != sample
    assert draw_sample(IDS, 50, "random", 42) == IDS


def test_all_and_unknown_strategies() -> None:
    assert draw_sample(["b", "a", "c"], 1, "all", 0) == ["b", "a", "c"]
    with pytest.raises(ValueError, match="unknown sampling strategy 'everything'"):
        draw_sample(IDS, 3, "everything", 0)
    with pytest.raises(ValueError, match="must not be negative"):
        draw_sample(IDS, -1, "random", 0)


HUMANS = [("ann", {"i1": "x", "i2": "x", "i3": "y"}),
          ("bob", {"i1": "x", "i2": "y"}),
          ("cat", {"i1": "y", "i3": "y", "i4": "z"})]


def test_majority_gold_leaves_out_ties() -> None:
    # i1: x 2, y 1 -> x. i2: x 1, y 1 -> tie, no gold. i3: y 2 -> y. i4: z alone -> z.
    assert gold_labels(HUMANS, "majority") == {"i1": "x", "i3": "y", "i4": "z"}


def test_single_gold_is_the_first_annotator_in_order() -> None:
    assert gold_labels(HUMANS, "single") == {"i1": "x", "i2": "x", "i3": "y", "i4": "z"}
    assert gold_labels(HUMANS[::-1], "single") == {"i1": "y", "i3": "y", "i4": "z", "i2": "y"}
    with pytest.raises(ValueError, match="unknown gold rule 'mean'"):
        gold_labels(HUMANS, "mean")


def test_cohen_kappa_textbook_example() -> None:
    # 50 items: both yes 20, a yes/b no 5, a no/b yes 10, both no 15.
    # p_o = 35/50 = 0.7; a says yes 25/50, b 30/50: p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.2/0.5 = 0.4.
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    # Total disagreement on two labels: p_o 0, p_e 0.5 -> -1.
    assert cohen_kappa(["x", "y"], ["y", "x"]) == pytest.approx(-1.0)
    # One rater constant, the other not: p_o 0.5, p_e 0.5 -> 0, defined.
    assert cohen_kappa(["x", "x"], ["x", "y"]) == pytest.approx(0.0)


def test_cohen_kappa_undefined() -> None:
    assert cohen_kappa(["x", "x", "x"], ["x", "x", "x"]) is None   # p_o = p_e = 1
    assert cohen_kappa(["x"], ["y"]) is None                       # one item
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa(["x", "y"], ["x"])


# Wikipedia's Fleiss' kappa example: 10 items, 14 raters, 5 categories; counts per item and category.
WIKIPEDIA = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def test_fleiss_kappa_wikipedia_example() -> None:
    # P-bar = 0.378, P_e = 0.213 (column totals 20, 28, 39, 21, 32 of 140): kappa = 0.210.
    ratings = [[category for category, count in zip("12345", row) for _ in range(count)] for row in WIKIPEDIA]
    assert all(len(labels) == 14 for labels in ratings)
    kappa = fleiss_kappa(ratings)
    assert kappa is not None and round(kappa, 3) == 0.210


def test_fleiss_kappa_edges() -> None:
    # Two items, two raters: [x, x] and [x, y]. P_i 1 and 0: P-bar 0.5; p_x 3/4, p_y 1/4: P_e 0.625.
    # kappa = (0.5 - 0.625) / 0.375 = -1/3.
    assert fleiss_kappa([["x", "x"], ["x", "y"]]) == pytest.approx(-1 / 3)
    assert fleiss_kappa([["x", "x"], ["x", "x"]]) is None     # P_e = 1
    assert fleiss_kappa([["x", "y"]]) is None                 # one item
    assert fleiss_kappa([]) is None
    with pytest.raises(ValueError, match="same number of raters"):
        fleiss_kappa([["x", "y"], ["x", "y", "x"]])
    with pytest.raises(ValueError, match="at least 2"):
        fleiss_kappa([["x"], ["y"]])


PAIRS = [("a", "a"), ("a", "b"), ("b", "b"), ("c", "a")]


def test_confusion_rows_are_gold_and_unknown_labels_are_appended() -> None:
    assert confusion(PAIRS, ["a", "b"]) == {"labels": ["a", "b", "c"],
                                            "rows": [[1, 1, 0], [0, 1, 0], [1, 0, 0]]}
    assert confusion([], ["a", "b"]) == {"labels": ["a", "b"], "rows": [[0, 0], [0, 0]]}


def test_per_label_scores() -> None:
    # a: predicted twice, right once -> precision 0.5; gold twice, found once -> recall 0.5; f1 0.5.
    # b: predicted twice, right once -> 0.5; gold once, found -> 1.0; f1 = 2*0.5*1/1.5 = 0.6667.
    # d: never gold nor predicted: all None, support 0. c: never predicted: precision None, recall 0.
    # macro F1 over a, b, c (support > 0), c's undefined f1 as 0: (0.5 + 0.6667 + 0) / 3 = 0.3889.
    out = per_label(PAIRS, ["a", "b", "d"])
    assert out["labels"] == {
        "a": {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2},
        "b": {"precision": 0.5, "recall": 1.0, "f1": 0.6667, "support": 1},
        "d": {"precision": None, "recall": None, "f1": None, "support": 0},
        "c": {"precision": None, "recall": 0.0, "f1": None, "support": 1}}
    assert out["macro_f1"] == 0.3889
    # a never predicted: precision None, recall 0, f1 None; b never gold: precision 0, recall None.
    # Macro F1 over a alone, its undefined f1 taken as 0.
    one = per_label([("a", "b")], ["a", "b"])
    assert one["labels"]["a"] == {"precision": None, "recall": 0.0, "f1": None, "support": 1}
    assert one["labels"]["b"] == {"precision": 0.0, "recall": None, "f1": None, "support": 0}
    assert one["macro_f1"] == 0.0
    # Both swapped: precision 0 and recall 0 are defined, so f1 is 0, not None.
    swapped = per_label([("a", "b"), ("b", "a")], ["a", "b"])
    assert swapped["labels"]["a"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert per_label([], ["a"]) == {"labels": {"a": {"precision": None, "recall": None, "f1": None,
                                                     "support": 0}}, "macro_f1": None}


def test_calibration_by_hand() -> None:
    # 5 bins of 0.2. 1.0, 1.0 (right, wrong) -> last bin: conf 1.0, acc 0.5, gap 0.5.
    # 0.6 x3 (right, right, wrong) -> [0.6, 0.8): conf 0.6, acc 2/3, gap 1/15.
    # 0.2 (wrong) -> [0.2, 0.4): conf 0.2, acc 0, gap 0.2.
    # ECE = 2/6*0.5 + 3/6*1/15 + 1/6*0.2 = 1/6 + 1/30 + 1/30 = 7/30 = 0.2333.
    # Brier = (0 + 1 + 0.16 + 0.16 + 0.36 + 0.04) / 6 = 1.72 / 6 = 0.2867.
    out = calibration([1.0, 1.0, 0.6, 0.6, 0.6, 0.2], [True, False, True, True, False, False], 5)
    assert out == {"ece": 0.2333, "brier": 0.2867, "bins": [
        {"low": 0.2, "high": 0.4, "n": 1, "mean_confidence": 0.2, "accuracy": 0.0},
        {"low": 0.6, "high": 0.8, "n": 3, "mean_confidence": 0.6, "accuracy": 0.6667},
        {"low": 0.8, "high": 1.0, "n": 2, "mean_confidence": 1.0, "accuracy": 0.5}]}


def test_calibration_edges() -> None:
    # 0.0 goes in the first bin; a wrong answer at confidence 0 is perfectly calibrated.
    assert calibration([0.0], [False], 4) == {"ece": 0.0, "brier": 0.0, "bins": [
        {"low": 0.0, "high": 0.25, "n": 1, "mean_confidence": 0.0, "accuracy": 0.0}]}
    # 0.3 - 0.1 is 0.19999999999999998 in floats: still the bin from 0.2, not the one below.
    [only] = calibration([0.3 - 0.1], [True], 5)["bins"]
    assert (only["low"], only["high"]) == (0.2, 0.4)
    assert calibration([], [], 10) == {"ece": None, "brier": None, "bins": []}
    with pytest.raises(ValueError):
        calibration([0.5], [True, False], 10)
    with pytest.raises(ValueError):
        calibration([1.5], [True], 10)


def test_mean_absolute_error_in_scale_steps() -> None:
    order = ["1", "2", "3", "4", "5"]
    # 1 vs 2: 1 step; 5 vs 3: 2; 3 vs 3: 0; "x" is off the scale, left out: (1 + 2 + 0) / 3 = 1.0.
    assert mean_absolute_error([("1", "2"), ("5", "3"), ("3", "3"), ("2", "x")], order) == 1.0
    assert mean_absolute_error([("1", "4"), ("2", "3"), ("5", "5")], order) == 1.3333
    assert mean_absolute_error([("x", "1")], order) is None
    assert mean_absolute_error([], order) is None


# Six items, a sample of four (i1..i4). Gold ('single', ann first): i1 pos, i2 neg, i3 pos, i4 neg.
SCENE_HUMANS = [("ann", {"i1": "pos", "i2": "neg", "i3": "pos", "i4": "neg", "i5": "pos"}),
                ("bob", {"i1": "pos", "i2": "neg", "i3": "neg", "i6": "neg"})]
SCENE_JUDGED = {
    "gpt": {"i1": ("pos", 1.0), "i2": ("pos", 0.6), "i3": ("pos", 0.8), "i4": ("neg", 1.0),
            "i5": ("neg", 1.0), "i6": ("neg", 1.0)},                 # i5 wrong, but outside the sample
    "llama": {"i1": ("pos", 0.6), "i2": (None, 0.0), "i3": ("neg", 1.0), "i4": ("neg", 0.8),
              "i5": ("pos", 1.0)}}
SAMPLE = ["i1", "i2", "i3", "i4"]


def test_report_grades_each_judge_on_the_sample_with_gold() -> None:
    out = report(["pos", "neg"], False, SCENE_JUDGED, SCENE_HUMANS, SAMPLE, "single", 5)
    assert (out["sample"], out["with_gold"]) == (4, 4)
    gpt, llama = out["judges"]["gpt"], out["judges"]["llama"]
    # gpt: i1 right, i2 wrong (pos for neg), i3 right, i4 right: 3 of 4.
    assert (gpt["items"], gpt["no_answer"]) == (4, 0)
    assert (gpt["accuracy"]["agree"], gpt["accuracy"]["cases"], gpt["accuracy"]["rate"]) == (3, 4, 0.75)
    assert gpt["confusion"] == {"labels": ["pos", "neg"], "rows": [[2, 0], [1, 1]]}
    # pos: predicted 3, right 2 -> 0.6667; gold 2, found 2 -> 1.0; f1 0.8.
    # neg: predicted 1, right 1 -> 1.0; gold 2, found 1 -> 0.5; f1 0.6667. Macro (0.8 + 0.6667) / 2.
    assert gpt["per_label"]["pos"] == {"precision": 0.6667, "recall": 1.0, "f1": 0.8, "support": 2}
    assert gpt["per_label"]["neg"] == {"precision": 1.0, "recall": 0.5, "f1": 0.6667, "support": 2}
    assert gpt["macro_f1"] == 0.7333
    # 0.6 wrong -> [0.6, 0.8): gap 0.6. 0.8, 1.0, 1.0 all right -> [0.8, 1.0]: conf 2.8/3, gap 0.2/3.
    # ECE = 1/4*0.6 + 3/4*0.2/3 = 0.15 + 0.05 = 0.2. Brier = (0 + 0.36 + 0.04 + 0) / 4 = 0.1.
    assert gpt["calibration"]["ece"] == 0.2
    assert gpt["calibration"]["brier"] == 0.1
    assert [b["n"] for b in gpt["calibration"]["bins"]] == [1, 3]
    assert "mae" not in gpt
    # llama: i2 had no answer (not graded wrong); i1 right, i3 wrong, i4 right: 2 of 3.
    assert (llama["items"], llama["no_answer"]) == (3, 1)
    assert (llama["accuracy"]["agree"], llama["accuracy"]["cases"]) == (2, 3)
    assert llama["confusion"]["rows"] == [[1, 1], [0, 1]]


def test_report_agreement_between_every_two_raters() -> None:
    out = report(["pos", "neg"], False, SCENE_JUDGED, SCENE_HUMANS, SAMPLE, "single", 5)
    # Sampled labels: ann i1 pos, i2 neg, i3 pos, i4 neg; bob i1 pos, i2 neg, i3 neg;
    # gpt i1 pos, i2 pos, i3 pos, i4 neg; llama i1 pos, i3 neg, i4 neg (i2: no answer).
    # ann-bob on i1-i3: p_o 2/3, p_e (2*1 + 1*2)/9 = 4/9 -> (2/9)/(5/9) = 0.4.
    # ann-gpt on i1-i4: p_o 3/4, p_e (2*3 + 2*1)/16 = 0.5 -> 0.5.
    # ann-llama on i1, i3, i4: pos pos neg vs pos neg neg -> 0.4, as ann-bob.
    # bob-gpt on i1-i3: pos neg neg vs pos pos pos: p_o 1/3, p_e 3/9 -> 0.0.
    # bob-llama on i1, i3: pos neg vs pos neg -> 1.0. gpt-llama on i1, i3, i4: as ann-llama, 0.4.
    assert out["agreement"] == [
        {"a": "ann", "b": "bob", "kind": "human-human", "items": 3, "kappa": 0.4},
        {"a": "ann", "b": "gpt", "kind": "human-llm", "items": 4, "kappa": 0.5},
        {"a": "ann", "b": "llama", "kind": "human-llm", "items": 3, "kappa": 0.4},
        {"a": "bob", "b": "gpt", "kind": "human-llm", "items": 3, "kappa": 0.0},
        {"a": "bob", "b": "llama", "kind": "human-llm", "items": 2, "kappa": 1.0},
        {"a": "gpt", "b": "llama", "kind": "llm-llm", "items": 3, "kappa": 0.4}]
    # Every rater on i1 (pos x4) and i3 (pos, neg, pos, neg); bob lacks i4, llama i2.
    # P_i 1 and (2^2 + 2^2 - 4)/12 = 1/3: P-bar 2/3; p_pos 6/8, p_neg 2/8: P_e 0.625.
    # kappa = (2/3 - 0.625) / 0.375 = 0.1111.
    assert (out["fleiss_items"], out["fleiss_kappa"]) == (2, 0.1111)


def test_report_majority_gold_and_too_few_raters() -> None:
    # Majority: i3 splits ann/bob, so no gold; i4 has ann's alone. Gold on i1, i2, i4.
    out = report(["pos", "neg"], False, SCENE_JUDGED, SCENE_HUMANS, SAMPLE, "majority", 5)
    assert out["with_gold"] == 3
    assert (out["judges"]["gpt"]["accuracy"]["agree"], out["judges"]["gpt"]["accuracy"]["cases"]) == (2, 3)
    alone = report(["pos", "neg"], False, {}, SCENE_HUMANS[:1], SAMPLE, "single", 5)
    assert (alone["agreement"], alone["fleiss_kappa"], alone["fleiss_items"]) == ([], None, 0)


def test_report_mae_for_an_ordinal_question() -> None:
    scale = ["1", "2", "3", "4", "5"]
    humans = [("ann", {"i1": "1", "i2": "3", "i3": "5"})]
    judged = {"m": {"i1": ("2", 0.8), "i2": ("3", 1.0), "i3": ("2", 0.4)}}
    # Steps: 1, 0, 3 -> 4/3 = 1.3333.
    out = report(scale, True, judged, humans, ["i1", "i2", "i3"], "single", 10)
    assert out["judges"]["m"]["mae"] == 1.3333
    assert out["judges"]["m"]["accuracy"]["agree"] == 1
