"""What every trainer is: the :class:`Trainer` interface, its :class:`TrainContext` and its outputs.

Remote-safe: standard library only, Python 3.8. A trainer module may import its heavy packages
(scikit-learn, torch, transformers, peft) only inside functions, so that the worker can report
a missing package as ``Trainer '<name>' could not be imported`` instead of a traceback.

A run, as the worker drives it::

    params = Cls.validate_params(job.params)     # unknown or mistyped parameter: bad_job
    Cls.check_imports(params)                    # ImportError: reason import, exit 3
    trainer = Cls(ctx)                           # ctx.params are the validated params
    trainer.fit(train_examples)                  # the training items only (not the holdout)
    trainer.save(ctx.artifacts_dir)              # model files
    trainer.predict(all_items)                   # one {schema: Prediction} per item

One model per schema is the usual shape. ``predict`` returns a :class:`Prediction` per schema
the job names; ``None`` where a trainer cannot predict an item (decision-calibrate for an item
its source run never saw); the worker writes every other prediction and scores the holdout.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, NamedTuple, Optional, Sequence

from potato.training.gpus.dataparallel import SINGLE, Ranks
from potato.training.job.events import EventWriter
from potato.training.job.failures import BadJob, Cancelled
from potato.training.job.spec import JobItem, JobSpec
from potato.training.job.schemes import Scheme, SchemeType
from potato.training.job.labels import Example
from potato.training.job.results import Label

__all__ = [
    "Cancelled", "Example", "JobItem", "Param", "Prediction", "TrainContext", "Trainer",
    "multiselect_prediction", "radio_prediction",
]

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.25
"""Least time between two progress events (the first, last and epoch-end steps always go out)."""


class Prediction(NamedTuple):
    """A trainer's answer for one item and schema: the label (a tuple for multiselect) and how sure,
    with each label's probability where the model gives them (what margin and entropy are computed
    from when active learning orders items by them)."""

    label: Label
    confidence: float
    probabilities: Optional[Mapping[str, float]] = None


def radio_prediction(probabilities: Mapping[str, float]) -> Prediction:
    """The most probable label and its probability; ties go to the first label in mapping order."""
    if not probabilities:
        raise ValueError("no labels to choose from")
    best = max(probabilities.values())
    label = next(k for k, v in probabilities.items() if v == best)
    return Prediction(label, float(best), dict(probabilities))


def multiselect_prediction(probabilities: Mapping[str, float], threshold: float = 0.5,
                           inclusive: bool = True) -> Prediction:
    """Labels with probability >= ``threshold`` (> when not ``inclusive``), in mapping order.

    Confidence: the mean probability of the chosen labels; for the empty set, the mean of
    ``1 - p`` over all labels (how sure the model is that none applies). No labels at all: 1.0.
    """
    chosen = tuple(k for k, p in probabilities.items() if p > threshold or (p == threshold and inclusive))
    every = dict(probabilities)
    if chosen:
        return Prediction(chosen, sum(float(probabilities[k]) for k in chosen) / len(chosen), every)
    if not probabilities:
        return Prediction((), 1.0)
    return Prediction((), sum(1.0 - float(p) for p in probabilities.values()) / len(probabilities), every)


@dataclass(frozen=True)
class Param:
    """One trainer parameter: default, accepted JSON types, help text (the server shows it)."""

    default: Any
    types: tuple[type, ...]
    help: str
    required: bool = False
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    shown: bool = False
    """Shown on the start form beside the required ones, not folded away (a default most runs change)."""

    def check(self, trainer: str, name: str, value: Any) -> Any:
        """``value`` if it fits, else :class:`BadJob` naming the parameter and what it accepts."""
        if value is None:
            if self.required:
                raise BadJob(f"Trainer '{trainer}' needs the parameter {name}: {self.help}")
            if self.default is None:
                return None
            raise BadJob(f"Trainer '{trainer}' parameter {name} must not be null")
        accepted = self.types
        ok = isinstance(value, accepted) and not (isinstance(value, bool) and bool not in accepted)
        if not ok and float in accepted and isinstance(value, int) and not isinstance(value, bool):
            try:
                value, ok = float(value), True
            except OverflowError:
                raise BadJob(f"Trainer '{trainer}' parameter {name} is too large a number") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise BadJob(f"Trainer '{trainer}' parameter {name} must be a finite number, not {value!r}")
        if not ok:
            names = " or ".join(t.__name__ for t in accepted)
            raise BadJob(f"Trainer '{trainer}' parameter {name} must be {names}, not {value!r}")
        if self.choices and value not in self.choices:
            raise BadJob("Trainer '{}' parameter {} must be one of {}, not {!r}".format(
                trainer, name, ", ".join(repr(c) for c in self.choices), value))
        if self.minimum is not None and not isinstance(value, bool) and value < self.minimum:
            raise BadJob(f"Trainer '{trainer}' parameter {name} must be at least {self.minimum}, not {value!r}")
        return value


class TrainContext:
    """What a trainer gets from the worker: the job, where to write, how to report, when to stop."""

    def __init__(self, job: JobSpec, params: Mapping[str, Any], device: str, artifacts_dir: Path,
                 bundle_dir: Path, events: EventWriter, stop: Callable[[], bool],
                 class_labels: Mapping[str, tuple[str, ...]] | None = None,
                 clock: Callable[[], float] = time.monotonic, ranks: Ranks = SINGLE) -> None:
        self.job = job
        self.ranks = ranks
        """This process's place in a data-parallel run (:mod:`potato.training.gpus.dataparallel`)."""
        # Per schema, the labels a model chooses from: the scheme's, then others the labels use.
        self.class_labels: dict[str, tuple[str, ...]] = {
            s.name: tuple((class_labels or {}).get(s.name, s.labels)) for s in job.schemas
        }
        self.params: dict[str, Any] = dict(params)
        self.device = device
        self.artifacts_dir = artifacts_dir
        self.bundle_dir = bundle_dir
        self.events = events
        self._stop = stop
        self._clock = clock
        self._last_progress = float("-inf")
        self._last_epoch: float | None = None
        self._stop_logged = False
        self.metrics: dict[str, float] = {}
        """Scores the trainer reports (:meth:`metric`); the worker adds them to result.json's metrics."""

    @property
    def schemas(self) -> tuple[Scheme, ...]:
        return self.job.schemas

    @property
    def seed(self) -> int:
        return self.job.seed

    @property
    def num_threads(self) -> int | None:
        return self.job.num_threads

    @property
    def media_dir(self) -> Path:
        return self.bundle_dir / "media"

    def emit(self, event: dict[str, Any]) -> None:
        """Write a raw event (``type`` and its fields; ``t`` is added)."""
        self.events.emit(event)

    def step(self, text: str) -> None:
        """Change the run's step line, e.g. ``training sentiment (epoch 1 of 3)``."""
        self.events.step(text)

    def metric(self, name: str, value: float) -> None:
        """A score of the run beside the worker's holdout score, e.g. ``sentiment/calibration_ece_after``
        (decision-calibrate). It goes into result.json's ``metrics``; a name the worker's own holdout
        score uses keeps the worker's value."""
        self.metrics[name] = value

    def log(self, text: str, level: str = "info") -> None:
        """A line for run.log (and the worker's stderr.log)."""
        self.events.log(text, level)

    def warn(self, text: str) -> None:
        """A warning the admin should read (run.log and stderr.log)."""
        self.events.warning(text)

    def progress(self, step: int, total: int, loss: float | None = None, epoch: float | None = None) -> None:
        """Report step ``step`` of ``total``; throttled to one event per PROGRESS_INTERVAL_S, except
        the first and last step and the first step of a new epoch."""
        now = self._clock()
        new_epoch = epoch is not None and epoch != self._last_epoch
        if step <= 1 or step >= total or new_epoch or now - self._last_progress >= PROGRESS_INTERVAL_S:
            self._last_progress = now
            self._last_epoch = epoch
            self.events.progress(step, total, loss=loss, epoch=epoch)

    def should_stop(self) -> bool:
        """True once the worker got SIGTERM: finish the current step, then raise :class:`Cancelled`."""
        stop = self._stop()
        if stop and not self._stop_logged:
            self._stop_logged = True
            self.events.log("Stop requested (SIGTERM); stopping at this step", "warning")
        return stop

    def check_stop(self) -> None:
        """Raise :class:`Cancelled` if the worker was asked to stop."""
        if self.should_stop():
            raise Cancelled("cancelled")


class Trainer:
    """Base of every trainer: class attributes describe it, instances train on one run."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    """pip names of the packages this trainer imports (shown by the server, named when one is missing)."""
    params: ClassVar[Mapping[str, Param]] = {}
    uses_device: ClassVar[bool] = False
    """True for a trainer that runs on torch devices; False: always the CPU (torch is not probed)."""
    local_only: ClassVar[bool] = False
    """True: the server runs it only on the local backend (it reads server files)."""
    reports_loss: ClassVar[bool] = False
    """True for a trainer whose progress events carry a loss (the training page then keeps room for the chart)."""
    learns_from_labels: ClassVar[bool] = True
    """False for a trainer that predicts without learning (llm-zero-shot): it may run before anything is labelled."""
    annotation_types: ClassVar[tuple[SchemeType, ...]] = (SchemeType.RADIO, SchemeType.MULTISELECT)
    data_parallel: ClassVar[bool] = False
    """True for a trainer that trains data-parallel when a run sees several GPUs (its loop shards each
    epoch and wraps its model with :mod:`potato.training.gpus.dataparallel`); its ``predict`` is then given
    each rank's share of the items. False: one process, on the first GPU."""

    def __init__(self, ctx: TrainContext) -> None:
        self.ctx = ctx

    @classmethod
    def validate_params(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Parameters with defaults filled in; :class:`BadJob` for an unknown or ill-typed one."""
        unknown = sorted(set(raw) - set(cls.params))
        if unknown:
            valid = ", ".join(sorted(cls.params)) or "(none)"
            raise BadJob("Trainer '{}' has no parameter {}. Valid parameters are: {}".format(
                cls.name, ", ".join(repr(u) for u in unknown), valid))
        out = {}
        for key, spec in cls.params.items():
            out[key] = spec.check(cls.name, key, raw.get(key, spec.default))
        return out

    @classmethod
    def required_modules(cls, params: Mapping[str, Any]) -> tuple[str, ...]:
        """Modules this run will import (may depend on params, e.g. peft only for LoRA)."""
        return ()

    @classmethod
    def check_imports(cls, params: Mapping[str, Any]) -> None:
        """Import :meth:`required_modules` now, so a missing package fails the run before any work."""
        for module in cls.required_modules(params):
            importlib.import_module(module)

    def check_schemas(self) -> None:
        """:class:`BadJob` when the job names a schema type this trainer cannot learn."""
        for spec in self.ctx.schemas:
            if spec.annotation_type not in self.annotation_types:
                raise BadJob("Trainer '{}' cannot learn {} schemas such as {!r}; it supports: {}".format(
                    self.name, spec.annotation_type.value, spec.name,
                    ", ".join(t.value for t in self.annotation_types)))

    def fit(self, examples: Sequence[Example]) -> None:
        """Train on ``examples`` (training items only). Check ``ctx.check_stop()`` between steps."""
        raise NotImplementedError

    def predict(self, items: Sequence[JobItem]) -> list[dict[str, Prediction | None]]:
        """One ``{schema: Prediction or None}`` per item, in ``items`` order."""
        raise NotImplementedError

    def save(self, artifacts_dir: Path) -> None:
        """Write the model files into ``artifacts_dir``; the default writes ``labels.json`` only."""
        write_labels_json(artifacts_dir, self.name, self.ctx.schemas, self.ctx.class_labels)


def write_labels_json(artifacts_dir: Path, trainer: str, schemas: Sequence[Scheme],
                      labels: Mapping[str, Sequence[str]], extra: Mapping[str, Any] | None = None) -> None:
    """``artifacts/labels.json``: per schema its type and the model's label order (and ``extra``)."""
    data: dict[str, Any] = {"format": 1, "trainer": trainer, "schemas": {}}
    for spec in schemas:
        entry: dict[str, Any] = {
            "annotation_type": spec.annotation_type.value,
            "labels": list(labels.get(spec.name, spec.labels)),
        }
        if extra and spec.name in extra:
            entry.update(extra[spec.name])
        data["schemas"][spec.name] = entry
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    (artifacts_dir / "labels.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                               encoding="utf-8")


def labelled(examples: Sequence[Example], schema: str) -> list[tuple[Example, Label]]:
    """The examples with a target for ``schema``, with that target."""
    return [(ex, ex.targets[schema]) for ex in examples if schema in ex.targets]
