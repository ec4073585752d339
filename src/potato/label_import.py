"""Bring existing labels in: parse a jsonl/csv file or an API body and check every entry.

Checking is pure (config + item ids in, labels and problems out), so the CLI and the labels
API share it and both refuse a whole batch with the same per-line messages.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Container, Iterable

from potato.config._checks import did_you_mean
from potato.config.schema import CHOICE_TYPES, NUMERIC_TYPES, Config, SchemeType
from potato.errors import DataError, LabelImportError
from potato.items import csv_rows, read_utf8
from potato.labels import Label, LabelSource


@dataclass(frozen=True)
class Entry:
    """One raw entry and where it came from (``file:line`` or ``labels[i]``)."""

    where: str
    data: Any
    from_csv: bool = False


@dataclass
class CheckedBatch:
    labels: list[Label]
    problems: list[str]


def read_entries(path: Path) -> list[Entry]:
    """Entries of a ``.jsonl`` (one object per line) or ``.csv`` (columns id, schema, label) file."""
    try:
        text = read_utf8(path, "Check the path.", what="labels file")
        entries: list[Entry] = []
        if path.suffix.lower() == ".csv":
            header = next(csv.reader(io.StringIO(text, newline="")), [])
            missing = {"id", "schema", "label"} - set(header)
            if missing:
                raise LabelImportError(
                    [f"{path}:1: the header lacks column(s) {', '.join(sorted(missing))}; it needs id, schema, label"]
                )
            for lineno, row in csv_rows(path, text, ","):
                entries.append(Entry(f"{path}:{lineno}", dict(row), from_csv=True))
            return entries
    except DataError as exc:
        raise LabelImportError([str(exc)]) from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            data = _Unparsable(exc.msg)
        entries.append(Entry(f"{path}:{lineno}", data))
    return entries


@dataclass(frozen=True)
class _Unparsable:
    reason: str


def _csv_value(kind: SchemeType, raw: str) -> Any:
    """CSV cells are text: a multiselect cell holds a JSON list or labels separated by '|', a slider
    or number cell a number."""
    if kind in NUMERIC_TYPES:
        try:
            number = float(raw)
        except ValueError:
            return raw
        return int(number) if number.is_integer() else number
    if kind is not SchemeType.MULTISELECT:
        return raw
    raw = raw.strip()
    if raw.startswith("["):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return [part.strip() for part in raw.split("|") if part.strip()]


def check_entry(config: Config, item_ids: Container[str], entry: Entry) -> tuple[tuple[str, str, Any] | None, str | None]:
    """(item id, schema, value) for a good entry, else a problem text that says what is valid."""
    data = entry.data
    if isinstance(data, _Unparsable):
        return None, f"{entry.where}: not valid JSON ({data.reason}); each line must be one JSON object"
    if not isinstance(data, dict):
        return None, f"{entry.where}: expected an object with id, schema and label"
    missing = [key for key in ("id", "schema", "label") if key not in data]
    if missing:
        return None, f"{entry.where}: missing {', '.join(missing)}; each entry needs id, schema and label"
    item_id = data["id"]
    if isinstance(item_id, (int, float)) and not isinstance(item_id, bool):
        item_id = str(item_id)
    if not isinstance(item_id, str) or item_id not in item_ids:
        return None, f"{entry.where}: unknown item id {data['id']!r}; use an id from the project's data files"
    scheme = config.scheme(str(data["schema"]))
    if scheme is None:
        valid = ", ".join(s.name for s in config.annotation_schemes)
        near = did_you_mean(str(data["schema"]), [s.name for s in config.annotation_schemes])
        return None, f"{entry.where}: unknown schema {data['schema']!r}{near}; valid schemas: {valid}"
    value = data["label"]
    if entry.from_csv and isinstance(value, str):
        value = _csv_value(scheme.annotation_type, value)
    if not scheme.accepts(value):
        if scheme.annotation_type in CHOICE_TYPES:
            want = f"one of: {', '.join(scheme.labels)}"
        elif scheme.annotation_type is SchemeType.MULTISELECT:
            want = f"a list of distinct labels from: {', '.join(scheme.labels)}"
        elif scheme.annotation_type in NUMERIC_TYPES:
            want = scheme.valid_answers()
        else:
            want = "a string"
        return None, f"{entry.where}: {value!r} is not a valid label for '{scheme.name}'; expected {want}"
    return (item_id, scheme.name, value), None


@dataclass(frozen=True)
class Changes:
    """What an import does to the labels already stored: said after every import, so a second run
    of the same file reads "0 new, 0 changed, N unchanged" instead of "Imported N" again."""

    new: int
    changed: int
    unchanged: int

    def text(self) -> str:
        return f"{self.new} new, {self.changed} changed, {self.unchanged} unchanged"


def compare(stored: Iterable[Label], incoming: Iterable[Label]) -> Changes:
    have = {(lab.user, lab.item_id, lab.schema): lab.value for lab in stored}
    new = changed = unchanged = 0
    for lab in incoming:
        key = (lab.user, lab.item_id, lab.schema)
        if key not in have:
            new += 1
        elif have[key] == lab.value:
            unchanged += 1
        else:
            changed += 1
    return Changes(new, changed, unchanged)


def check_entries(config: Config, item_ids: Container[str], entries: Iterable[Entry], user: str, source: LabelSource = LabelSource.IMPORT) -> CheckedBatch:
    """Check every entry; later entries for the same (item, schema) win, as if clicked in order."""
    batch = CheckedBatch(labels=[], problems=[])
    latest: dict = {}
    for entry in entries:
        good, problem = check_entry(config, item_ids, entry)
        if problem is not None:
            batch.problems.append(problem)
        elif good is not None:
            item_id, schema, value = good
            latest[(item_id, schema)] = Label(user=user, item_id=item_id, schema=schema, value=value, source=source)
    batch.labels = list(latest.values())
    return batch
