"""Issues 12 and 23: our export of upstream's layout against files upstream Potato 2.12.1 itself wrote,
and those files imported back.

tests/fixtures/upstream_2_12_1 holds a config in upstream's shape, the answers two annotators gave,
and the jsonl/csv/tsv files 2.12.1's exporter wrote after those answers were entered into its own
page in Chromium (scripts/upstream-export-fixture regenerates them). The same config runs here
unchanged; the same answers stored here must export to the same records, columns and values. Record,
key and column order are upstream's dict order, which no reader relies on, so they are compared as
sets; line endings are compared as bytes. The fixture has a span scheme: its spans were marked in
2.12.1's page with the mouse, so the span objects and the ``entities._spans`` cells are 2.12.1's own.
``potato import-labels`` of 2.12.1's files must store what the server stored for the same answers.
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
from potato.label_import import check_entries, read_entries
from potato.project import Project
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
    assert ours[0] == theirs[0] and {"sentiment.free_response", "entities._spans"} <= ours[0]
    assert ours[1] == theirs[1] and len(ours[1]) == 4
    assert ours[2] == theirs[2] == b"\r"  # lines end in \r\n, as upstream writes them


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "tsv"])
def test_importing_2_12_1s_files_stores_what_the_server_stored(exported: Path, tmp_path: Path, fmt: str) -> None:
    """Each annotator's records of 2.12.1's file, imported as theirs, are the labels (spans included)
    this server stored from the same answers: same schemas, same values, nothing refused."""
    project = Project.open(load_config(tmp_path / "config.yaml"))
    entries = read_entries(FIXTURE / "exports" / fmt / f"annotations.{fmt}")
    for user in ("alice", "bob"):
        batch = check_entries(project.config, project.items.texts(), [e for e in entries if e.data["user_id"] == user], user)
        assert batch.problems == []
        stored = {(lab.item_id, lab.schema): lab.value for lab in project.labels.iter_labels(user=user)}
        assert {(lab.item_id, lab.schema): lab.value for lab in batch.labels} == stored
        assert any(schema == "entities" for _, schema in stored)
