"""``decision-calibrate``: recalibrate a previous run's confidences against the annotators' labels.

It trains no text model. It reads an earlier run's ``predictions.jsonl`` (``source_predictions``)
and fits, per schema, a map from that run's confidence to the probability that its label is
right, using the training items' majority labels as the truth:

- ``platt`` (default): p = sigmoid(a * logit(confidence) + b), two parameters.
- ``temperature``: p = sigmoid(a * logit(confidence)), one parameter (a = 1/T): keeps the order
  and the 0.5 point, only sharpens or softens.

Both are fitted by Newton's method on the log loss, with Platt's smoothed targets
((N+ + 1)/(N+ + 2) and 1/(N- + 2)) so a source run that is always right (or always wrong) on
the training items does not drive the confidences to exactly 1 (or 0). Labels are kept; only the
confidences change, so the worker's holdout accuracy equals the source run's and
``<schema>/holdout_brier`` shows what calibration gained. Pure standard library.

Why local only (``local_only = True``; the server refuses it on other backends): its input is a
file in the server's own run folders (``<output_annotation_dir>/training/runs/<id>/
predictions.jsonl``), named by an absolute server path. The bundle does not carry it, and no
remote host can read it. It needs no GPU and runs in well under a second, so nothing is lost.

Items the source run did not predict get no prediction (a warning says how many).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import ClassVar, Mapping, Sequence

from potato.training.failures import BadJob
from potato.training.results import Label
from potato.training.trainers.base import (
    Example,
    Item,
    Param,
    Prediction,
    TrainContext,
    Trainer,
    write_labels_json,
)

EPS = 1e-6
MIN_PAIRS = 2
"""Fewer training items with both a label and a source prediction: keep the confidences as they are."""


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


def read_source(path: Path) -> dict[tuple[str, str], tuple[Label, float]]:
    """(item id, schema) -> (label, confidence) from a ``predictions.jsonl``; BadJob if unreadable."""
    out: dict[tuple[str, str], tuple[Label, float]] = {}
    try:
        with open(str(path), encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if line.strip():
                    key, value = _source_row(path, number, line)
                    out[key] = value
    except OSError as exc:
        raise BadJob(f"decision-calibrate: source_predictions {path} cannot be read ({exc.strerror or exc}); "
                     "name the predictions.jsonl of a finished run on this server") from None
    return out


def _source_row(path: Path, number: int, line: str) -> tuple[tuple[str, str], tuple[Label, float]]:
    try:
        row = json.loads(line)
        label = row["label"]
        value: Label = tuple(label) if isinstance(label, list) else str(label)
        return (str(row["item_id"]), str(row["schema"])), (value, float(row["confidence"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise BadJob(f"decision-calibrate: {path} line {number} is not a prediction ({exc})") from None


def _same(a: Label, b: Label) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return set(a) == set(b)
    return a == b


class DecisionCalibrateTrainer(Trainer):
    name = "decision-calibrate"
    description = "Recalibrates a previous run's confidences against the labels (local only, no model)"
    requires = ()
    local_only = True
    params: ClassVar[Mapping[str, Param]] = {
        "source_predictions": Param(None, (str,), "path on the server of the predictions.jsonl to calibrate",
                                    required=True),
        "method": Param("platt", (str,), "platt (scale and shift) or temperature (scale only)",
                        choices=("platt", "temperature")),
    }

    def __init__(self, ctx: TrainContext) -> None:
        super().__init__(ctx)
        self.source: dict[tuple[str, str], tuple[Label, float]] = {}
        self.scaling: dict[str, tuple[float, float]] = {}
        self.counts: dict[str, int] = {}

    def fit(self, examples: Sequence[Example]) -> None:
        ctx = self.ctx
        self.source = read_source(Path(ctx.params["source_predictions"]))
        ctx.log("decision-calibrate: {} source predictions from {}".format(len(self.source),
                                                                           ctx.params["source_predictions"]))
        for spec in ctx.schemas:
            ctx.check_stop()
            if not any(schema == spec.name for _, schema in self.source):
                raise BadJob("decision-calibrate: {} has no predictions for schema '{}'".format(
                    ctx.params["source_predictions"], spec.name))
            confidences: list[float] = []
            correct: list[bool] = []
            for ex in examples:
                if spec.name not in ex.targets or (ex.id, spec.name) not in self.source:
                    continue
                label, confidence = self.source[(ex.id, spec.name)]
                confidences.append(confidence)
                correct.append(_same(label, ex.targets[spec.name]))
            self.counts[spec.name] = len(confidences)
            if len(confidences) < MIN_PAIRS:
                ctx.warn(f"decision-calibrate: schema '{spec.name}' has {len(confidences)} training item(s) "
                         "with a source prediction; its confidences are kept as they are")
                self.scaling[spec.name] = (1.0, 0.0)
                continue
            a, b = fit_scaling(confidences, correct, with_bias=ctx.params["method"] == "platt")
            self.scaling[spec.name] = (a, b)
            pairs = [(logit(c), 1.0 if ok else 0.0) for c, ok in zip(confidences, correct)]
            before, after = log_loss(pairs, 1.0, 0.0), log_loss(pairs, a, b)
            ctx.log(f"decision-calibrate: {spec.name} on {len(pairs)} items: a={a:.4f} b={b:.4f}, "
                    f"log loss {before:.4f} -> {after:.4f}")

    def predict(self, items: Sequence[Item]) -> list[dict[str, Prediction | None]]:
        out: list[dict[str, Prediction | None]] = []
        for item in items:
            row: dict[str, Prediction | None] = {}
            for spec in self.ctx.schemas:
                found = self.source.get((item.id, spec.name))
                if found is None:
                    row[spec.name] = None
                    continue
                a, b = self.scaling[spec.name]
                row[spec.name] = Prediction(found[0], sigmoid(a * logit(found[1]) + b))
            out.append(row)
        return out

    def save(self, artifacts_dir: Path) -> None:
        extra = {name: {"method": self.ctx.params["method"], "a": a, "b": b, "n": self.counts.get(name, 0)}
                 for name, (a, b) in self.scaling.items()}
        write_labels_json(artifacts_dir, self.name, self.ctx.schemas, self.ctx.class_labels, extra)
        data = {"source_predictions": self.ctx.params["source_predictions"], "schemas": extra}
        (artifacts_dir / "calibration.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
