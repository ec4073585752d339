"""Active learning: does ordering items by the model's uncertainty get a better model from fewer labels?

A simulation of pool-based active learning, the usual way papers measure it (Settles, *Active
Learning Literature Survey*, 2009): a labelled data set whose labels are hidden until "annotated";
a small random seed set is labelled first; then, round after round, the project's trainer is fitted
on the labels so far, predicts the unlabelled pool, and the next batch of items the annotators
would get is chosen, labelled (the hidden label revealed) and added. A fixed test split, never
labelled, is scored after every round (accuracy and macro-F1 with ``potato.training.worker.metrics``, the
worker's own holdout score).

Ours, the code the server runs, not a re-implementation:

- the trainer: ``SklearnTextTrainer`` (``sklearn-text-classification``), validated, import-checked,
  fitted and asked to predict as the worker does (``TrainContext``, ``fit``, ``predict``), each
  prediction turned into its ``predictions.jsonl`` line by the worker's ``prediction_row``;
- the order: ``item_doubt`` (``uncertainty`` of each line: least confidence, margin or entropy), then
  ``order(doubt, pool, batch, random_share, seed)`` over the unlabelled pool, as ``record_order`` does
  after a run; the batch taken is the first ``--batch`` items of that order.

Baseline, in the same run: random order (the same ``order`` with ``random_share`` 1.0: every place
drawn at random from the pool), which is what annotators get without active learning on shuffled
items. Every strategy starts from the same seed set for a given seed, and the test split is the same
for all. Also measured: least confidence with ``--random-share`` (0.2) of the queue random, as
upstream Potato's ``random_sample_percent: 0.2`` (its default) keeps it.

The data: scikit-learn's bundled ``load_digits`` (UCI optdigits, 1,797 8x8 images of handwritten
digits, 10 classes), because the benchmark must run without a network and no installed package
ships a labelled text data set. The trainer is a text trainer, so each image is written as a "text":
pixel ``i`` with intensity ``v`` (0-16) is the token ``p<i>`` repeated ``v // --intensity-step``
times (``p20 p20 p20 p21 ...``), a bag of words a tf-idf model can learn (96.7 % test accuracy from
all 1,257 pool labels). Two trainer parameters differ from its defaults, each a documented parameter
a project can set: ``max_features`` 2^14 instead of 2^20 (all 1,797 digits hold 349 distinct uni-
and bigrams; at 2^20 columns a 10-class saga fit takes 1-2 s even on 50 texts, at 2^14 0.03 s, and
the simulation fits ~1,000 models) and ``C`` 10 instead of 1 (with C 1 the model underfits at tens
of labels: 46 % vs 71 % accuracy from one set of 50 random labels).

Printed: accuracy (and macro-F1) at several label counts per strategy as mean ± sd over seeds, the
area under each learning curve (mean accuracy from the seed set to the budget), how many labels
random order needs to reach the accuracy each uncertainty order reaches at N labels, and how many
labels each strategy needs to reach target accuracies. So that the first has an answer past the
budget, random order goes on past it in batches of ``--random-beyond`` (50) until the whole pool is
labelled; the other strategies stop at the budget.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import quick  # bench/quick.py: --quick, the sizes CI runs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.harness.jobdirs

from potato.server.training.runs.activelearning import item_doubt, order  # noqa: E402
from potato.training.job.events import EventWriter  # noqa: E402
from potato.training.job.spec import JobItem, JobSpec, parse_job  # noqa: E402
from potato.training.job.labels import Example  # noqa: E402
from potato.training.worker.metrics import accuracy, macro_f1  # noqa: E402
from potato.training.job.results import prediction_row  # noqa: E402
from potato.training.trainers.base import TrainContext  # noqa: E402
from potato.training.trainers.sklearn_text import SklearnTextTrainer  # noqa: E402
from tests.harness.jobdirs import job_json  # noqa: E402

SCHEMA = "digit"
SCHEME = {"name": SCHEMA, "annotation_type": "radio", "labels": [str(k) for k in range(10)]}


@dataclass(frozen=True)
class Strategy:
    """How the next batch is chosen: an uncertainty measure (None: none, all random) and the share of
    places drawn at random."""

    name: str
    measure: str | None
    random_share: float


@dataclass(frozen=True)
class Point:
    """One round's score on the test split, after training on ``labels`` labels."""

    labels: int
    accuracy: float
    macro_f1: float


Curve = list[Point]
Rows = list[dict[str, Any]]


def render(pixels: Sequence[float], step: int) -> str:
    """An image as a text: pixel i's token ``p<i>`` repeated intensity // step times."""
    return " ".join(" ".join([f"p{i}"] * (int(v) // step)) for i, v in enumerate(pixels) if int(v) // step)


def digits(step: int) -> tuple[list[JobItem], dict[str, str]]:
    """Every digit as an JobItem (id ``d0000``...) and its true label."""
    from sklearn.datasets import load_digits

    data = load_digits()
    items = [JobItem(f"d{i:04d}", render(row, step)) for i, row in enumerate(data.data)]
    return items, {item.id: str(y) for item, y in zip(items, data.target)}


def split(ids: list[str], truth: dict[str, str], test_share: float) -> tuple[list[str], list[str]]:
    """(pool, test): a stratified split, the same in every run (seed 0)."""
    from sklearn.model_selection import train_test_split

    pool, test = train_test_split(ids, test_size=test_share, stratify=[truth[i] for i in ids], random_state=0)
    return list(pool), list(test)


class Learner:
    """The project's trainer, driven as the worker drives it: validated params, imports checked once,
    a fresh TrainContext and trainer per fit, predictions as ``predictions.jsonl`` lines."""

    def __init__(self, tmp: Path, items: list[JobItem], truth: dict[str, str], params: dict[str, Any]) -> None:
        self.tmp = tmp
        self.items = {item.id: item for item in items}
        self.truth = truth
        self.params = SklearnTextTrainer.validate_params(params)
        SklearnTextTrainer.check_imports(self.params)  # as the worker does before fit
        self.fits = 0
        self.seconds = 0.0

    def job(self, seed: int) -> JobSpec:
        job = job_json(SklearnTextTrainer.name, (SCHEME,), dict(self.params), device="cpu", seed=seed)
        return parse_job(job)

    def fit_predict(self, labelled: Sequence[str], predict: Sequence[str], seed: int) -> Rows:
        began = time.perf_counter()
        with EventWriter(self.tmp / "events.jsonl") as events:
            ctx = TrainContext(self.job(seed), self.params, "cpu", self.tmp, self.tmp, events, lambda: False)
            trainer = SklearnTextTrainer(ctx)
            trainer.fit([Example(self.items[i], {SCHEMA: self.truth[i]}) for i in labelled])
            raw = trainer.predict([self.items[i] for i in predict])
        rows = []
        for item_id, per_schema in zip(predict, raw):
            p = per_schema[SCHEMA]
            if p is not None:
                rows.append(prediction_row(item_id, SCHEMA, p.label, p.confidence, p.probabilities))
        self.fits += 1
        self.seconds += time.perf_counter() - began
        return rows


def score(rows: Rows, test: set[str], truth: dict[str, str], labels: int) -> Point:
    scored = [r for r in rows if r["item_id"] in test]
    if len(scored) != len(test):
        raise SystemExit(f"the trainer predicted {len(scored)} of {len(test)} test items")
    want = [truth[r["item_id"]] for r in scored]
    got = [str(r["label"]) for r in scored]
    return Point(labels, accuracy(want, got), macro_f1(want, got))


def simulate(learner: Learner, strategy: Strategy, seed: int, seed_set: list[str], first: Rows,
             pool: list[str], test: list[str], batch: int, budget: int, beyond: int = 0) -> Curve:
    """One learning curve: score, choose the next batch by ``strategy`` from the model's predictions of
    the unlabelled pool, reveal its labels, refit; until ``budget`` labels, then (``beyond`` > 0) on
    in batches of ``beyond`` until the pool is used up."""
    labelled = list(seed_set)
    rows = first  # the seed set's model is the same for every strategy: fitted once per seed
    test_set = set(test)
    curve = [score(rows, test_set, learner.truth, len(labelled))]
    limit = len(pool) if beyond > 0 else budget
    while len(labelled) < limit:
        done = len(labelled)
        size = min(batch, budget - done) if done < budget else min(beyond, limit - done)
        taken = set(labelled)
        unlabelled = [i for i in pool if i not in taken]
        doubt = {} if strategy.measure is None else item_doubt(
            (r for r in rows if r["item_id"] not in test_set), [SCHEMA], strategy.measure)
        chosen = order(doubt, unlabelled, size, strategy.random_share,
                       seed=f"{seed}/{strategy.name}/{len(labelled)}")
        if not chosen:
            break
        labelled += chosen
        taken.update(chosen)
        rows = learner.fit_predict(labelled, [i for i in pool if i not in taken] + test, seed)
        curve.append(score(rows, test_set, learner.truth, len(labelled)))
    return curve


def area(curve: Curve, budget: int) -> float:
    """Area under the learning curve from the seed set to ``budget``, as a mean accuracy (trapezoids)."""
    curve = [p for p in curve if p.labels <= budget]
    if len(curve) < 2:
        return curve[0].accuracy
    total = sum((b.labels - a.labels) * (a.accuracy + b.accuracy) / 2 for a, b in zip(curve, curve[1:]))
    return total / (curve[-1].labels - curve[0].labels)


def at(curve: Curve, labels: int) -> Point:
    """The curve's point at ``labels`` (the last one at or below it)."""
    return [p for p in curve if p.labels <= labels][-1]


def mean_curve(curves: list[Curve]) -> list[tuple[int, float]]:
    """(labels, mean accuracy over seeds) at every label count all curves share."""
    counts = sorted(set.intersection(*({p.labels for p in c} for c in curves)))
    return [(n, statistics.fmean(at(c, n).accuracy for c in curves)) for n in counts]


def labels_to_reach(curve: list[tuple[int, float]], target: float) -> float | None:
    """Labels at which a mean curve first reaches ``target``, linearly interpolated between rounds; None
    when it never does (within the labels the curve goes to)."""
    for k, (n, acc) in enumerate(curve):
        if acc >= target:
            if k == 0:
                return float(n)
            n0, a0 = curve[k - 1]
            return n0 + (n - n0) * (target - a0) / (acc - a0)
    return None


def mean_sd(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {sd:.3f}"


def report(curves: dict[str, list[Curve]], points: list[int], targets: list[float], budget: int) -> None:
    names = list(curves)
    width = max(len(n) for n in names) + 2
    seeds = len(next(iter(curves.values())))
    print(f"\naccuracy on the test split, mean ± sd over {seeds} seed(s); AULC: mean accuracy from the "
          "seed set to the budget")
    print(f"{'strategy':<{width}}" + "".join(f"{'@' + str(n):>16}" for n in points) + f"{'AULC':>16}")
    for name in names:
        cells = [mean_sd([at(c, n).accuracy for c in curves[name]]) for n in points]
        print(f"{name:<{width}}" + "".join(f"{c:>16}" for c in cells)
              + f"{mean_sd([area(c, budget) for c in curves[name]]):>16}")
    print("\nmacro-F1 on the test split, mean ± sd")
    print(f"{'strategy':<{width}}" + "".join(f"{'@' + str(n):>16}" for n in points))
    for name in names:
        cells = [mean_sd([at(c, n).macro_f1 for c in curves[name]]) for n in points]
        print(f"{name:<{width}}" + "".join(f"{c:>16}" for c in cells))

    means = {name: mean_curve(cs) for name, cs in curves.items()}
    baseline = names[0]
    most = means[baseline][-1][0]
    print(f"\nlabels {baseline} needs to reach the mean accuracy a strategy reaches at N labels "
          f"(mean curves, interpolated; ratio = {baseline}'s labels / N; {baseline} goes on to {most})")
    print(f"{'strategy':<{width}}" + "".join(f"{'N=' + str(n):>16}" for n in points))
    for name in names[1:]:
        cells = []
        for n in points:
            need = labels_to_reach(means[baseline], [acc for count, acc in means[name] if count <= n][-1])
            cells.append(f"> {most}" if need is None else f"{need:.0f} ({need / n:.2f}x)")
        print(f"{name:<{width}}" + "".join(f"{c:>16}" for c in cells))

    print("\nlabels needed to reach a target accuracy (mean curve, interpolated; saved = "
          f"{baseline}'s labels - the strategy's)")
    print(f"{'strategy':<{width}}" + "".join(f"{'acc ' + format(t, '.2f'):>18}" for t in targets))
    for name in names:
        cells = []
        for t in targets:
            need, base = labels_to_reach(means[name], t), labels_to_reach(means[baseline], t)
            if need is None:
                cells.append(f"> {most if name == baseline else budget}")
            elif name == baseline or base is None:
                cells.append(f"{need:.0f}" + ("" if name == baseline else f" (saved > {most - need:.0f})"))
            else:
                cells.append(f"{need:.0f} (saved {base - need:.0f})")
        print(f"{name:<{width}}" + "".join(f"{c:>18}" for c in cells))


def strategies(random_share: float) -> list[Strategy]:
    return [Strategy("random order", None, 1.0), Strategy("least_confidence", "least_confidence", 0.0),
            Strategy("margin", "margin", 0.0), Strategy("entropy", "entropy", 0.0),
            Strategy(f"least_conf + {random_share:.0%} random", "least_confidence", random_share)]


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=5, help="simulations per strategy (default 5)")
    p.add_argument("--seed-set", type=int, default=20, help="random labels to start from (default 20)")
    p.add_argument("--batch", type=int, default=10,
                   help="labels per round, chosen by the strategy (default 10)")
    p.add_argument("--budget", type=int, default=400, help="labels at the end (default 400)")
    p.add_argument("--points", default="50,100,200,400",
                   help="label counts in the table (default 50,100,200,400)")
    p.add_argument("--targets", default="0.90,0.93,0.95",
                   help="target accuracies for 'labels needed' (default 0.90,0.93,0.95)")
    p.add_argument("--random-beyond", type=int, default=50,
                   help="random order goes on past the budget in batches of this many until the pool is used "
                        "up, so that 'labels random order needs' has an answer past it (0: stop there)")
    p.add_argument("--test-share", type=float, default=0.3,
                   help="share of the digits in the test split (0.3)")
    p.add_argument("--random-share", type=float, default=0.2,
                   help="random share of the mixed strategy, as upstream's random_sample_percent (0.2)")
    p.add_argument("--intensity-step", type=int, default=4, help="a pixel's token repeats intensity // this")
    p.add_argument("--max-features", type=int, default=2 ** 14, help="the trainer's max_features (2^14)")
    p.add_argument("--C", type=float, default=10.0, help="the trainer's C (default 10)")
    a = quick.parse(p, {"seeds": 2, "budget": 60, "points": "40,60", "batch": 20, "targets": "0.6",
                        "random_beyond": 400})
    scored = set(range(a.seed_set, a.budget, a.batch)) | {a.budget}  # the label counts a round ends at
    points = [int(x) for x in a.points.split(",")]
    off = [n for n in points if n not in scored]
    if off:
        raise SystemExit(f"--points {','.join(map(str, off))}: not a label count the simulation scores at "
                         f"({a.seed_set}, {a.seed_set + a.batch}, ... {a.budget}: the seed set, then every "
                         "batch); pick counts of --seed-set + k x --batch, or the --budget")
    targets = [float(x) for x in a.targets.split(",")]

    began = time.perf_counter()
    items, truth = digits(a.intensity_step)
    pool, test = split([item.id for item in items], truth, a.test_share)
    runs = strategies(a.random_share)
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at start")
    print(f"data: scikit-learn's load_digits, {len(items)} 8x8 digits as pixel-token texts; "
          f"pool {len(pool)}, test {len(test)}")
    print(f"trainer: sklearn-text-classification, max_features {a.max_features}, C {a.C}; seed set "
          f"{a.seed_set} random labels, then batches of {a.batch} to {a.budget} labels; {a.seeds} seed(s)")
    curves: dict[str, list[Curve]] = {s.name: [] for s in runs}
    with tempfile.TemporaryDirectory(prefix="potato-bench-al-") as tmp:
        learner = Learner(Path(tmp), items, truth, {"max_features": a.max_features, "C": a.C})
        ceiling = score(learner.fit_predict(pool, test, 0), set(test), truth, len(pool))
        print(f"reference: all {len(pool)} pool labels: accuracy {ceiling.accuracy:.3f}, macro-F1 "
              f"{ceiling.macro_f1:.3f}", flush=True)
        for seed in range(a.seeds):
            seed_set = random.Random(f"seed set {seed}").sample(pool, a.seed_set)
            unlabelled = [i for i in pool if i not in set(seed_set)]
            first = learner.fit_predict(seed_set, unlabelled + test, seed)
            for s in runs:
                beyond = a.random_beyond if s.measure is None else 0
                curve = simulate(learner, s, seed, seed_set, first, pool, test, a.batch, a.budget, beyond)
                curves[s.name].append(curve)
            print(f"  seed {seed}: " + ", ".join(
                f"{name} {at(cs[-1], a.budget).accuracy:.3f}" for name, cs in curves.items())
                + f" at {a.budget} labels; load {os.getloadavg()[0]:.1f}", flush=True)
        report(curves, points, targets, a.budget)
    print(f"\n{learner.fits} fits + predictions, {learner.seconds / learner.fits:.3f} s each on average; "
          f"{time.perf_counter() - began:.0f} s in all; load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
