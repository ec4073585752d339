"""What each label bought: the holdout score of every succeeded run against the number of labelled
items it trained on, one series per trainer and schema (pure).

The score is F1, the one number every kind of scheme has: macro-F1 over the classes for a radio or
multiselect schema, exact-match F1 over the spans for a span schema (both computed by the worker on
the holdout). A run counts once per schema it trained, at that schema's ``n_train``; points are in
order of labels, then of when the run finished, so a line reads left to right as the study grew.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from potato.server.training.runs import Run, RunState

SCORES = (("holdout_macro_f1", "macro-F1"), ("holdout_f1", "F1"))
"""(metric under ``<schema>/``, its name on the page): the first a run has is its score."""


def learning_curve(runs: Iterable[Run]) -> list[dict[str, Any]]:
    """``[{"trainer", "schema", "metric", "points": [{"run", "labels", "score", "finished_at"}]}]``."""
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
            line = series.setdefault((run.trainer, schema), {"trainer": run.trainer, "schema": schema,
                                                             "metric": metric, "points": []})
            line["points"].append({"run": run.id, "labels": int(labels), "score": score,
                                   "finished_at": run.finished_at})
    for line in series.values():
        line["points"].sort(key=lambda p: (p["labels"], p["finished_at"] or 0.0))
    return [series[key] for key in sorted(series, key=lambda k: (k[1], k[0]))]


def _number(value: object) -> float | None:
    """A metric's value when it is a finite number (metrics come from the worker's result.json)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
