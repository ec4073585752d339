"""The bundle a worker reads: ``job.json``, ``items.jsonl``, ``labels.jsonl``, ``split.json``.

Remote-safe: standard library only, Python 3.8. Parsing is pure (``parse_*`` take decoded
JSON); ``read_*`` add the file access. Every problem becomes :class:`BadJob` naming the file,
the line and what is wrong, so a bundle that a newer or broken server wrote fails with
exit code 2 instead of a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from potato import defaults
from potato.training.gpus.devices import DEVICE_CHOICES, is_valid_device
from potato.training.job.failures import BadJob
from potato.training.job.results import Label
from potato.training.job.schemes import TRAINABLE, Scheme, SchemeType
from potato.training.job.spans import MAIN, Span, by_position

JOB_FORMAT = 1
"""The ``format`` of ``job.json`` a server writes for a job whose spans lie in the item's text alone."""
FIELDS_FORMAT = 2
"""The ``format`` of a job whose span schemes mark other fields (``fields``, items' ``texts``): a
worker from before fields existed refuses it, rather than train those spans on the item's text."""
JOB_FORMATS = (JOB_FORMAT, FIELDS_FORMAT)
"""The formats this worker reads."""

JOB_FILE = "job.json"
ITEMS_FILE = "items.jsonl"
LABELS_FILE = "labels.jsonl"
SPLIT_FILE = "split.json"
MEDIA_DIR = "media"


@dataclass(frozen=True)
class JobSpec:
    """``job.json``: which trainer, on which schemas, with which parameters and limits."""

    run_id: str
    trainer: str
    schemas: tuple[Scheme, ...]
    params: dict[str, Any] = field(default_factory=dict)
    device: str = "auto"
    grace_seconds: int = defaults.GRACE_SECONDS
    num_threads: int | None = None
    max_ram_mb: int | None = None
    seed: int = 0
    cpu_processes: int = 1
    """On the CPU, how many processes train data-parallel (gloo); GPUs: one process per visible GPU."""

    @property
    def schema_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.schemas)


@dataclass(frozen=True)
class JobItem:
    """One item to train on and predict: its id, its text, and any other fields (media paths)."""

    id: str
    text: str
    fields: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    """The other texts spans mark, by field (a premise's hypothesis, a dialogue)."""

    @property
    def span_texts(self) -> dict[str, str]:
        """Every text spans may mark, by field: ``""`` is the item's own."""
        return {MAIN: self.text, **self.texts}


@dataclass(frozen=True)
class LabelRow:
    """One annotator's answer for one item and schema, as ``labels.jsonl`` has it."""

    item_id: str
    schema: str
    label: Label
    user: str


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_positive_int(data: dict[str, Any], key: str, problems: list[str]) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not _is_int(value) or value < 1:
        problems.append(f"{key} must be a positive integer or null, not {value!r}")
        return None
    return int(value)


def _parse_schemes(data: dict[str, Any], problems: list[str]) -> tuple[Scheme, ...]:
    """The trained schemes, in the run's order: ``schemes`` alone, or, from a server before the two
    keys became one, ``schemas`` (the names, in the run's order) picking from ``schemes``."""
    schemes = data.get("schemes")
    if not isinstance(schemes, list) or not schemes:
        problems.append("schemes must be a non-empty list of {name, annotation_type, labels} objects")
        return ()
    by_name: dict[str, Scheme] = {}
    order: list[str] = []
    for i, raw in enumerate(schemes):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            problems.append(f"schemes[{i}] must be an object with a name")
            continue
        kind = raw.get("annotation_type")
        try:
            annotation_type = SchemeType(kind)
        except ValueError:
            problems.append("schemes[{}] ({}) has annotation_type {!r}; valid types are: {}".format(
                i, raw["name"], kind, ", ".join(t.value for t in SchemeType)))
            continue
        labels = raw.get("labels") or []
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            problems.append("schemes[{}] ({}) labels must be a list of strings".format(i, raw["name"]))
            continue
        description = raw.get("description")
        fields = raw.get("fields", [MAIN])
        if not isinstance(fields, list) or not fields or not all(isinstance(x, str) for x in fields):
            problems.append("schemes[{}] ({}) fields must be a non-empty list of field names".format(i, raw["name"]))
            continue
        per_step = raw.get("per_step", False)
        mistakes = raw.get("mistakes", [])
        if not isinstance(per_step, bool) or not isinstance(mistakes, list) or not all(
                isinstance(x, str) for x in mistakes):
            problems.append("schemes[{}] ({}) per_step must be true or false and mistakes a list of labels".format(
                i, raw["name"]))
            continue
        by_name[raw["name"]] = Scheme(annotation_type, raw["name"],
                                      description if isinstance(description, str) else "", tuple(labels),
                                      span_fields=tuple(fields), per_step=per_step, wrong_labels=tuple(mistakes))
        order.append(raw["name"])
    names = data.get("schemas", order)  # an older server's job.json names them apart
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        problems.append("schemas must be a non-empty list of schema names")
        return ()
    out = []
    for name in names:
        spec = by_name.get(name)
        if spec is None:
            problems.append(f"schema {name!r} is in schemas but not in schemes")
        elif spec.annotation_type not in TRAINABLE:
            problems.append(f"schema {name!r} is a {spec.annotation_type.value} scheme; trainers predict radio, "
                            "multiselect, span and pairwise schemes only")
        else:
            out.append(spec)
    if len(set(names)) != len(names):
        problems.append("schemas names a schema twice: {}".format(", ".join(names)))
    return tuple(out)


def parse_job(data: Any) -> JobSpec:
    """A :class:`JobSpec` from decoded ``job.json`` (pure); :class:`BadJob` lists every problem."""
    if not isinstance(data, dict):
        raise BadJob(f"job.json must hold a JSON object, not {type(data).__name__}")
    fmt = data.get("format")
    if fmt not in JOB_FORMATS:
        raise BadJob(f"job.json has format {fmt!r}, but this worker reads formats {', '.join(map(str, JOB_FORMATS))}; "
                     "run the same Potato version on the server and where the worker runs")
    problems: list[str] = []
    for key in ("run_id", "trainer"):
        if not isinstance(data.get(key), str) or not data.get(key):
            problems.append(f"{key} must be a non-empty string")
    schemas = _parse_schemes(data, problems)
    params = data.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        problems.append(f"params must be an object, not {params!r}")
    device = data.get("device", "auto")
    if not isinstance(device, str) or not is_valid_device(device.strip().lower()):
        problems.append(f"device must be {DEVICE_CHOICES}, not {device!r}")
    grace = data.get("grace_seconds")
    if grace is None:
        grace = defaults.GRACE_SECONDS
    if not _is_int(grace) or grace < 0:
        problems.append(f"grace_seconds must be a non-negative integer, not {grace!r}")
    seed = data.get("seed", 0)
    if not _is_int(seed):
        problems.append(f"seed must be an integer, not {seed!r}")
    num_threads = _optional_positive_int(data, "num_threads", problems)
    max_ram_mb = _optional_positive_int(data, "max_ram_mb", problems)
    cpu_processes = _optional_positive_int(data, "cpu_processes", problems) or 1
    if problems:
        raise BadJob("job.json is not a valid job:\n" + "\n".join("  - " + p for p in problems))
    return JobSpec(
        run_id=data["run_id"], trainer=data["trainer"], schemas=schemas, params=dict(params),
        device=str(device).strip().lower(), grace_seconds=int(grace), num_threads=num_threads,
        max_ram_mb=max_ram_mb, seed=int(seed), cpu_processes=cpu_processes,
    )


def read_job(bundle_dir: Path) -> JobSpec:
    path = bundle_dir / JOB_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadJob(f"{path} is missing: the bundle was not extracted into {bundle_dir}") from None
    except OSError as exc:
        raise BadJob(f"{path} cannot be read: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BadJob(f"{path} is not valid JSON: {exc}") from None
    return parse_job(data)


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; BadJob names the first bad line."""
    if not path.is_file():
        raise BadJob(f"{path.name} is missing from the bundle")
    with open(str(path), encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise BadJob(f"{path.name} line {number} is not valid JSON: {exc}") from None
            if not isinstance(obj, dict):
                raise BadJob(f"{path.name} line {number} must be a JSON object")
            yield number, obj


def read_items(bundle_dir: Path) -> list[JobItem]:
    """``items.jsonl`` in file order; ids are strings (a numeric id is turned into one)."""
    items: list[JobItem] = []
    seen = set()
    for number, obj in _jsonl(bundle_dir / ITEMS_FILE):
        raw_id = obj.get("id")
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
            raise BadJob(f"{ITEMS_FILE} line {number} has no string id")
        item_id = str(raw_id)
        if item_id in seen:
            raise BadJob(f"{ITEMS_FILE} line {number} repeats item id {item_id!r}")
        seen.add(item_id)
        text = obj.get("text")
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise BadJob(f"{ITEMS_FILE} line {number} (item {item_id!r}) has a text that is not a string")
        texts = obj.get("texts") or {}
        if not isinstance(texts, dict) or not all(isinstance(v, str) for v in texts.values()):
            raise BadJob(f"{ITEMS_FILE} line {number} (item {item_id!r}) has texts that are not an object of strings "
                         "by field")
        extra = {k: v for k, v in obj.items() if k not in ("id", "text", "texts")}
        items.append(JobItem(item_id, text, extra, {str(k): v for k, v in texts.items() if k != MAIN}))
    return items


def parse_label_row(obj: dict[str, Any], number: int, schemas: dict[str, Scheme]) -> LabelRow | None:
    """One ``labels.jsonl`` row (pure); None for a schema the job does not train."""
    schema = obj.get("schema")
    spec = schemas.get(schema) if isinstance(schema, str) else None
    if spec is None:
        return None
    item_id = obj.get("item_id")
    if isinstance(item_id, bool) or not isinstance(item_id, (str, int)):
        raise BadJob(f"{LABELS_FILE} line {number} has no item_id")
    value = obj.get("label")
    label: Label
    if spec.spans:
        label = _span_label(value, number, spec.name)
    elif spec.multiselect:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadJob(f"{LABELS_FILE} line {number}: schema {spec.name!r} is multiselect, so label must be "
                         f"a list of strings, not {value!r}")
        label = tuple(sorted(set(value)))
    else:
        if not isinstance(value, str):
            raise BadJob(f"{LABELS_FILE} line {number}: schema {spec.name!r} is {spec.annotation_type.value}, so "
                         f"label must be a string, not {value!r}")
        label = value
    user = obj.get("user")
    # A row without a user counts as its own annotator (one vote), never merged with another.
    user_id = str(user) if isinstance(user, (str, int)) and not isinstance(user, bool) else f"#line{number}"
    return LabelRow(str(item_id), spec.name, label, user_id)


SPAN_FORM = '{"start": int, "end": int, "label": str, "field": str (optional)}'


def _span_label(value: Any, number: int, schema: str) -> tuple[Span, ...]:
    """A span scheme's label: its spans, by position, each once (their offsets are checked against
    the item's text once items are read)."""
    if not isinstance(value, list):
        raise BadJob(f"{LABELS_FILE} line {number}: schema {schema!r} is a span scheme, so label must be "
                     f"[{SPAN_FORM}, ...], not {value!r}")
    spans = set()
    for raw in value:
        ok = (isinstance(raw, dict) and _is_int(raw.get("start")) and _is_int(raw.get("end"))
              and isinstance(raw.get("label"), str) and 0 <= raw["start"] < raw["end"]
              and isinstance(raw.get("field", MAIN), str))
        if not ok:
            raise BadJob(f"{LABELS_FILE} line {number}: schema {schema!r}: {raw!r} is not a span {SPAN_FORM} "
                         "with 0 <= start < end")
        spans.add(Span(raw["start"], raw["end"], raw["label"], raw.get("field", MAIN)))
    return tuple(sorted(spans, key=by_position))


def read_labels(bundle_dir: Path, job: JobSpec) -> list[LabelRow]:
    """``labels.jsonl`` rows for the job's schemas, in file order."""
    schemas = {s.name: s for s in job.schemas}
    rows = []
    for number, obj in _jsonl(bundle_dir / LABELS_FILE):
        row = parse_label_row(obj, number, schemas)
        if row is not None:
            rows.append(row)
    return rows


def read_holdout(bundle_dir: Path) -> frozenset[str]:
    """``split.json`` ``holdout``: the item ids the server kept out of training."""
    path = bundle_dir / SPLIT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadJob(f"{SPLIT_FILE} is missing from the bundle") from None
    except ValueError as exc:
        raise BadJob(f"{SPLIT_FILE} is not valid JSON: {exc}") from None
    holdout = data.get("holdout") if isinstance(data, dict) else None
    if not isinstance(holdout, list) or not all(isinstance(i, (str, int)) for i in holdout):
        raise BadJob(f"{SPLIT_FILE} must be an object whose holdout is a list of item ids")
    return frozenset(str(i) for i in holdout)
