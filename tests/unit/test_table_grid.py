"""Issue 45 (item 3): upstream's ``table_grid``, as its agent-traces table-grid example configures it:
a table's image (the item's ``image_key``) above a grid of its cells, the size from the item
(``rows_key``, ``cols_key``; else ``default_rows`` by ``default_cols``), each cell marked with one of
``roles`` (the first: a cell not marked). Stored as upstream stores it, ``{"rows", "cols", "cells":
{"r,c": role}}``; both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
TABLE = ("data:image/svg+xml;utf8,<svg xmlns='http://www.w3.org/2000/svg' width='300' height='130'>"
         "<rect width='300' height='130' fill='%23ffffff'/><text x='20' y='26'>Region</text></svg>")
GRID = {"annotation_type": "table_grid", "name": "structure", "description": "Mark the headers and empty cells",
        "image_key": "image", "rows_key": "rows", "cols_key": "cols", "roles": ["data", "col_header", "row_header", "empty"]}
ITEMS = [{"id": "t1", "text": "A 3 by 3 sales table", "rows": 3, "cols": 3, "image": TABLE},
         {"id": "t2", "text": "No size given, and an image that is not shown", "image": "javascript:alert(1)"}]


def _project(root: Path, **scheme: Any) -> Path:
    return write_project(root, "Tables", ITEMS, [{**GRID, **scheme}])


def _label(client: Any, item_id: str, value: Any) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": True, "labels": {"structure": value}})


def test_the_keys_are_upstreams_with_upstreams_defaults() -> None:
    report = validate(upstream(annotation_schemes=[GRID]), CONFIG)
    assert report.errors == []
    grid = report.config.annotation_schemes[0]
    assert (grid.grid_keys, grid.grid_size, grid.labels) == (
        ("image", "rows", "cols"), (3, 3), ("data", "col_header", "row_header", "empty"))
    bad = validate(upstream(annotation_schemes=[{**GRID, "roles": ["data"]}, {**GRID, "name": "b", "default_rows": 41}]),
                   CONFIG)
    assert [e.message for e in bad.errors] == [
        "annotation_schemes[0].roles: needs at least two roles, the first for a cell not marked, such as [data, col_header]",
        "annotation_schemes[1].default_rows: must be a whole number from 1 to 40, got 41"]


def test_the_grid_starts_from_the_item_and_is_stored_as_upstream_stores_it(tmp_path: Path) -> None:
    path = _project(tmp_path / "project", default_rows=2, default_cols=4)
    with annotator(path) as client:
        assert client.get("/api/item/1").get_json()["item"]["grids"]["structure"] == {
            "image": TABLE, "problem": "", "rows": 3, "cols": 3}
        assert client.get("/api/item/2").get_json()["item"]["grids"]["structure"] == {
            "image": "", "problem": "javascript: addresses are not shown; use https:// or a file", "rows": 2, "cols": 4}
        marked = {"rows": 3, "cols": 3, "cells": {"0,0": "col_header", "0,1": "col_header", "2,2": "empty"}}
        assert _label(client, "t1", marked).status_code == 200
        outside = _label(client, "t1", {"rows": 2, "cols": 3, "cells": {"2,2": "empty"}})
        assert outside.status_code == 400 and "is not an answer to 'structure'" in outside.get_json()["error"]
        assert _label(client, "t1", {"rows": 41, "cols": 3}).status_code == 400
        assert _label(client, "t2", {"rows": 2, "cols": 4}).status_code == 200  # only the size: an answer too
    assert stored_answers(path) == {("t1", "structure"): marked, ("t2", "structure"): {"rows": 2, "cols": 4}}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, "t1", {"rows": 3, "cols": 2, "cells": {"1,0": "row_header"}}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":
        labels = json.loads(source.read_text().splitlines()[0])["labels"]
        assert json.loads(labels["structure"]["structure"]) == {"rows": 3, "cols": 2, "cells": {"1,0": "row_header"}}
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) and len(stored_answers(fresh)) == 1
