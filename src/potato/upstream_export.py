"""Annotations in the layout upstream Potato 2.x exports, for scripts written against its output.

Upstream keeps each answer as ``labels[schema][label_name] = value``, with the names its page
gives each kind of input: a radio or multiselect label is its own name and value, a likert point
its number (``"4": "4"``), a text box ``text_box``, a slider ``slider``, a number ``number``, a
drop-down ``select-one``, a scheme's free-text box ``free_response`` (next to the scheme's own
labels); values are text. Its exporter writes one record per (annotator, item)
as ``annotations.jsonl`` (``instance_id``, ``user_id``, ``labels``, ``spans``, ``links``), or a
``.csv`` / ``.tsv`` with a ``schema.label_name`` column per answer. Upstream reads
``output_annotation_format`` as that export's format (``json`` meaning ``jsonl``) and writes it
under ``<output_annotation_dir>/exports/<format>/``; so does this server.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from potato.config.schema import FREE_RESPONSE, Config, Scheme, SchemeType
from potato.labels import Label

_FIXED_NAME = {SchemeType.TEXT: "text_box", SchemeType.SLIDER: "slider", SchemeType.NUMBER: "number",
               SchemeType.SELECT: "select-one"}


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def upstream_labels(scheme: Scheme | None, value: Any) -> dict[str, str]:
    """One stored answer as upstream's ``{label_name: value}`` (pure)."""
    if isinstance(value, dict):  # a text scheme's boxes, by label
        return {str(k): _text(v) for k, v in value.items()}
    if scheme is not None and scheme.annotation_type in _FIXED_NAME:
        return {_FIXED_NAME[scheme.annotation_type]: _text(value)}
    if isinstance(value, list):
        return {str(v): str(v) for v in value}
    return {_text(value): _text(value)}


def records(config: Config, labels: Iterable[Label]) -> Iterator[dict[str, Any]]:
    """Upstream's records, one per (annotator, item), from labels sorted by user then item; each
    record's answers in the config's scheme order, as the page asks them."""
    order = {s.name: i for i, s in enumerate(config.annotation_schemes)}

    def done(record: dict[str, Any]) -> dict[str, Any]:
        record["labels"] = dict(sorted(record["labels"].items(), key=lambda kv: order.get(kv[0], len(order))))
        return record

    current: dict[str, Any] | None = None
    for lab in labels:
        if current is None or (current["user_id"], current["instance_id"]) != (lab.user, lab.item_id):
            if current is not None:
                yield done(current)
            current = {"instance_id": lab.item_id, "user_id": lab.user, "labels": {}, "spans": {}, "links": {}}
        scheme = config.scheme(lab.schema)
        if scheme is not None and scheme.free_response_of:
            current["labels"].setdefault(scheme.free_response_of, {})[FREE_RESPONSE] = _text(lab.value)
        else:
            current["labels"].setdefault(lab.schema, {}).update(upstream_labels(scheme, lab.value))
    if current is not None:
        yield done(current)


def render(fmt: str, rows: list[dict[str, Any]]) -> str:
    """The export file's text for ``rows`` in ``fmt`` (pure)."""
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    columns: list[str] = ["instance_id", "user_id"]
    flat = []
    for row in rows:
        out = {"instance_id": row["instance_id"], "user_id": row["user_id"]}
        for schema, answer in row["labels"].items():
            for label_name, value in answer.items():
                column = f"{schema}.{label_name}"
                if column not in columns:
                    columns.append(column)
                out[column] = value
        flat.append(out)
    buffer = io.StringIO(newline="")
    # Lines end in \r\n, as upstream's exporter (the csv module's default) writes them.
    writer = csv.DictWriter(buffer, fieldnames=columns, delimiter="\t" if fmt == "tsv" else ",")
    writer.writeheader()
    writer.writerows(flat)
    return buffer.getvalue()


def write(config: Config, labels: Iterable[Label], fmt: str, folder: Path) -> tuple[Path, int]:
    """Write ``folder/annotations.<fmt>`` whole or not at all (a reader never sees half a file)."""
    rows = list(records(config, labels))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"annotations.{fmt}"
    tmp = folder / f".annotations.{fmt}.tmp"
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write(render(fmt, rows))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path, len(rows)


def default_folder(config: Config, fmt: str) -> Path:
    return config.output_annotation_dir / "exports" / fmt
