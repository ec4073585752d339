"""Active learning's order: after a run, the items nobody has labelled, most uncertain first.

The order is a list of item ids in the ``meta`` table (:data:`potato.assignment.ORDER_KEY`); each
annotator's queue takes its next item from it (:class:`potato.assignment.Assigned`), so a new order
applies from the next item fetched and never moves an item already handed out, open or labelled.
The measures are the usual ones of uncertainty sampling (Settles, *Active Learning Literature
Survey*, 2009): least confidence, the margin between the two likeliest labels, and entropy.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from potato.assignment import ORDER_KEY
from potato.config.schema import ActiveLearning
from potato.project import Project
from potato.server.jsonio import jsonl_objects
from potato.server.training.runs.store import Run


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))


def uncertainty(row: Mapping[str, Any], measure: str) -> float | None:
    """How unsure one prediction line is, from 0 (sure) to 1 (pure); None for a line that says
    nothing usable. Margin and entropy use every label's probability where the line has them (a
    multiselect line: each label's own yes/no), else they fall back to least confidence."""
    confidence = _finite(row.get("confidence"))
    if confidence is None:
        return None
    raw = row.get("probabilities")
    probabilities = [p for p in (_finite(v) for v in raw.values()) if p is not None] if isinstance(raw, dict) else []
    if measure == "least_confidence" or not probabilities:
        return 1.0 - confidence
    if isinstance(row.get("label"), list):  # multiselect: every label is a yes/no of its own
        if measure == "margin":
            return 1.0 - min(abs(2.0 * p - 1.0) for p in probabilities)
        return sum(_binary_entropy(p) for p in probabilities) / len(probabilities)
    ranked = sorted(probabilities, reverse=True)
    if measure == "margin":
        return 1.0 - (ranked[0] - (ranked[1] if len(ranked) > 1 else 0.0))
    if len(ranked) < 2:
        return 0.0
    return -sum(p * math.log(p) for p in ranked if p > 0) / math.log(len(ranked))


def _binary_entropy(p: float) -> float:
    return 0.0 if p in (0.0, 1.0) else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


def order(unsure: Mapping[str, float], pool: Sequence[str], count: int, random_share: float, seed: str) -> list[str]:
    """The ``count`` items put first (pure): the most uncertain of ``pool`` (ties by pool order), except
    that every ``1/random_share``-th place is an item drawn at random from the rest of the pool, as
    upstream's ``random_sample_percent`` keeps some of the queue a random sample. Linear in the pool:
    it is every unlabelled item of a large project."""
    by_doubt = sorted((i for i in pool if i in unsure), key=lambda i: -unsure[i])
    shuffled = list(pool)
    random.Random(seed).shuffle(shuffled)
    queues = {False: iter(by_doubt), True: iter(shuffled)}
    chosen: list[str] = []
    taken: set[str] = set()
    for place in range(min(count, len(pool))):
        at_random = math.floor((place + 1) * random_share) > math.floor(place * random_share)
        pick = next((i for i in queues[at_random] if i not in taken), None)
        if pick is None and at_random:
            pick = next((i for i in queues[False] if i not in taken), None)
        if pick is None:
            break
        chosen.append(pick)
        taken.add(pick)
    return chosen


def item_doubt(rows: Iterable[Mapping[str, Any]], schemas: Sequence[str], measure: str) -> dict[str, float]:
    """Each item's uncertainty: the most uncertain of its schemas' predictions."""
    out: dict[str, float] = {}
    wanted = set(schemas)
    for row in rows:
        if row.get("schema") not in wanted or not isinstance(row.get("item_id"), str):
            continue
        doubt = uncertainty(row, measure)
        if doubt is not None:
            out[row["item_id"]] = max(doubt, out.get(row["item_id"], 0.0))
    return out


def record_order(project: Project, run: Run, predictions: Path) -> dict[str, Any] | None:
    """Order the items nobody has labelled on active learning's schemas by ``run``'s uncertainty and
    make it the order annotators get; None when the run is not one active learning orders by."""
    al: ActiveLearning = project.config.active_learning
    schemas = [s for s in al.schemas if s in run.schemas]
    if not (al.enabled and schemas and predictions.exists()):
        return None
    marks = ", ".join("?" * len(schemas))
    labelled = {r[0] for r in project.db.conn.execute(
        f"SELECT DISTINCT item_id FROM labels WHERE schema IN ({marks})", schemas)}
    pool = [i for i in project.items.ids if i not in labelled]
    doubt = item_doubt(jsonl_objects(predictions), schemas, al.uncertainty)
    ids = order(doubt, pool, len(pool) if al.max_reordered is None else al.max_reordered, al.random_share,
                seed=run.id)
    value = {"run_id": run.id, "trainer": run.trainer, "uncertainty": al.uncertainty, "ids": ids,
             "random_share": al.random_share, "at": time.time()}
    project.db.write([("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (ORDER_KEY, json.dumps(value)))])
    return value


def current(project: Project) -> dict[str, Any]:
    """What the training page and the API say about the order: off, waiting for its first run, or
    the run it comes from (with the measure and how many items it puts first)."""
    al = project.config.active_learning
    if not al.enabled:
        return {"enabled": False}
    row = project.db.conn.execute("SELECT value FROM meta WHERE key = ?", (ORDER_KEY,)).fetchone()
    out: dict[str, Any] = {"enabled": True, "schemas": list(al.schemas), "uncertainty": al.uncertainty,
                           "every_n_labels": al.every_n_labels, "min_items": al.min_items,
                           "random_share": al.random_share, "max_reordered": al.max_reordered,
                           "run_id": None, "ordered": 0, "at": None}
    if row is not None:
        value = json.loads(row[0])
        out.update(run_id=value["run_id"], trainer=value.get("trainer"), ordered=len(value["ids"]), at=value.get("at"))
    return out
