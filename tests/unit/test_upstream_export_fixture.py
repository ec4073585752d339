"""Issue 12: our export of upstream's layout against files upstream Potato 2.12.1 itself wrote.

tests/fixtures/upstream_2_12_1 holds a config in upstream's shape, the answers two annotators gave,
and the jsonl/csv/tsv files 2.12.1's exporter wrote after those answers were entered into its own
page in Chromium (scripts/upstream-export-fixture regenerates them). The same config runs here
unchanged; the same answers stored here must export to the same records, columns and values. Record,
key and column order are upstream's dict order, which no reader relies on, so they are compared as
sets; line endings are compared as bytes.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from potato.config import load_config
from potato.server import close_app, create_app

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "upstream_2_12_1"


@pytest.fixture
def exported(tmp_path: Path) -> Iterator[Path]:
    shutil.copy(FIXTURE / "config.yaml", tmp_path / "config.yaml")
    shutil.copytree(FIXTURE / "data", tmp_path / "data")
    config = load_config(tmp_path / "config.yaml")  # upstream's config, unchanged
    app = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        clients: dict[str, Any] = {}
        for answer in json.loads((FIXTURE / "answers.json").read_text(encoding="utf-8")):
            if answer["user"] not in clients:
                clients[answer["user"]] = app.test_client()
                clients[answer["user"]].post("/login", data={"name": answer["user"]})
            saved = clients[answer["user"]].post("/api/label", json={"id": answer["id"], "labels": answer["labels"],
                                                                     "go": "stay"})
            assert saved.status_code == 200, saved.get_json()
        assert app.extensions["potato.autoexport"].write_if_changed()
        yield config.output_annotation_dir / "exports"
    finally:
        close_app(app)


def test_jsonl_holds_upstreams_records(exported: Path) -> None:
    def records(path: Path) -> set[str]:
        return {json.dumps(json.loads(line), sort_keys=True) for line in path.read_text(encoding="utf-8").splitlines()}

    ours, theirs = records(exported / "jsonl" / "annotations.jsonl"), records(FIXTURE / "exports" / "jsonl" /
                                                                            "annotations.jsonl")
    assert ours == theirs and len(ours) == 4


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_csv_and_tsv_hold_upstreams_columns_and_rows(exported: Path, fmt: str) -> None:
    def table(path: Path) -> tuple[set[str], set[frozenset[tuple[str, str]]], bytes]:
        data = path.read_bytes()
        reader = csv.DictReader(io.StringIO(data.decode("utf-8"), newline=""), delimiter="\t" if fmt == "tsv" else ",")
        rows = {frozenset(row.items()) for row in reader}
        return set(reader.fieldnames or ()), rows, data.split(b"\n", 1)[0][-1:]

    ours = table(exported / fmt / f"annotations.{fmt}")
    theirs = table(FIXTURE / "exports" / fmt / f"annotations.{fmt}")
    assert ours[0] == theirs[0] and "sentiment.free_response" in ours[0]
    assert ours[1] == theirs[1] and len(ours[1]) == 4
    assert ours[2] == theirs[2] == b"\r"  # lines end in \r\n, as upstream writes them
