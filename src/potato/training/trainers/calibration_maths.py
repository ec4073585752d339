"""The calibration maths of ``decision-calibrate``: Platt / temperature scaling, its scores, folds.

Separate from the trainer because it is pure: numbers in, numbers out, no files, no run context.
The trainer (:mod:`potato.training.trainers.decision_calibrate`) decides what to fit on and reports;
this module fits the map (Newton's method on the smoothed log loss), applies it, scores confidences
(expected calibration error, log loss) and deals items into stratified folds, each testable alone.

Remote-safe: standard library only, Python 3.8.
"""

from __future__ import annotations

import math
import random
from typing import Sequence

EPS = 1e-6
ECE_BINS = 10


def logit(p: float) -> float:
    p = min(1.0 - EPS, max(EPS, p))
    return math.log(p / (1.0 - p))


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def log_loss(pairs: Sequence[tuple[float, float]], a: float, b: float) -> float:
    """Mean log loss of sigmoid(a*z + b) against targets, for (z, target) pairs."""
    total = 0.0
    for z, t in pairs:
        p = min(1.0 - EPS, max(EPS, sigmoid(a * z + b)))
        total -= t * math.log(p) + (1.0 - t) * math.log(1.0 - p)
    return total / len(pairs)


def fit_scaling(confidences: Sequence[float], correct: Sequence[bool], with_bias: bool = True,
                iterations: int = 100) -> tuple[float, float]:
    """(a, b) minimising the smoothed log loss (pure). ``with_bias=False``: temperature scaling, b = 0."""
    n_pos = sum(1 for c in correct if c)
    n_neg = len(correct) - n_pos
    t_pos, t_neg = (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0)
    pairs = [(logit(c), t_pos if ok else t_neg) for c, ok in zip(confidences, correct)]
    a, b = 1.0, 0.0
    ridge = 1e-6
    loss = log_loss(pairs, a, b)
    for _ in range(iterations):
        ga = gb = haa = hab = hbb = 0.0
        for z, t in pairs:
            p = sigmoid(a * z + b)
            w = p * (1.0 - p)
            ga += (p - t) * z
            gb += p - t
            haa += w * z * z
            hab += w * z
            hbb += w
        haa += ridge
        hbb += ridge
        if with_bias:
            det = haa * hbb - hab * hab
            if det <= 0:
                break
            da = (hbb * ga - hab * gb) / det
            db = (haa * gb - hab * ga) / det
        else:
            da, db = ga / haa, 0.0
        step = 1.0
        while step > 1e-8:  # backtracking: Newton can overshoot on separable data
            new_a, new_b = a - step * da, b - step * db
            new_loss = log_loss(pairs, new_a, new_b)
            if new_loss <= loss:
                break
            step /= 2
        else:
            break
        converged = abs(loss - new_loss) < 1e-10
        a, b, loss = new_a, new_b, new_loss
        if converged:
            break
    return a, b


def apply_scaling(confidence: float, scaling: tuple[float, float]) -> float:
    a, b = scaling
    return sigmoid(a * logit(confidence) + b)


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], bins: int = ECE_BINS) -> float:
    """Top-label ECE (pure): over ``bins`` equal-width confidence bins, the share of items in the bin
    times the gap between their mean confidence and their hit rate, summed."""
    if not confidences:
        raise ValueError("the calibration error of nothing is undefined")
    conf_sum = [0.0] * bins
    hits = [0] * bins
    for c, ok in zip(confidences, correct):
        k = min(bins - 1, max(0, int(c * bins)))
        conf_sum[k] += c
        hits[k] += 1 if ok else 0
    return sum(abs(conf_sum[k] - hits[k]) for k in range(bins)) / len(confidences)


def confidence_log_loss(confidences: Sequence[float], correct: Sequence[bool]) -> float:
    """Mean log loss of each confidence as the probability that its label is right (pure)."""
    if not confidences:
        raise ValueError("the log loss of nothing is undefined")
    total = 0.0
    for c, ok in zip(confidences, correct):
        p = min(1.0 - EPS, max(EPS, c))
        total -= math.log(p) if ok else math.log(1.0 - p)
    return total / len(confidences)


def fold_of(keys: Sequence[tuple[str, str]], folds: int, seed: int) -> dict[str, int]:
    """Item id -> fold in ``range(folds)`` for (item id, stratum) pairs (pure, deterministic in
    ``seed``): each stratum is shuffled and dealt out in turn, so every fold gets its share of it."""
    rng = random.Random(seed)
    out: dict[str, int] = {}
    position = 0
    for stratum in sorted({s for _, s in keys}):
        ids = sorted(i for i, s in keys if s == stratum)
        rng.shuffle(ids)
        for item_id in ids:
            out[item_id] = position % folds
            position += 1
    return out
