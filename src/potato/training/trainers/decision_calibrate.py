"""``decision-calibrate``: recalibrate a previous run's confidences against the annotators' labels.

It trains no text model. It reads an earlier run's ``predictions.jsonl`` (``source_predictions``)
and fits, per schema, a map from that run's confidence to the probability that its label is
right, using the items' majority labels as the truth:

- ``platt`` (default): p = sigmoid(a * logit(confidence) + b), two parameters.
- ``temperature``: p = sigmoid(a * logit(confidence)), one parameter (a = 1/T): keeps the order
  and the 0.5 point, only sharpens or softens.

Both are fitted by Newton's method on the log loss, with Platt's smoothed targets
((N+ + 1)/(N+ + 2) and 1/(N- + 2)) so a source run that is always right (or always wrong) does not
drive the confidences to exactly 1 (or 0). Labels are kept; only the confidences change.

What it fits on: only predictions the source model made for items it did NOT train on. On its own
training items a model is right almost always and near-certain; a map fitted there keeps (or
raises) the confidences, and annotators then read "95% sure" from a model that is right two times
in three. The source run's training items are the labelled items of its bundle
(``bundle.tar.gz`` in its run folder, beside ``predictions.jsonl``) outside its ``split.json``
holdout. The calibration items are every item labelled in this run's bundle that the source did not
train on: its holdout, and items labelled since. The server draws both runs' holdouts by the same
rule, so those items are mostly in this run's holdout, which the worker keeps out of ``fit``: the
trainer therefore reads the labels from the bundle itself.

When fewer than :data:`MIN_HELDOUT` such items have a label for a schema, it cross-validates
instead: it refits the source run's trainer with the source's parameters :data:`FOLDS` times, each
time on the other folds of this run's labelled items, and calibrates on the predictions for the
left-out fold (out-of-fold predictions: each made by a model that never saw the item). That needs a
CPU trainer (``sklearn-text-classification``, ``noop``); a source that needs a GPU
(``hf-text-classification``) with too small a holdout fails the run as ``bad_job``, naming the fix.

What it reports (metrics of the run, ``result.json``), per schema, measured by cross-fitting: the
calibration items are split into :data:`FOLDS` folds, the map is fitted on the other folds and
applied to each fold, so every item is scored by a map that never saw it (and by a source model
that never trained on it):

- ``<schema>/calibration_ece_before`` / ``_after``: expected calibration error (top-label, 10 equal
  confidence bins: the share-weighted gap between mean confidence and hit rate), raw vs calibrated.
- ``<schema>/calibration_log_loss_before`` / ``_after``: log loss of the confidence as the
  probability of being right.
- ``<schema>/n_calibration``: how many items the map was fitted on.

The final map is fitted on all calibration items. An item among them gets, in predictions.jsonl,
the map of its fold (fitted without it), so the worker's holdout score (``<schema>/holdout_brier``)
is still measured on confidences that did not learn from the item's label.

Why local only (``local_only = True``; the server refuses it on other backends): its input is a
run folder on the server (``<output_annotation_dir>/training/runs/<id>/``), named by an absolute
server path. The bundle does not carry it, and no remote host can read it. Calibrating needs no
GPU and runs in well under a second (cross-validating a CPU trainer takes a few fits), so nothing is
lost. A ``decision-calibrate`` run is not a source: calibrate the run it calibrated.

Items the source run did not predict get no prediction (a warning says how many).

This module is the trainer: what to fit on, the cross-validation, the report. The maths (fitting and
scoring the map, folds) is in :mod:`~potato.training.trainers.calibration_maths`; reading the source
run folder is in :mod:`~potato.training.trainers.calibration_source`.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import ClassVar, Mapping, Sequence, Tuple

from potato.training.job import labels as labelling
from potato.training.job.failures import BadJob, TrainerImportError
from potato.training.job.spec import read_items, read_labels
from potato.training.job.schemes import Scheme
from potato.training.job.results import Label
from potato.training.trainers.base import (
    Example,
    JobItem,
    Param,
    Prediction,
    TrainContext,
    Trainer,
    write_labels_json,
)
from potato.training.trainers.calibration_maths import (
    apply_scaling,
    confidence_log_loss,
    expected_calibration_error,
    fit_scaling,
    fold_of,
)
from potato.training.trainers.calibration_source import TRAINER_NAME, SourceRun, read_source_run

MIN_PAIRS = 2
"""Fewer calibration items: keep the confidences as they are."""
MIN_HELDOUT = 20
"""Fewer labelled items the source did not train on (per schema): cross-validate the source trainer."""
FOLDS = 5
"""Folds of the cross-validation (source trainer) and of the cross-fitting (the map's scores)."""
MIN_CROSS_VALIDATION = 2 * FOLDS
"""Fewer labelled items than this: too few to cross-validate; the confidences are kept as they are."""
FROM_HOLDOUT = "source holdout"
FROM_CROSS_VALIDATION = "cross-validation"

Pair = Tuple[str, float, bool]
"""(item id, confidence, whether the predicted label is the majority label)."""


def _same(a: Label, b: Label) -> bool:
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return set(a) == set(b)
    return a == b


class DecisionCalibrateTrainer(Trainer):
    name = TRAINER_NAME
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
        self.fitted_on: dict[str, str] = {}
        self.scores: dict[str, dict[str, float]] = {}
        """Per schema, the scores reported as ``<schema>/calibration_*`` (and ``n_calibration``)."""
        self.fold_scaling: dict[tuple[str, str], tuple[float, float]] = {}
        """(item id, schema) -> the map fitted without that calibration item (cross-fitting)."""

    def fit(self, examples: Sequence[Example]) -> None:
        """Fit each schema's map on held-out predictions; ``examples`` (this run's training items) are
        not what it needs: the items the source did not train on are mostly in this run's holdout."""
        ctx = self.ctx
        source = read_source_run(Path(ctx.params["source_predictions"]))
        self.source = source.predictions
        ctx.log("decision-calibrate: {} source predictions from {} (run {}, trainer {}, trained on {} items)".format(
            len(self.source), ctx.params["source_predictions"], source.job.run_id, source.job.trainer,
            len(source.trained_on)))
        for spec in ctx.schemas:
            if not any(schema == spec.name for _, schema in self.source):
                raise BadJob("decision-calibrate: {} has no predictions for schema '{}'".format(
                    ctx.params["source_predictions"], spec.name))
        # Every labelled item of this run's bundle, its holdout too (see the module docstring).
        items = read_items(ctx.bundle_dir)
        known = {item.id for item in items}
        targets = labelling.aggregate((r for r in read_labels(ctx.bundle_dir, ctx.job) if r.item_id in known),
                                      ctx.schemas)
        pools: dict[str, list[Pair]] = {}
        short: list[Scheme] = []
        for spec in ctx.schemas:
            pool = []
            for item_id, per_schema in targets.items():
                found = self.source.get((item_id, spec.name))
                if spec.name in per_schema and found is not None and item_id not in source.trained_on:
                    pool.append((item_id, found[1], _same(found[0], per_schema[spec.name])))
            if len(pool) >= MIN_HELDOUT:
                pools[spec.name] = pool
                self.fitted_on[spec.name] = FROM_HOLDOUT
                ctx.log(f"decision-calibrate: {spec.name}: calibrating on {len(pool)} labelled items the source "
                        "model did not train on")
            else:
                short.append(spec)
                ctx.log(f"decision-calibrate: {spec.name}: only {len(pool)} labelled item(s) the source model did "
                        f"not train on (fewer than {MIN_HELDOUT}); cross-validating {source.job.trainer} instead")
        if short:
            pools.update(self._cross_validate(source, short, items, targets))
        for spec in ctx.schemas:
            ctx.check_stop()
            self._calibrate(spec.name, pools.get(spec.name, []))

    def _cross_validate(self, source: SourceRun, specs: Sequence[Scheme], items: Sequence[JobItem],
                        targets: labelling.Targets) -> dict[str, list[Pair]]:
        """Out-of-fold predictions of the source trainer for this run's labelled items, per schema."""
        from potato.training.trainers import UnknownTrainer, get_trainer

        ctx = self.ctx
        names = ", ".join(f"'{s.name}'" for s in specs)
        ids = [i for i, t in targets.items() if any(s.name in t for s in specs)]
        if len(ids) < MIN_CROSS_VALIDATION:
            ctx.warn(f"decision-calibrate: schema {names} has {len(ids)} labelled item(s), too few to calibrate "
                     f"(at least {MIN_CROSS_VALIDATION}); its confidences are kept as they are. Label more items "
                     "and start the calibration again")
            return {}
        try:
            cls = get_trainer(source.job.trainer)
        except UnknownTrainer as exc:
            raise BadJob(f"decision-calibrate: cannot cross-validate the source run: {exc}") from None
        except ImportError as exc:
            raise TrainerImportError(source.job.trainer, exc) from exc
        if cls.uses_device or cls.local_only:
            raise BadJob(f"decision-calibrate: schema {names} has fewer than {MIN_HELDOUT} labelled items that the "
                         f"source run {source.job.run_id} did not train on, too few to calibrate on, and its trainer "
                         f"{cls.name} is not refitted here for cross-validation (decision-calibrate runs on the CPU). Label "
                         "more items, "
                         "or raise model_training.holdout_fraction (e.g. 0.3), then train the source again and "
                         "calibrate the new run")
        params = cls.validate_params(source.job.params)
        try:
            cls.check_imports(params)
        except ImportError as exc:
            raise TrainerImportError(cls.name, exc, cls.requires) from exc
        first = specs[0].name
        folds = fold_of([(i, json.dumps(targets[i].get(first))) for i in ids], FOLDS, ctx.seed)
        by_id = {item.id: item for item in items}
        out: dict[str, list[Pair]] = {spec.name: [] for spec in specs}
        with tempfile.TemporaryDirectory(prefix="calibrate-cv-", dir=str(ctx.artifacts_dir.parent)) as scratch:
            for fold in range(FOLDS):
                ctx.check_stop()
                ctx.step(f"cross-validating {cls.name} (fold {fold + 1} of {FOLDS})")
                train = labelling.examples_for(items, targets, [i for i in ids if folds[i] != fold])
                train_targets = {ex.id: dict(ex.targets) for ex in train}
                fold_specs = tuple(s for s in specs if any(s.name in t for t in train_targets.values()))
                held = [by_id[i] for i in ids if folds[i] == fold]
                if not fold_specs or not held:
                    continue
                job = replace(ctx.job, trainer=cls.name, schemas=fold_specs, params=dict(params),
                              seed=source.job.seed)
                class_labels = {s.name: labelling.class_labels(s, train_targets) for s in fold_specs}
                sub = TrainContext(job, params, "cpu", Path(scratch), ctx.bundle_dir, ctx.events, ctx.should_stop,
                                   class_labels)
                model = cls(sub)
                model.check_schemas()
                model.fit(train)
                for item, row in zip(held, model.predict(held)):
                    for spec in fold_specs:
                        truth = targets[item.id].get(spec.name)
                        found = row.get(spec.name)
                        if truth is not None and found is not None:
                            out[spec.name].append((item.id, min(1.0, max(0.0, float(found[1]))),
                                                   _same(found[0], truth)))
        for spec in specs:
            self.fitted_on[spec.name] = FROM_CROSS_VALIDATION
            ctx.log(f"decision-calibrate: {spec.name}: calibrating on {len(out[spec.name])} out-of-fold predictions "
                    f"of {cls.name} ({FOLDS}-fold cross-validation)")
        return out

    def _calibrate(self, schema: str, pool: Sequence[Pair]) -> None:
        """Fit the map on ``pool``; score it by cross-fitting; remember each item's fold map."""
        ctx = self.ctx
        self.counts[schema] = len(pool)
        if len(pool) < MIN_PAIRS:
            if schema in self.fitted_on:
                ctx.warn(f"decision-calibrate: schema '{schema}' has {len(pool)} item(s) to calibrate on; its "
                         "confidences are kept as they are")
            self.scaling[schema] = (1.0, 0.0)
            return
        with_bias = ctx.params["method"] == "platt"
        confidences = [c for _, c, _ in pool]
        correct = [ok for _, _, ok in pool]
        folds = fold_of([(i, "1" if ok else "0") for i, _, ok in pool], FOLDS, ctx.seed)
        crossed: list[float] = []
        for fold in range(FOLDS):
            rest = [(c, ok) for i, c, ok in pool if folds[i] != fold]
            scaling = fit_scaling([c for c, _ in rest], [ok for _, ok in rest], with_bias) if rest else (1.0, 0.0)
            for i, _, _ in pool:
                if folds[i] == fold:
                    self.fold_scaling[(i, schema)] = scaling
        for i, c, _ in pool:
            crossed.append(apply_scaling(c, self.fold_scaling[(i, schema)]))
        a, b = fit_scaling(confidences, correct, with_bias)
        self.scaling[schema] = (a, b)
        scores = {
            "calibration_ece_before": expected_calibration_error(confidences, correct),
            "calibration_ece_after": expected_calibration_error(crossed, correct),
            "calibration_log_loss_before": confidence_log_loss(confidences, correct),
            "calibration_log_loss_after": confidence_log_loss(crossed, correct),
            "n_calibration": len(pool),
        }
        self.scores[schema] = scores
        for name, value in scores.items():
            ctx.metric(f"{schema}/{name}", value)
        accuracy = sum(correct) / len(correct)
        ctx.log(f"decision-calibrate: {schema} on {len(pool)} items ({self.fitted_on[schema]}): a={a:.4f} b={b:.4f}; "
                f"accuracy {accuracy:.3f}, mean confidence {sum(confidences) / len(pool):.3f} -> "
                f"{sum(crossed) / len(pool):.3f}; on items neither model saw, calibration error (ECE) "
                f"{scores['calibration_ece_before']:.4f} -> {scores['calibration_ece_after']:.4f}, log loss "
                f"{scores['calibration_log_loss_before']:.4f} -> {scores['calibration_log_loss_after']:.4f}")

    def predict(self, items: Sequence[JobItem]) -> list[dict[str, Prediction | None]]:
        out: list[dict[str, Prediction | None]] = []
        for item in items:
            row: dict[str, Prediction | None] = {}
            for spec in self.ctx.schemas:
                found = self.source.get((item.id, spec.name))
                if found is None:
                    row[spec.name] = None
                    continue
                scaling = self.fold_scaling.get((item.id, spec.name), self.scaling[spec.name])
                row[spec.name] = Prediction(found[0], apply_scaling(found[1], scaling))
            out.append(row)
        return out

    def save(self, artifacts_dir: Path) -> None:
        extra = {name: {"method": self.ctx.params["method"], "a": a, "b": b, "n": self.counts.get(name, 0),
                        "fitted_on": self.fitted_on.get(name), **self.scores.get(name, {})}
                 for name, (a, b) in self.scaling.items()}
        write_labels_json(artifacts_dir, self.name, self.ctx.schemas, self.ctx.class_labels, extra)
        data = {"source_predictions": self.ctx.params["source_predictions"], "schemas": extra}
        (artifacts_dir / "calibration.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
