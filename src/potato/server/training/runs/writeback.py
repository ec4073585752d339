"""Writeback: a run's predictions become model suggestions that annotators see.

Suggestions live beside labels, never in them: a human label is never overwritten, and a
suggestion becomes a label only when an annotator accepts it (stored with source
``suggestion`` and the run id). With ``include_unlabeled: false`` only items somebody labelled get
one, except from a trainer that does not learn from labels (llm-zero-shot): its predictions for every
item are suggestions, as it exists to suggest before anyone labels. The newest run written back for
a schema is the one shown, if it predicted that schema at all: a run that wrote no (valid)
prediction for a schema leaves the run shown before in place, and says so (:func:`kept_note`),
instead of showing annotators nothing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from potato.config.schema import Writeback
from potato.training.job.schemes import Scheme, SchemeType
from potato.project import Project
from potato.server.jsonio import jsonl_objects
from potato.server.training.runs.stepitems import StepQuestions
from potato.server.training.runs.store import Run
from potato.training.trainers import UnknownTrainer, get_trainer
from potato.training.job.spans import BadSpan, Texts, by_position
from potato.label_import import span_texts_by_id


@dataclass
class WritebackStats:
    schemas: list[str] = field(default_factory=list)
    written: int = 0
    below_confidence: int = 0
    skipped_unlabelled: int = 0
    invalid: int = 0
    stopped: bool = False
    """The run was asked to stop before its suggestions were stored: nothing was written."""
    predicted: dict[str, int] = field(default_factory=dict)
    """Per schema, the valid predictions the run wrote, before min_confidence and include_unlabeled."""
    kept: dict[str, str | None] = field(default_factory=dict)
    """The schemas the run wrote no valid prediction for, each with the run still shown for it (None:
    none), whose suggestions annotators keep."""


def _is_confidence(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and 0.0 <= value <= 1.0


def suggested_spans(label: object, texts: str | Texts, scheme: Scheme,
                    min_confidence: float) -> list[dict[str, Any]] | None:
    """A span prediction as the suggestion annotators see: its spans of at least ``min_confidence``,
    by position, each with its confidence and (off the item's own text) its field (pure). None when
    the prediction is not spans over ``texts`` that the scheme takes, each with a confidence in
    [0, 1]: an annotator could not accept it."""
    try:
        scheme.check_spans(label, texts)
        assert isinstance(label, list)
        if not all(_is_confidence(raw.get("confidence")) for raw in label):
            return None
        # Each span on its own, for its field as stored (a span naming the item's text key names none).
        kept = [(scheme.check_spans([raw], texts)[0], float(raw["confidence"])) for raw in label]
    except BadSpan:
        return None
    kept.sort(key=lambda pair: by_position(pair[0]))
    return [{**span.to_json(), "confidence": conf} for span, conf in kept if conf >= min_confidence]


def learns_from_labels(trainer: str) -> bool:
    """Whether ``trainer`` learns from the labels (the registry's class attribute; trainer modules import
    torch only inside functions, so this imports none). An unknown or unimportable trainer counts as one
    that does: its unlabelled items follow ``include_unlabeled`` as before."""
    try:
        return bool(get_trainer(trainer).learns_from_labels)
    except (UnknownTrainer, ImportError):
        return True


def select(rows: Iterator[dict[str, Any]], wb: Writeback, run_schemas: set[str], texts: Mapping[str, str | Texts],
           labelled: set[tuple[str, str]], stats: WritebackStats,
           schemes: Mapping[str, Scheme] | None = None,
           every_item: bool = False) -> Iterator[tuple[str, str, str, float, str | None]]:
    """The predictions that become suggestions, by the writeback rules (pure). A label the scheme does not
    have, or a confidence outside [0, 1], is counted invalid: an annotator could not accept it.

    A span prediction is suggested span by span: those under ``min_confidence`` are left out, and
    a prediction left with none of the spans it had counts as below the confidence. ``texts`` are
    the items' texts by id, or their texts by field (spans are checked against them).

    ``every_item``: the run's trainer does not learn from labels (llm-zero-shot), so every item is one
    it never saw labelled and its predictions for every item become suggestions, whatever
    ``include_unlabeled`` says: that is what such a run is for (suggestions before the first label)."""
    schemas = set(wb.schemas) & run_schemas
    for row in rows:
        try:
            item_id, schema, label, conf = str(row["item_id"]), str(row["schema"]), row["label"], float(row["confidence"])
        except (KeyError, TypeError, ValueError):
            stats.invalid += 1
            continue
        if schema not in schemas or item_id not in texts:
            continue
        scheme = (schemes or {}).get(schema)
        if scheme is not None and scheme.annotation_type is SchemeType.SPAN and _is_confidence(conf):
            spans = suggested_spans(label, texts[item_id], scheme, wb.min_confidence)
            if spans is None:
                stats.invalid += 1
                continue
            stats.predicted[schema] = stats.predicted.get(schema, 0) + 1
            if (spans == [] and label) or (not label and conf < wb.min_confidence):
                stats.below_confidence += 1
                continue
            label = spans
        elif not _is_confidence(conf) or (scheme is not None and not scheme.accepts(label)):
            stats.invalid += 1
            continue
        else:
            stats.predicted[schema] = stats.predicted.get(schema, 0) + 1
            if conf < wb.min_confidence:
                stats.below_confidence += 1
                continue
        if not (wb.include_unlabeled or every_item) and (item_id, schema) not in labelled:
            stats.skipped_unlabelled += 1
            continue
        stats.written += 1
        ranked = step_confidences(row.get("steps"), label) if scheme is not None and scheme.learnt_by_step \
            else option_probabilities(row.get("probabilities"), scheme)
        yield item_id, schema, json.dumps(label, ensure_ascii=False), conf, ranked


def option_probabilities(raw: object, scheme: Scheme | None) -> str | None:
    """A radio or multiselect prediction's probability per option, as stored JSON (pure), or None:
    option highlighting ranks the options by them. Only the scheme's own labels, each a number in
    [0, 1]; anything else in the line is left out, never shown."""
    if scheme is None or scheme.annotation_type not in (SchemeType.RADIO, SchemeType.MULTISELECT) \
            or not isinstance(raw, dict):
        return None
    kept = {label: float(p) for label, p in raw.items()
            if label in scheme.labels and _is_confidence(p)}
    return json.dumps(kept, ensure_ascii=False) if kept else None


def step_confidences(raw: object, label: object) -> str | None:
    """A step classifier's confidence in each step it suggests an answer for, as stored JSON (pure):
    kept where option highlighting keeps its probabilities, by the step's id."""
    if not isinstance(raw, dict) or not isinstance(label, dict):
        return None
    kept = {turn: float(c) for turn, c in raw.items() if turn in label and _is_confidence(c)}
    return json.dumps(kept, ensure_ascii=False) if kept else None


def schema_score(metrics: Mapping[str, Any], scheme: Scheme | None) -> float | None:
    """The holdout score annotators see beside a schema's suggestions: span F1 for a span scheme
    (its answers are scored span by span), a step classifier's accuracy on the held-out steps, else
    the run's accuracy."""
    if scheme is not None and scheme.annotation_type is SchemeType.SPAN:
        score = metrics.get(f"{scheme.name}/holdout_f1")
    elif scheme is not None and scheme.learnt_by_step:  # scored step by step, apart from any other scheme
        score = metrics.get(f"{scheme.name}/holdout_accuracy")
    else:
        score = metrics.get("holdout_accuracy")
    return score if isinstance(score, (int, float)) and not isinstance(score, bool) else None


def write_back(project: Project, run: Run, predictions: Path | None, metrics: Mapping[str, Any]) -> WritebackStats:
    """Store the run's suggestions in one transaction and make it the shown run for the schemas it
    predicted. A schema it wrote no valid prediction for (``predictions`` None: none at all) keeps the
    run shown before: an upload that was empty, or a trainer that skipped a schema, must not take
    the earlier runs' suggestions away from annotators (``stats.kept`` says whose they keep)."""
    wb = project.config.model_training.writeback
    stats = WritebackStats(schemas=sorted(set(wb.schemas) & set(run.schemas)))
    if not stats.schemas:
        return stats
    conn = project.db.conn
    every_item = not learns_from_labels(run.trainer)
    # Which items someone labelled matters only when unlabelled items are left out.
    labelled: set[tuple[str, str]] = set() if wb.include_unlabeled or every_item else {
        (r[0], r[1]) for r in conn.execute("SELECT DISTINCT item_id, schema FROM labels")
    }
    schemes = {s.name: s for s in project.config.annotation_schemes}
    texts = span_texts_by_id(project.config, project.items)
    lines = jsonl_objects(predictions) if predictions is not None else iter(())  # a bad line: {}, invalid
    steps = StepQuestions.of(project.config, run.schemas)
    if steps:  # a step classifier's steps, one suggestion per trace
        lines = steps.suggestions(lines, project.items)
    rows = select(lines, wb, set(run.schemas), texts, labelled, stats, schemes, every_item)
    with project.db.transaction() as tx:
        asked = tx.execute("SELECT cancel_requested FROM runs WHERE id = ?", (run.id,)).fetchone()
        if asked is not None and asked[0]:
            stats.stopped = True  # an admin's cancel is final: nothing of this run is shown
            return stats
        tx.executemany(
            "INSERT OR REPLACE INTO suggestions (run_id, item_id, schema, label, confidence, probabilities) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            ((run.id, *row) for row in rows),
        )
        for schema in stats.schemas:
            if not stats.predicted.get(schema):
                shown = tx.execute("SELECT value FROM meta WHERE key = ?", (f"writeback:{schema}",)).fetchone()
                stats.kept[schema] = json.loads(shown[0]).get("run_id") if shown is not None else None
                continue
            tx.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (f"writeback:{schema}", json.dumps({"run_id": run.id, "trainer": run.trainer,
                                                     "score": schema_score(metrics, schemes.get(schema))})),
            )
    return stats


def kept_note(stats: WritebackStats) -> str | None:
    """What run.log and the run's card say when the run wrote no valid prediction for a schema it
    writes back: whose suggestions annotators keep (pure). None when it predicted every schema."""
    if not stats.kept:
        return None
    what = f"no valid predictions ({stats.invalid} invalid lines)" if stats.invalid else "no predictions"
    by_run: dict[str | None, list[str]] = {}
    for schema, shown in stats.kept.items():
        by_run.setdefault(shown, []).append(schema)
    notes = []
    for shown, schemas in sorted(by_run.items(), key=lambda kv: kv[0] is None):  # whose are kept, first
        names = ", ".join(schemas)
        if shown is None:
            notes.append(f"This run wrote {what} for {names}; no earlier run has suggestions for it either.")
        else:
            notes.append(f"This run wrote {what} for {names}, so annotators keep the suggestions of run {shown}.")
    return " ".join(notes)


def withdraw(project: Project, run_id: str) -> int:
    """Take back a run's suggestions (it was stopped after writing them); where it was the shown
    run, the newest earlier succeeded run with suggestions for that schema is shown again. Returns
    how many suggestions were removed."""
    with project.db.transaction() as tx:
        removed = tx.execute("DELETE FROM suggestions WHERE run_id = ?", (run_id,)).rowcount
        for key, value in tx.execute("SELECT key, value FROM meta WHERE key LIKE 'writeback:%'").fetchall():
            if json.loads(value).get("run_id") != run_id:
                continue
            schema = key.split(":", 1)[1]
            previous = tx.execute(
                "SELECT r.id, r.trainer, r.metrics FROM runs r WHERE r.state = 'succeeded' AND r.id != ? AND EXISTS "
                "(SELECT 1 FROM suggestions s WHERE s.run_id = r.id AND s.schema = ?) "
                "ORDER BY r.finished_at DESC LIMIT 1", (run_id, schema)).fetchone()
            if previous is None:
                tx.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                score = schema_score(json.loads(previous[2] or "{}"), project.config.scheme(schema))
                tx.execute("UPDATE meta SET value = ? WHERE key = ?",
                           (json.dumps({"run_id": previous[0], "trainer": previous[1], "score": score}), key))
    return removed


def shown_runs(project: Project) -> dict[str, dict[str, Any]]:
    """Per schema, the run whose suggestions annotators see (with trainer and score: provenance)."""
    out: dict[str, dict[str, Any]] = {}
    for row in project.db.conn.execute("SELECT key, value FROM meta WHERE key LIKE 'writeback:%'"):
        out[row[0].split(":", 1)[1]] = json.loads(row[1])
    return out


def suggestions_for(project: Project, item_id: str) -> dict[str, dict[str, Any]]:
    """The suggestions shown on one item: label, confidence, run id, trainer, score."""
    out: dict[str, dict[str, Any]] = {}
    for schema, info in shown_runs(project).items():
        row = project.db.conn.execute(
            "SELECT label, confidence, probabilities FROM suggestions WHERE run_id = ? AND item_id = ? AND schema = ?",
            (info["run_id"], item_id, schema),
        ).fetchone()
        if row is not None:
            out[schema] = {"label": json.loads(row[0]), "confidence": row[1], **info}
            if row[2] is not None:
                out[schema]["probabilities"] = json.loads(row[2])
    return out


def run_suggestions(project: Project, run_id: str) -> Iterator[dict[str, Any]]:
    for row in project.db.conn.execute(
        "SELECT item_id, schema, label, confidence FROM suggestions WHERE run_id = ? ORDER BY item_id, schema",
        (run_id,),
    ):
        yield {"run_id": run_id, "item_id": row[0], "schema": row[1], "label": json.loads(row[2]), "confidence": row[3]}
