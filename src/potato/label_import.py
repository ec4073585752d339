"""Bring existing labels in: parse a jsonl/csv/tsv file or an API body and check every entry.

Checking is pure (config + items in, labels and problems out), so the CLI and the labels
API share it and both refuse a whole batch with the same per-line messages. A file holds our
entries (``id``, ``schema``, ``label``, as ``potato export`` writes them) or upstream Potato's export
(one record per annotator and item, as its jsonl/csv/tsv exporter writes them), told apart by their
keys. Spans are checked against the item's text and stored as the annotation page stores them.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from potato import upstream_export
from potato.errors import did_you_mean
from potato.config.schema import Config
from potato.item_answers import MISFITS, on_item, stored_on_item
from potato.training.job.schemes import CHOICE_TYPES, Scheme, SchemeType
from potato.errors import DataError, LabelImportError
from potato.items import ItemSet, csv_rows, read_utf8
from potato.labels import Label, LabelSource
from potato.training.job.spans import Texts, texts_of
from potato.training.job.turns import BadTurns


@dataclass(frozen=True)
class Entry:
    """One raw entry and where it came from (``file:line`` or ``labels[i]``)."""

    where: str
    data: Any
    from_csv: bool = False
    """Its values are text (a csv cell, or upstream's export): numbers and lists are read from it."""


@dataclass
class CheckedBatch:
    labels: list[Label]
    problems: list[str]


def read_entries(path: Path) -> list[Entry]:
    """Entries of a ``.jsonl`` (one object per line) or ``.csv`` / ``.tsv`` file (columns id, schema,
    label; or upstream's instance_id, user_id and a ``scheme.label_name`` column per answer)."""
    try:
        text = read_utf8(path, "Check the path.", what="labels file")
        entries: list[Entry] = []
        if path.suffix.lower() in (".csv", ".tsv"):
            delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
            header = next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), [])
            missing = {"id", "schema", "label"} - set(header)
            if missing and "instance_id" not in header:
                raise LabelImportError(
                    [f"{path}:1: the header lacks column(s) {', '.join(sorted(missing))}; it needs id, schema, label "
                     "(or instance_id, user_id and scheme.label columns, as upstream Potato exports them)"]
                )
            for lineno, row in csv_rows(path, text, delimiter):
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


JSON_CELLS = (SchemeType.SOFT_LABEL, SchemeType.CONSTANT_SUM, SchemeType.FAILURE_ATTRIBUTION, SchemeType.TEXT_EDIT,
              SchemeType.TRAJECTORY_EDIT, SchemeType.TOOL_CALL_REVIEW, SchemeType.HANDOFF_REVIEW,
              SchemeType.MULTIMODAL_REASONING, SchemeType.GUI_TRAJECTORY, SchemeType.SPEECH_TRANSCRIPT,
              SchemeType.AGENT_SCORECARD, SchemeType.EMERGENT_BEHAVIOR, SchemeType.TOOL_CONTENTION,
              SchemeType.VOICE_INTERACTION, SchemeType.AGENT_INTERACTION_GRAPH, SchemeType.TABLE_GRID, SchemeType.CARD_SORT,
              SchemeType.EXTRACTIVE_QA, SchemeType.CONJOINT, SchemeType.SPAN_LINK,
              SchemeType.RANGE_SLIDER)
"""The kinds of answer a csv cell holds as JSON text (an object or a list)."""


def _csv_value(scheme: Scheme, raw: str) -> Any:
    """CSV cells are text: a multiselect cell holds a JSON list or labels separated by '|', a slider,
    number or pairwise scale cell a number, an answer row by row a JSON object."""
    kind = scheme.annotation_type
    if scheme.by_rows or kind in JSON_CELLS:
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    if scheme.numeric:
        try:
            number = float(raw)
        except ValueError:
            return raw
        return int(number) if number.is_integer() else number
    if kind is SchemeType.SPAN:  # spans as JSON text, as the upstream layout's _spans column holds them
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    if kind not in (SchemeType.MULTISELECT, SchemeType.HIERARCHICAL_MULTISELECT, SchemeType.RANKING):
        return raw
    raw = raw.strip()
    if raw.startswith("["):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return [part.strip() for part in raw.split("|") if part.strip()]


def stored_spans(value: list[Any], texts: str | Texts, scheme: Scheme) -> list[dict[str, Any]]:
    """Checked spans as they are stored: by position, each with the text it covers (and its field,
    on a field other than the item's text). The annotation page's answers and imported labels both
    store this, so an import of an export stores the same value."""
    by_field = texts_of(texts)
    return [span.to_json(by_field[span.field]) for span in scheme.check_spans(value, by_field)]


def span_texts_by_id(config: Config, items: ItemSet) -> Mapping[str, str | Texts]:
    """Each item's texts that spans mark, by id: its text alone where spans mark nothing else."""
    if not config.span_fields:
        return items.texts()
    return {item.id: config.span_texts(item) for item in items}


def _span_problem(where: str, item_id: str, scheme: Scheme, value: Any, problem: str) -> str:
    """A refused span answer: the line, the item, the span (its number and itself) and the fix."""
    number = re.match(r"span (\d+)", problem)
    if number and isinstance(value, list) and int(number[1]) <= len(value):
        shown = json.dumps(value[int(number[1]) - 1], ensure_ascii=False)
        problem = f"span {number[1]} {shown}{problem[len(number[0]):]}"
    return (f"{where}: the spans of '{scheme.name}' on item {item_id!r}: {problem}; fix that span or leave it out "
            "(start and end count characters of the item's text from 0, end exclusive; labels: "
            f"{', '.join(scheme.labels)})")


def check_entry(config: Config, texts: Mapping[str, str | Texts | None],
                entry: Entry, items: ItemSet | None = None) -> tuple[tuple[str, str, Any] | None, str | None]:
    """(item id, schema, value) for a good entry, else a problem text that says what is valid.
    ``texts``: each known item's id and its text (or texts by field, as ``Config.span_texts`` gives
    them), which spans are checked against (None where only the ids are known; spans are then refused);
    ``items``: the items themselves, whose turns a turn-level answer is checked against (None: refused)."""
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
    if not isinstance(item_id, str) or item_id not in texts:
        return None, f"{entry.where}: unknown item id {data['id']!r}; use an id from the project's data files"
    scheme = config.scheme(str(data["schema"]))
    if scheme is None:
        valid = ", ".join(s.name for s in config.annotation_schemes)
        near = did_you_mean(str(data["schema"]), [s.name for s in config.annotation_schemes])
        return None, f"{entry.where}: unknown schema {data['schema']!r}{near}; valid schemas: {valid}"
    value = data["label"]
    if scheme.turns is not None:
        return _turn_entry(config, entry.where, item_id, scheme, value, items)
    if entry.from_csv and isinstance(value, str):
        value = _csv_value(scheme, value)
    if on_item(scheme):
        return _item_entry(config, entry.where, item_id, scheme, value, items)
    if scheme.annotation_type is SchemeType.SPAN:
        text = texts[item_id]
        if text is None:
            return None, f"{entry.where}: the text of item {item_id!r} is unknown here, so its spans cannot be checked"
        problem = scheme.span_problem(value, text)
        if problem:
            return None, _span_problem(entry.where, item_id, scheme, value, problem)
        return (item_id, scheme.name, stored_spans(value, text, scheme)), None
    if not scheme.accepts(value):
        if scheme.annotation_type in CHOICE_TYPES:
            want = f"one of: {', '.join(scheme.labels)}"
        elif scheme.annotation_type is SchemeType.MULTISELECT:
            want = f"a list of distinct labels from: {', '.join(scheme.labels)}"
        elif (scheme.numeric or scheme.pairwise_mode or scheme.by_rows
              or scheme.annotation_type in (SchemeType.SOFT_LABEL, SchemeType.RANKING, SchemeType.CONSTANT_SUM)):
            want = scheme.valid_answers()
        else:
            want = "a string"
        return None, f"{entry.where}: {value!r} is not a valid label for '{scheme.name}'; expected {want}"
    return (item_id, scheme.name, value), None


def _turn_entry(config: Config, where: str, item_id: str, scheme: Scheme, value: Any,
                items: ItemSet | None) -> tuple[tuple[str, str, Any] | None, str | None]:
    """A turn-level answer checked against the item's turns and stored with each turn's place and text."""
    if items is None or item_id not in items:
        return None, f"{where}: the turns of item {item_id!r} are unknown here, so its answers to '{scheme.name}' cannot be checked"
    assert scheme.turns is not None
    if isinstance(value, str):  # a csv cell holds the answers as JSON text
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            pass
    try:
        kept = scheme.stored_turns(value, config.item_turns(items.get(item_id)).get(scheme.turns.source, []))
    except BadTurns as bad:
        return None, f"{where}: '{scheme.name}' on item {item_id!r}: {bad}"
    if not kept:
        return None, f"{where}: '{scheme.name}' on item {item_id!r} answers no turn; leave the entry out"
    return (item_id, scheme.name, kept), None


def _item_entry(config: Config, where: str, item_id: str, scheme: Scheme, value: Any,
                items: ItemSet | None) -> tuple[tuple[str, str, Any] | None, str | None]:
    """An answer that names what its item holds (a failure attribution, an edit, a review), checked
    against the item and stored as the annotation page stores it."""
    if items is None or item_id not in items:
        return None, f"{where}: item {item_id!r} is unknown here, so its answer to '{scheme.name}' cannot be checked"
    if not scheme.accepts(value):
        return None, f"{where}: {value!r} is not a valid label for '{scheme.name}'; expected {scheme.valid_answers()}"[:400]
    try:
        kept = stored_on_item(config, scheme, value, items.get(item_id))
    except MISFITS as bad:
        return None, f"{where}: '{scheme.name}' on item {item_id!r}: {bad}"
    if kept is None:
        return None, f"{where}: '{scheme.name}' on item {item_id!r} answers nothing; leave the entry out"
    return (item_id, scheme.name, kept), None


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


def expand(config: Config, entry: Entry) -> tuple[list[Entry], list[str]]:
    """An entry as our entries: itself, or one per answer of an upstream record (on the record's
    line, values as text); and the problems with the record's layout (pure)."""
    if not upstream_export.is_record(entry.data):
        return [entry], []
    record, problems = (upstream_export.record_from_row(config, entry.data) if entry.from_csv
                        else (entry.data, []))
    answers, more = upstream_export.answers_from_record(config, record)
    entries = [Entry(entry.where, {"id": record["instance_id"], "schema": schema, "label": value}, from_csv=True)
               for schema, value in answers]
    return entries, [f"{entry.where}: {problem}" for problem in problems + more]


def check_entries(config: Config, texts: Mapping[str, str | Texts | None], entries: Iterable[Entry], user: str,
                  source: LabelSource = LabelSource.IMPORT, items: ItemSet | None = None) -> CheckedBatch:
    """Check every entry against the items in ``texts`` (id -> texts by field, as ``span_texts_by_id``
    gives);
    later entries for the same (item, schema) win, as if clicked in order."""
    batch = CheckedBatch(labels=[], problems=[])
    latest: dict = {}
    for raw in entries:
        ours, problems = expand(config, raw)
        batch.problems.extend(problems)
        for entry in ours:
            good, problem = check_entry(config, texts, entry, items)
            if problem is not None:
                if problem not in batch.problems:  # an upstream record's unknown item, said once for its line
                    batch.problems.append(problem)
            elif good is not None:
                item_id, schema, value = good
                latest[(item_id, schema)] = Label(user=user, item_id=item_id, schema=schema, value=value,
                                                  source=source)
    batch.labels = list(latest.values())
    return batch
