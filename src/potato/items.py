"""Items to annotate, read from the project's data files (json, jsonl, csv).

Loaded once at start: a bad file stops the server with the file and line to fix, instead of
serving a partial project.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from potato.errors import DataError


@dataclass(frozen=True)
class Item:
    id: str
    text: str
    data: Mapping[str, Any]


class ItemSet:
    """The project's items in file order, with O(1) lookup by id and by position."""

    def __init__(self, items: Sequence[Item]) -> None:
        self._items: tuple[Item, ...] = tuple(items)
        self._index: dict[str, int] = {item.id: i for i, item in enumerate(self._items)}
        self.ids: tuple[str, ...] = tuple(item.id for item in self._items)
        self._texts: dict[str, str] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self._items)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._index

    def at(self, position: int) -> Item:
        return self._items[position]

    def position(self, item_id: str) -> int:
        return self._index[item_id]

    def get(self, item_id: str) -> Item:
        return self._items[self._index[item_id]]

    def texts(self) -> Mapping[str, str]:
        """Each item's id and the text annotators see (what spans index); built once, on first use."""
        if self._texts is None:
            self._texts = {item.id: item.text for item in self._items}
        return self._texts


def _json_lines(path: Path, text: str, hint: str) -> Iterator[tuple[int, Any]]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{lineno}: not valid JSON ({exc.msg}). {hint}") from None


def read_utf8(path: Path, fix_missing: str, what: str = "data file") -> str:
    """A data or labels file's text; DataError with the line of the first byte that is not UTF-8."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: {what} not found. {fix_missing}") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read the {what} ({exc.strerror or exc}).") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise DataError(f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x}). Save the file as UTF-8."
                        ) from None


def csv_rows(path: Path, text: str, delimiter: str) -> Iterator[tuple[int, Any]]:
    """Rows of a csv/tsv file read by the csv module from the text itself, so a quoted field keeps
    its line breaks; each with the line it starts on. An unterminated quote is an error naming the
    line it opens on (it used to swallow every row after it)."""
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    start = 2  # after the header line
    try:
        for row in reader:
            if None in row:
                raise DataError(f"{path}:{start}: this row has more fields than the header line. Quote fields "
                                f"that hold '{delimiter}' (\"like{delimiter} this\").")
            yield start, row
            start = reader.line_num + 1
    except csv.Error as exc:
        if "end of data" in str(exc) or "EOF" in str(exc):
            raise DataError(f"{path}:{start}: a quoted field that starts on this line is never closed. Close the "
                            "quote (a \" inside a field is written \"\").") from None
        raise DataError(f"{path}:{reader.line_num}: not valid {'TSV' if delimiter == chr(9) else 'CSV'} ({exc}).") from None


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield (line number, record) pairs; line numbers are 1-based and point at the record."""
    suffix = path.suffix.lower()
    text = read_utf8(path, "Fix the path under data_files (relative to task_dir).")
    if suffix == ".jsonl":
        yield from _json_lines(path, text, "Each line must be one JSON object.")
    elif suffix == ".json":
        if text.lstrip().startswith("["):
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}).") from None
            for record in data:
                yield 0, record
        else:
            # The released Potato accepts "json" files with one object per line; so do we.
            yield from _json_lines(path, text, "Use a JSON list of objects or one JSON object per line.")
    elif suffix in (".csv", ".tsv"):
        yield from csv_rows(path, text, "\t" if suffix == ".tsv" else ",")
    else:
        raise DataError(f"{path}: unsupported data file type '{suffix}'. Use .json, .jsonl, .csv or .tsv.")


def is_unicode_text(value: str) -> bool:
    """False for a str holding a lone surrogate ("\\ud800" from JSON): SQLite cannot store it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


MEDIA_TAG = re.compile(r"<\s*(video|audio|img|embed|iframe|object|source)\b", re.IGNORECASE)
"""Upstream Potato renders item text as HTML, and its media projects put <video> or <embed> tags in
it; this server shows text as text (no markup runs in annotators' browsers), so such an item would
show its tags instead of its media."""


def shown_text(value: Any) -> str:
    """An item's text as annotators read it and trainers learn it, for each shape upstream Potato
    shows: a list (dialogue turns, a pair to compare) as lettered lines "A. ...", "B. ..." as its
    default ``list_as_text`` does; an object as indented JSON; a number as itself (pure)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(f"{chr(ord('A') + i)}. {v if isinstance(v, str) else shown_text(v)}"
                         for i, v in enumerate(value))
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, indent=2)
    return str(value)


def load_items(files: Sequence[Path], id_key: str = "id", text_key: str = "text") -> ItemSet:
    """Read every data file; raise DataError naming the file and line of the first bad record."""
    items: list[Item] = []
    seen: dict[str, str] = {}
    for path in files:
        for number, (lineno, record) in enumerate(_records(path), start=1):
            where = f"{path}:{lineno}" if lineno else f"{path} (record {number})"
            if not isinstance(record, dict):
                raise DataError(f"{where}: expected a JSON object with '{id_key}' and '{text_key}'.")
            raw_id = record.get(id_key)
            if raw_id is None or raw_id == "":
                raise DataError(
                    f"{where}: missing id key '{id_key}'. Add it, or set item_properties.id_key "
                    f"to the key that holds the id (keys here: {', '.join(map(str, record)) or 'none'})."
                )
            if isinstance(raw_id, (dict, list, bool)):
                raise DataError(f"{where}: id '{id_key}' must be a string or number, not {raw_id!r}.")
            item_id = str(raw_id)
            if item_id in seen:
                raise DataError(
                    f"{where}: duplicate id '{item_id}' (first at {seen[item_id]}). Ids must be unique."
                )
            if record.get(text_key) is None:
                raise DataError(
                    f"{where}: missing text key '{text_key}'. Add it, or set item_properties.text_key "
                    "to the key that holds the text."
                )
            text = shown_text(record[text_key])
            for what, value in (("id", item_id), ("text", text)):
                if not is_unicode_text(value):
                    raise DataError(f"{where}: the {what} holds a lone surrogate (e.g. \\ud800), which is not "
                                    "Unicode text. Fix the escape in the file.")
            media = MEDIA_TAG.search(text)
            if media:
                raise DataError(
                    f"{where}: the text holds an HTML <{media.group(1).lower()}> tag. Upstream Potato shows item "
                    "text as HTML (images, video, embedded pages); this server shows it as text, so annotators "
                    "would see the tag, not the media. Put the text itself in the file; an image, a sound, a video "
                    "or a PDF goes in a key of its own (its address, or a file under media_directory), shown by an "
                    "instance_display field of type image, audio, video or pdf.")
            seen[item_id] = where
            items.append(Item(id=item_id, text=text, data=record))
    if not items:
        raise DataError(f"No items in {', '.join(map(str, files))}. Add items to the data files.")
    return ItemSet(items)
