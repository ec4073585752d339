"""Calibration maths: ``decision-calibrate``'s Platt / temperature scaling, its scores and folds, and
``llm-zero-shot``'s answer scaling (a temperature and a bias per answer, fitted on labelled items).

Separate from the trainers because it is pure: numbers in, numbers out, no files, no run context.
The trainers (:mod:`~potato.training.trainers.decision_calibrate`, :mod:`~potato.training.trainers.
llm_zero_shot`) decide what to fit on and report; this module fits the maps (Newton's method on the log
loss), applies them, scores confidences (expected calibration error, log loss) and deals items into
stratified folds, each testable alone.

Remote-safe: standard library only, Python 3.8.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Sequence

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
        moved = _damped_step(lambda ab: log_loss(pairs, ab[0], ab[1]), [a, b], [da, db], loss)
        if moved is None:
            break
        (a, b), new_loss = moved
        converged = abs(loss - new_loss) < 1e-10
        loss = new_loss
        if converged:
            break
    return a, b


def _damped_step(loss_at: Callable[[list[float]], float], point: Sequence[float], direction: Sequence[float],
                 loss: float, keep: Callable[[list[float]], list[float]] | None = None) -> tuple[list[float], float] | None:
    """A Newton step ``point - step * direction``, halved until the loss does not rise (Newton can
    overshoot where the data are separable); None when no step as short as 1e-8 helps. ``keep``
    brings a trial point back into the allowed region."""
    step = 1.0
    while step > 1e-8:
        trial = [x - step * d for x, d in zip(point, direction)]
        if keep is not None:
            trial = keep(trial)
        new_loss = loss_at(trial)
        if new_loss <= loss:
            return trial, new_loss
        step /= 2
    return None


ANSWER_PRIOR = 1.0
"""The answer scaling's pull towards where it starts, as if one item said so: a handful of labelled
items moves it a little, dozens as far as they agree."""
CV_FOLDS = 5


@dataclass(frozen=True)
class AnswerScaling:
    """``scale * score + bias`` per answer: a language model's log-likelihoods of the answers to one
    question, as logits whose softmax is calibrated (the scale is one over a temperature)."""

    scale: float
    biases: tuple[float, ...]

    @classmethod
    def shift(cls, biases: Sequence[float]) -> AnswerScaling:
        """Biases alone, at the model's own temperature (the content-free correction; zeros: none)."""
        return cls(1.0, tuple(biases))

    def logits(self, scores: Sequence[float]) -> list[float]:
        return [self.scale * s + b for s, b in zip(scores, self.biases)]

    def hits(self, scores: Sequence[Sequence[float]], correct: Sequence[int]) -> int:
        """The items whose right answer has the largest logit."""
        hits = 0
        for row, right in zip(scores, correct):
            logits = self.logits(row)
            hits += max(range(len(logits)), key=lambda k: logits[k]) == right
        return hits

    def log_loss(self, scores: Sequence[Sequence[float]], correct: Sequence[int]) -> float:
        """The mean log loss of the right answers."""
        return -sum(_log_softmax(self.logits(row))[right] for row, right in zip(scores, correct)) / len(correct)


def fit_answer_scaling(scores: Sequence[Sequence[float]], correct: Sequence[int], start: AnswerScaling | None = None,
                       prior: float = ANSWER_PRIOR, iterations: int = 100) -> AnswerScaling:
    """The scale and per-answer biases that minimise the log loss of the right answers (pure):
    ``scores[i]`` are item i's answers' log-likelihoods, ``correct[i]`` the index of its right one.
    The loss is convex in (scale, biases); ``prior`` (a ridge towards ``start``, by default scale 1 and
    biases 0) keeps an answer no item gave, or items the model already separates, from sending a bias to
    infinity, and lets few items move the fit only a little."""
    if not scores or len(scores) != len(correct):
        raise ValueError("answer scaling needs one right answer per item, and at least one item")
    k = len(scores[0])
    centre = [1.0] + [0.0] * k if start is None else [start.scale, *start.biases]
    theta = list(centre)
    loss = _answer_loss(scores, correct, theta, centre, prior)
    for _ in range(iterations):
        grad, hess = _answer_newton_terms(scores, correct, theta, centre, prior)
        step_dir = _solve(hess, grad)
        if step_dir is None:
            break
        moved = _damped_step(lambda trial: _answer_loss(scores, correct, trial, centre, prior), theta, step_dir,
                             loss, keep=_positive_scale)
        if moved is None:
            break
        theta, new_loss = moved
        converged = abs(loss - new_loss) < 1e-10
        loss = new_loss
        if converged:
            break
    return AnswerScaling(theta[0], tuple(theta[1:]))


def _positive_scale(theta: list[float]) -> list[float]:
    """A scale at or below 0 would turn the model's ranking round: it stays at 1e-3 or more."""
    return [max(theta[0], 1e-3), *theta[1:]]


@dataclass(frozen=True)
class AnswerChoice:
    """Whether fitting beats where the fit starts, each scored on the items it was not fitted on."""

    scaling: AnswerScaling
    """The fit on every item when it won, else the start."""
    fitted: bool
    fitted_accuracy: float
    start_accuracy: float


def choose_answer_scaling(scores: Sequence[Sequence[float]], correct: Sequence[int], start: AnswerScaling,
                          folds: int = CV_FOLDS) -> AnswerChoice:
    """Fit on the items, or keep ``start``, by cross-validation (pure; fold = position modulo
    ``folds``, so give the items in a random order): the fit is kept when its held-out accuracy is at
    least the start's and its held-out log loss lower, or its accuracy higher. A model whose answers
    say little about these labels keeps the correction that needs none (a fit there learns the
    majority label)."""
    folds = max(2, min(folds, len(correct)))
    fitted_hits = start_hits = 0
    fitted_loss = start_loss = 0.0
    for fold in range(folds):
        train = [k for k in range(len(correct)) if k % folds != fold]
        test = [k for k in range(len(correct)) if k % folds == fold]
        if not test:
            continue
        fit = fit_answer_scaling([scores[k] for k in train], [correct[k] for k in train], start)
        rows, rights = [scores[k] for k in test], [correct[k] for k in test]
        fitted_hits += fit.hits(rows, rights)
        start_hits += start.hits(rows, rights)
        fitted_loss += fit.log_loss(rows, rights) * len(test)
        start_loss += start.log_loss(rows, rights) * len(test)
    better = fitted_hits > start_hits or (fitted_hits == start_hits and fitted_loss < start_loss)
    n = len(correct)
    return AnswerChoice(fit_answer_scaling(scores, correct, start) if better else start, better,
                        fitted_hits / n, start_hits / n)


def _log_softmax(logits: Sequence[float]) -> list[float]:
    top = max(logits)
    total = math.log(sum(math.exp(z - top) for z in logits)) + top
    return [z - total for z in logits]


def _answer_loss(scores: Sequence[Sequence[float]], correct: Sequence[int], theta: Sequence[float],
                 centre: Sequence[float], prior: float) -> float:
    scale, biases = theta[0], theta[1:]
    total = 0.0
    for row, right in zip(scores, correct):
        total -= _log_softmax([scale * s + b for s, b in zip(row, biases)])[right]
    return total + 0.5 * prior * sum((t - c) ** 2 for t, c in zip(theta, centre))


def _answer_newton_terms(scores: Sequence[Sequence[float]], correct: Sequence[int], theta: Sequence[float],
                         centre: Sequence[float], prior: float) -> tuple[list[float], list[list[float]]]:
    """The loss's gradient and Hessian in (scale, biases): per item the softmax's, with the scores as
    the scale's feature."""
    k = len(theta) - 1
    grad = [0.0] * (k + 1)
    hess = [[0.0] * (k + 1) for _ in range(k + 1)]
    for row, right in zip(scores, correct):
        p = [math.exp(v) for v in _log_softmax([theta[0] * s + b for s, b in zip(row, theta[1:])])]
        mean = sum(pj * sj for pj, sj in zip(p, row))
        grad[0] += mean - row[right]
        hess[0][0] += sum(pj * sj * sj for pj, sj in zip(p, row)) - mean * mean
        for j in range(k):
            grad[1 + j] += p[j] - (1.0 if j == right else 0.0)
            cross = p[j] * (row[j] - mean)
            hess[0][1 + j] += cross
            hess[1 + j][0] += cross
            for m in range(k):
                hess[1 + j][1 + m] += (p[j] if j == m else 0.0) - p[j] * p[m]
    for j in range(k + 1):
        grad[j] += prior * (theta[j] - centre[j])
        hess[j][j] += prior
    return grad, hess


def _solve(matrix: Sequence[Sequence[float]], vector: Sequence[float]) -> list[float] | None:
    """x with matrix @ x = vector (Gaussian elimination, partial pivoting); None if singular."""
    n = len(vector)
    rows = [list(matrix[i]) + [vector[i]] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        if abs(rows[pivot][col]) < 1e-12:
            return None
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(col + 1, n):
            factor = rows[r][col] / rows[col][col]
            for c in range(col, n + 1):
                rows[r][c] -= factor * rows[col][c]
    out = [0.0] * n
    for r in range(n - 1, -1, -1):
        out[r] = (rows[r][n] - sum(rows[r][c] * out[c] for c in range(r + 1, n))) / rows[r][r]
    return out


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
