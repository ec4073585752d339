"""The zero-shot trainer's calibration on labelled items (issue 44): a temperature and a bias per
answer fitted on the run's labelled training items, kept only where it beats the content-free
correction on items it was not fitted on. Pure maths: no model, no run."""

from __future__ import annotations

import math
import random

import pytest

from potato.training.job.schemes import Scheme, SchemeType
from potato.training.trainers.calibration_maths import AnswerScaling, choose_answer_scaling, fit_answer_scaling
from potato.training.trainers.llm_zero_shot import right_answers, sample_for_calibration


def leaning_model(n: int, seed: int = 0) -> tuple[list[list[float]], list[int]]:
    """Log-likelihoods of (positive, negative) from a model that ranks every text right but says
    "positive" to nearly all: the issue's SmolLM2 on plain reviews (margin at most 0.44 for the negative
    ones, at least 0.96 for the positive ones)."""
    rng = random.Random(seed)
    scores, correct = [], []
    for i in range(n):
        right = i % 2
        margin = rng.uniform(0.96, 2.0) if right == 0 else rng.uniform(0.05, 0.44)
        scores.append([-1.0 + margin, -1.0])
        correct.append(right)
    return scores, correct


def test_a_fit_moves_the_threshold_where_the_labels_put_it() -> None:
    scores, correct = leaning_model(40)
    assert AnswerScaling.shift([0.0, 0.0]).hits(scores, correct) == 20  # "positive" to all
    scaling = fit_answer_scaling(scores, correct)
    assert scaling.hits(scores, correct) == 40
    new_scores, new_correct = leaning_model(200, seed=1)  # items it never saw
    assert scaling.hits(new_scores, new_correct) / 200 >= 0.95
    assert scaling.biases[0] < scaling.biases[1] and scaling.scale > 1  # sharper, and away from "positive"


def test_a_fit_says_how_sure_it_is_as_often_as_it_is_right() -> None:
    """The temperature: on items the model separates only partly, the fitted confidence matches the
    hit rate, where the raw log-likelihoods were far too sure."""
    rng = random.Random(3)
    scores, correct = [], []
    for _ in range(400):
        right = rng.randrange(2)
        signal = rng.gauss(1.0 if right == 0 else -1.0, 1.5) * 6  # overconfident: six times the evidence
        scores.append([signal, 0.0])
        correct.append(right)
    scaling = fit_answer_scaling(scores, correct)
    raw = AnswerScaling.shift([0.0, 0.0])
    assert scaling.log_loss(scores, correct) < raw.log_loss(scores, correct) - 0.3
    assert 1 / scaling.scale == pytest.approx(6 * 1.5 ** 2 / 2, rel=0.35)  # the true temperature


def test_one_label_never_seen_keeps_finite_odds() -> None:
    scaling = fit_answer_scaling([[0.0, -1.0, -3.0]] * 5, [2] * 5)
    assert all(math.isfinite(b) for b in scaling.biases) and scaling.scale > 0


def test_answers_that_say_nothing_keep_the_correction_that_needs_no_labels() -> None:
    """A model whose answers carry no sign of the labels: a fit could only learn the majority label,
    so the content-free start is kept, and the held-out accuracies say why."""
    rng = random.Random(5)
    scores = [[rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 1)] for _ in range(30)]
    correct = [k % 3 for k in range(30)]
    start = AnswerScaling.shift([0.1, -0.1, 0.0])
    choice = choose_answer_scaling(scores, correct, start)
    assert not choice.fitted and choice.scaling == start
    assert choice.fitted_accuracy <= choice.start_accuracy + 1e-9 or choice.start_accuracy < 0.5


def test_a_useful_fit_is_chosen_and_fitted_on_every_item() -> None:
    scores, correct = leaning_model(40)
    start = AnswerScaling.shift([0.0, 0.0])
    choice = choose_answer_scaling(scores, correct, start)
    assert choice.fitted and choice.fitted_accuracy > choice.start_accuracy
    assert choice.scaling == fit_answer_scaling(scores, correct, start)


def test_right_answers_per_question() -> None:
    radio = Scheme(name="s", annotation_type=SchemeType.RADIO, labels=("pos", "neg"))
    assert right_answers(radio, ["pos", "neg"], "neg") == [1]
    assert right_answers(radio, ["pos", "neg"], "other") is None  # a label the question does not offer
    multi = Scheme(name="m", annotation_type=SchemeType.MULTISELECT, labels=("a", "b", "c"))
    assert right_answers(multi, ["a", "b", "c"], ("c", "a")) == [0, 1, 0]  # (yes, no) per label


def test_the_sample_is_the_same_whatever_the_order() -> None:
    pairs = [(f"item-{k}", k) for k in range(50)]
    first = sample_for_calibration(pairs, 10)
    assert len(first) == 10 and first == sample_for_calibration(list(reversed(pairs)), 10)
    assert sample_for_calibration(pairs, 80) == sample_for_calibration(pairs, 50)
