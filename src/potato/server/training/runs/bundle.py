"""The run bundle: everything a worker needs, as one tar.gz with a recorded sha256.

The same file goes to every place a run can execute (extracted locally, downloaded by an
agent), so what trained is exactly what the bundle says. The holdout split is decided here, on
the server, so a score means the same thing wherever the run executed.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from potato.config.schema import Config
from potato.items import Item, ItemSet, shown_text
from potato.labels import Label
from potato.training.job.private import open_private, private_dir
from potato.training.job.failures import BadJob
from potato.training.job.spec import FIELDS_FORMAT, JOB_FORMAT, LabelRow, parse_label_row
from potato.server.training.runs.stepitems import StepQuestions
from potato.training.job.schemes import Scheme, SchemeType
from potato.training.job.spans import MAIN
from potato.training.job.tracesteps import split_step_id

MIN_ITEMS_FOR_HOLDOUT = 5


def holdout_ids(labelled_ids: Iterable[str], fraction: float, seed: int) -> list[str]:
    """A deterministic share of the labelled items: same labels and seed, same split (pure)."""
    ranked = sorted(set(labelled_ids), key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())
    if len(ranked) < MIN_ITEMS_FOR_HOLDOUT:
        return []  # too few to both train and score: everything trains, the run reports no score
    count = min(max(1, int(round(len(ranked) * fraction))), len(ranked) - 2)
    return sorted(ranked[:count])


@dataclass(frozen=True)
class BundleInfo:
    path: Path
    sha256: str
    size: int
    n_items: int
    n_labels: int
    n_holdout: int
    n_labelled_items: int
    """Items with at least one label."""
    n_annotators: int
    """Annotators whose labels it holds."""


def job_spec(config: Config, run_id: str, trainer: str, schemas: Sequence[str], params: Mapping[str, Any],
             seed: int = 0, local: bool = True) -> dict[str, Any]:
    """``job.json``. The device, thread and memory settings are the local backend's; a run elsewhere
    takes what its machine offers (``device: auto``)."""
    mt = config.model_training
    schemes = [scheme_json(s) for s in job_schemes(config, schemas)]
    return {
        "format": FIELDS_FORMAT if any("fields" in s for s in schemes) else JOB_FORMAT,
        "run_id": run_id,
        "trainer": trainer,
        "schemes": schemes,
        "params": dict(params),
        "device": mt.local.device if local else "auto",
        "grace_seconds": mt.grace_seconds,
        "num_threads": mt.local.num_threads if local else None,
        "max_ram_mb": mt.local.max_ram_mb if local else None,
        "seed": seed,
    }


def job_schemes(config: Config, schemas: Sequence[str]) -> list[Scheme]:
    """The config's schemes named ``schemas``, in that order, as a job carries them: what a trainer
    needs and nothing of the page. A likert or select answer is one label of a list: the worker
    learns it as a radio scheme."""
    by_name = {s.name: s for s in config.annotation_schemes}
    return [Scheme(SchemeType(s.training_type or s.annotation_type.value), s.name, s.description, s.labels,
                   span_fields=s.span_fields, per_step=s.learnt_by_step, wrong_labels=s.step_mistakes)
            for s in (by_name[name] for name in schemas if name in by_name)]


def scheme_json(scheme: Scheme) -> dict[str, Any]:
    """One entry of ``job.json``'s ``schemes``; a span scheme that marks fields besides the item's
    text (or instead of it) names them (``fields``, ``""`` the item's text); a question learnt step
    by step says so (``per_step``) with the answers that mark a mistake (``mistakes``)."""
    return {"name": scheme.name, "annotation_type": scheme.annotation_type.value, "labels": list(scheme.labels),
            **({"description": scheme.description} if scheme.description else {}),
            **({"fields": list(scheme.span_fields)} if scheme.spans and scheme.span_fields != (MAIN,) else {}),
            **({"per_step": True, "mistakes": list(scheme.wrong_labels)} if scheme.per_step else {})}


def item_row(item: Item, texts: Mapping[str, str], pairs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One line of ``items.jsonl``: the id, the text, the other texts spans mark, by field, and the
    options a pairwise question compares (:func:`compared`), by question."""
    more = {name: text for name, text in texts.items() if name != MAIN}
    return {"id": item.id, "text": item.text, **({"texts": more} if more else {}), **({"pairs": pairs} if pairs else {})}


def compared(config: Config, schemas: Sequence[str]) -> Callable[[Item], dict[str, Any]]:
    """For the pairwise questions among ``schemas``, what a preference model reads of an item: per
    question, the prompt the two options answer (the item's ``prompt``, as upstream's examples keep
    it, else its text where the options are elsewhere) and the two options' texts, A's first."""
    text_key = config.item_properties.text_key
    schemes = [s for s in config.annotation_schemes if s.name in schemas and s.training_type == SchemeType.PAIRWISE.value]

    def pairs(item: Item) -> dict[str, Any]:
        out = {}
        for scheme in schemes:
            options = item.data.get(scheme.items_key)
            if not isinstance(options, list) or len(options) < 2:
                continue
            prompt = item.data.get("prompt")
            if not isinstance(prompt, str):
                prompt = item.text if scheme.items_key != text_key else ""
            out[scheme.name] = {"prompt": prompt, "options": [shown_text(option) for option in options[:2]]}
        return out

    return pairs


def label_rows(schemas: Iterable[str], items: ItemSet, labels: Iterable[Label],
               steps: StepQuestions | None = None) -> list[dict[str, Any]]:
    """``labels.jsonl``'s rows: every annotator's answer on ``schemas``, for items in the item set; a
    question ``steps`` learns step by step gives a row per answered step, on the step's item."""
    wanted = set(schemas)
    out: list[dict[str, Any]] = []
    for lab in labels:
        if lab.schema not in wanted or lab.item_id not in items:
            continue
        if steps is not None and lab.schema in steps.names:
            out.extend(steps.label_rows(lab.item_id, lab.schema, lab.value, lab.user))
        else:
            out.append({"item_id": lab.item_id, "schema": lab.schema, "label": lab.value, "user": lab.user})
    return out


def training_answers(specs: Sequence[Scheme], rows: Iterable[Mapping[str, Any]]) -> list[LabelRow]:
    """``rows`` as the worker reads them (its own parser). :func:`potato.training.job.labels.aggregate`
    over these is what a run trains on, so the training page counts with the worker's rule. A row the
    worker would refuse (bad_job) is left out here: the page counts, the run reports it."""
    by_name = {spec.name: spec for spec in specs}
    out = []
    for number, row in enumerate(rows, 1):
        try:
            parsed = parse_label_row(dict(row), number, by_name)
        except BadJob:
            continue
        if parsed is not None:
            out.append(parsed)
    return out


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = 0  # reproducible bundles: same content, same sha256
    tar.addfile(info, io.BytesIO(data))


def _jsonl(rows: Iterable[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def split_by_trace(rows: Sequence[Mapping[str, Any]], fraction: float, seed: int) -> list[str]:
    """The holdout: a share of the labelled items, a step's item going with its trace (pure). A trace
    is held out whole, so no step of it is trained on and it is scored as a trace; its steps' items
    are listed beside it."""
    traces = {str(row["item_id"]): (split_step_id(str(row["item_id"])) or (str(row["item_id"]),))[0] for row in rows}
    held = set(holdout_ids(traces.values(), fraction, seed))
    return sorted(held | {item_id for item_id, trace in traces.items() if trace in held})


def build_bundle(dest: Path, job: Mapping[str, Any], items: ItemSet, labels: Sequence[Label],
                 holdout_fraction: float, span_texts: Callable[[Item], Mapping[str, str]] = lambda item: {},
                 steps: StepQuestions | None = None,
                 pairs: Callable[[Item], Mapping[str, Any]] = lambda item: {}) -> BundleInfo:
    """Write ``dest`` (bundle.tar.gz) atomically and return its sha256 and counts. It holds every item
    (with the texts ``span_texts`` gives it, by field, and the options ``pairs`` says a pairwise
    question compares), each asked step of a question ``steps`` learns step by step as an item of
    its own, and every label with its annotator's name: 0600, whatever the umask."""
    rows = label_rows([scheme["name"] for scheme in job["schemes"]], items, labels, steps)
    holdout = split_by_trace(rows, holdout_fraction, int(job.get("seed", 0)))
    private_dir(dest.parent)
    tmp = dest.with_suffix(".tmp")
    with open_private(tmp, "wb") as raw, tarfile.open(tmp, "w:gz", raw, compresslevel=6) as tar:
        _add_bytes(tar, "job.json", json.dumps(job, indent=1).encode("utf-8"))
        _add_bytes(tar, "items.jsonl", _jsonl(row for item in items for row in (
            item_row(item, span_texts(item), pairs(item)), *(steps.item_rows(item) if steps else ()))))
        _add_bytes(tar, "labels.jsonl", _jsonl(rows))
        _add_bytes(tar, "split.json", json.dumps({"holdout": holdout}).encode("utf-8"))
    digest = hashlib.sha256()
    with tmp.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    tmp.replace(dest)
    def trace(item_id: str) -> str:  # a step's labels count for its trace
        return (split_step_id(item_id) or (item_id,))[0]

    return BundleInfo(dest, digest.hexdigest(), dest.stat().st_size, len(items), len(rows),
                      len({trace(i) for i in holdout}), len({trace(row["item_id"]) for row in rows}),
                      len({row["user"] for row in rows}))
