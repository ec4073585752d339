"""Reading the run that ``decision-calibrate`` calibrates: its predictions and what its model trained on.

Separate from the trainer because it is the file side: it parses the source run folder on the
server (``predictions.jsonl`` and the ``bundle.tar.gz`` beside it) into a :class:`SourceRun`, and
turns every unreadable or unsuitable source into a :class:`BadJob` naming the fix. The trainer
(:mod:`potato.training.trainers.decision_calibrate`) only decides what to fit on.

Remote-safe: standard library only, Python 3.8.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Tuple

from potato.training.job.failures import BadJob
from potato.training.job.spec import JOB_FILE, LABELS_FILE, SPLIT_FILE, JobSpec, parse_job, parse_label_row
from potato.training.job.results import Label

TRAINER_NAME = "decision-calibrate"
"""The calibrating trainer's registry name: a source run of that trainer is refused."""
SOURCE_BUNDLE = "bundle.tar.gz"
"""The source run's bundle, in its run folder beside its predictions.jsonl (written by the server)."""


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


@dataclass(frozen=True)
class SourceRun:
    """The run being calibrated: its predictions, its job and the items its model trained on."""

    predictions: Dict[Tuple[str, str], Tuple[Label, float]]
    job: JobSpec
    trained_on: FrozenSet[str]
    """Item ids the source model was fitted on: its bundle's labelled items outside its holdout."""
    folder: Path


def read_source_run(predictions_path: Path) -> SourceRun:
    """The source run from its folder: ``predictions.jsonl`` and ``bundle.tar.gz``; BadJob if either
    is missing or unreadable, or if the source is itself a decision-calibrate run."""
    predictions = read_source(predictions_path)
    folder = predictions_path.parent
    bundle = folder / SOURCE_BUNDLE
    if not bundle.is_file():
        raise BadJob(f"decision-calibrate: the source run folder {folder} has no {SOURCE_BUNDLE}, so which items "
                     "its model trained on is unknown, and calibrating on those would make the confidences "
                     "overconfident; train the source again and calibrate the new run")
    files = _bundle_files(bundle)
    try:
        job = parse_job(json.loads(files[JOB_FILE]))
        split = json.loads(files[SPLIT_FILE])
    except (ValueError, BadJob) as exc:
        raise BadJob(f"decision-calibrate: {bundle} holds no valid job ({exc})") from None
    if job.trainer == TRAINER_NAME:
        source = job.params.get("source_predictions")
        earlier = Path(source).parent.name if isinstance(source, str) else "<the run it calibrated>"
        raise BadJob(f"decision-calibrate: run {folder.name} is itself a decision-calibrate run; calibrate the run "
                     f"it calibrated instead (source_run: {earlier})")
    holdout = split.get("holdout") if isinstance(split, dict) else None
    if not isinstance(holdout, list):
        raise BadJob(f"decision-calibrate: {bundle} has no valid {SPLIT_FILE}")
    schemas = {spec.name: spec for spec in job.schemas}
    labelled = set()
    for number, line in enumerate(files[LABELS_FILE].splitlines(), 1):
        if line.strip():
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise BadJob(f"decision-calibrate: {bundle} {LABELS_FILE} line {number} is not JSON ({exc})") from None
            row = parse_label_row(obj, number, schemas) if isinstance(obj, dict) else None
            if row is not None:
                labelled.add(row.item_id)
    trained_on = frozenset(labelled - {str(i) for i in holdout})
    return SourceRun(predictions, job, trained_on, folder)


def _bundle_files(bundle: Path) -> dict[str, str]:
    """job.json, labels.jsonl and split.json of a bundle, read from the archive (nothing extracted)."""
    out = {}
    try:
        with tarfile.open(str(bundle), "r:gz") as tar:
            for name in (JOB_FILE, LABELS_FILE, SPLIT_FILE):
                member = tar.extractfile(tar.getmember(name))
                if member is None:
                    raise KeyError(name)
                out[name] = member.read().decode("utf-8")
    except (OSError, tarfile.TarError, KeyError, UnicodeDecodeError, EOFError) as exc:
        raise BadJob(f"decision-calibrate: the source run's bundle {bundle} cannot be read ({exc}); train the "
                     "source again and calibrate the new run") from None
    return out
