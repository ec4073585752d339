"""Issue 45 (item 3): upstream's ``hierarchical_multiselect``, as its hierarchical-multiselect and
failure-taxonomy examples configure it: any nodes of a tree of labels (``taxonomy``, or
``taxonomy_preset: mast``), stored as the list of their names; upstream's export joins them with
commas under the scheme's name, and reads back (a name with a comma in it too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from tests.conftest import ADMIN_KEY
from tests.harness.labelstore import annotator, exported, invoke as _run, stored_answers as _stored
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
TOPICS = {"annotation_type": "hierarchical_multiselect", "name": "topics", "description": "Select all topics",
          "taxonomy": {"Science": {"Physics": ["Quantum Mechanics", "Thermodynamics"], "Biology": ["Genetics"]},
                       "Arts, Crafts": ["Music"]},
          "tooltips": {"Genetics": "Genes and heredity"}, "auto_select_children": True, "show_search": True}


def _project(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "data" / "items.jsonl").write_text(json.dumps({"id": "a1", "text": "Genes and songs"}) + "\n")
    config = {"annotation_task_name": "Topics", "task_dir": ".", "data_files": ["data/items.jsonl"],
              "item_properties": {"id_key": "id", "text_key": "text"}, "output_annotation_dir": "out",
              "admin_api_key": ADMIN_KEY, "annotation_schemes": [TOPICS]}
    path = root / "config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    path.chmod(0o600)
    return path


def test_the_tree_is_read_in_order_with_each_nodes_depth() -> None:
    report = validate(upstream(annotation_schemes=[TOPICS]), CONFIG)
    assert report.errors == []
    tree = report.config.annotation_schemes[0]
    assert list(zip(tree.labels, tree.depths)) == [
        ("Science", 0), ("Physics", 1), ("Quantum Mechanics", 2), ("Thermodynamics", 2), ("Biology", 1),
        ("Genetics", 2), ("Arts, Crafts", 0), ("Music", 1)]
    assert tree.options[5].tooltip == "Genes and heredity" and tree.auto_children and tree.searchable
    mast = validate(upstream(annotation_schemes=[{"annotation_type": "hierarchical_multiselect", "name": "modes",
                                                  "taxonomy_preset": "mast"}]), CONFIG).config.annotation_schemes[0]
    assert len(mast.labels) == 17 and mast.labels[1] == "1.1 Disobey task specification"
    assert mast.options[1].tooltip == "Breaks a constraint or requirement the task states."

    def errors(**changes: Any) -> list[str]:
        return [i.message for i in validate(upstream(annotation_schemes=[{**TOPICS, **changes}]), CONFIG).errors]

    assert errors(taxonomy={"A": ["x"], "B": ["x"]}) == [
        "annotation_schemes[0].taxonomy: names 'x' more than once; each node is stored by its name, so give each its own"]
    assert errors(taxonomy=None, taxonomy_preset="trail") == [
        "annotation_schemes[0].taxonomy_preset: 'trail' is not a taxonomy this server ships; valid: mast, or write the "
        "tree under taxonomy"]


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_picks_are_stored_as_names_and_both_exports_read_back(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-auto-children="1"' in page and 'class="tree-search"' in page and 'data-depth="2"' in page
        picks = ["Genetics", "Arts, Crafts", "Music"]
        assert client.post("/api/label", json={"id": "a1", "go": "stay", "labels": {"topics": picks}}).status_code == 200
        bad = client.post("/api/label", json={"id": "a1", "go": "stay", "labels": {"topics": ["Chemistry"]}})
        assert bad.status_code == 400
    assert _stored(path) == {("a1", "topics"): picks}
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":
        assert json.loads(source.read_text())["labels"] == {"topics": {"topics": "Genetics,Arts, Crafts,Music"}}
    fresh = _project(tmp_path / "fresh")
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)
