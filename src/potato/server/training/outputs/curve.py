"""What each label bought: the holdout score of every succeeded run against the number of labelled
items it trained on, one series per trainer and schema (pure).

The score is the one the runs table shows for the run, so the two never disagree: accuracy for a
radio, multiselect, likert or select schema (the share of holdout items whose predicted answer is the
label; exact set match on a multiselect), exact-match span F1 for a span schema (it has no accuracy).
Both are computed by the worker on the holdout.

A holdout of a few items says little: 2 of 2 right is "1.00" and so is 200 of 200. So each point
carries ``n``, the holdout items it stands on, and a 95 % Wilson score interval (``low``, ``high``),
which the page draws as a band: with small holdouts the bands of neighbouring runs overlap, and a dip
from 1.00 to 0.40 reads as the noise it is. For accuracy the interval is the binomial one over the
items; for span F1 it treats the score as a share of the ``n`` items, an approximation that errs
wide (items, not their spans, are the independent draws).

A run counts once per schema it trained, at that schema's ``n_train``; points are in order of
labels, then of when the run finished, so a line reads left to right as the study grew.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from potato.server.training.runs.store import Run, RunState

SCORES = (("holdout_accuracy", "accuracy"), ("holdout_f1", "span F1"))
"""(metric under ``<schema>/``, its name on the page): the first a run has is its score; a span
schema has only the second."""

Z95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95 % interval."""


def wilson_interval(score: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``score`` observed on ``n`` items (pure).

    Unlike ``score ± z·sqrt(p(1-p)/n)`` it stays within [0, 1] and is not zero-wide at 0 or 1: 2 of
    2 right gives (0.34, 1.0), not (1.0, 1.0). With no items nothing is known: (0.0, 1.0)."""
    if n <= 0:
        return 0.0, 1.0
    p = min(1.0, max(0.0, score))
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if p == 0.0 else max(0.0, centre - half)  # exact at the ends, where rounding would stray
    high = 1.0 if p == 1.0 else min(1.0, centre + half)
    return low, high


def learning_curve(runs: Iterable[Run]) -> list[dict[str, Any]]:
    """``[{"trainer", "schema", "metric", "points": [{"run", "labels", "score", "n", "low", "high",
    "finished_at"}]}]``; ``n`` is the holdout items the score stands on (None when the run did not say),
    ``low``/``high`` the 95 % interval around the score."""
    series: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        if run.state is not RunState.SUCCEEDED:
            continue
        for schema in run.schemas:
            labels = _number(run.metrics.get(f"{schema}/n_train"))
            found = [(_number(run.metrics.get(f"{schema}/{key}")), name) for key, name in SCORES]
            score, metric = next(((v, n) for v, n in found if v is not None), (None, ""))
            if labels is None or score is None:
                continue
            holdout = _number(run.metrics.get(f"{schema}/n_holdout"))
            n = int(holdout) if holdout is not None else None
            low, high = wilson_interval(score, n or 0)
            line = series.setdefault((run.trainer, schema), {"trainer": run.trainer, "schema": schema,
                                                             "metric": metric, "points": []})
            line["points"].append({"run": run.id, "labels": int(labels), "score": score, "n": n,
                                   "low": round(low, 4), "high": round(high, 4), "finished_at": run.finished_at})
    for line in series.values():
        line["points"].sort(key=lambda p: (p["labels"], p["finished_at"] or 0.0))
    return [series[key] for key in sorted(series, key=lambda k: (k[1], k[0]))]


def _number(value: object) -> float | None:
    """A metric's value when it is a finite number (metrics come from the worker's result.json)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
