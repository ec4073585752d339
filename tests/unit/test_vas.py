"""Issue 45 (item 3): upstream's visual analogue scale (``vas``), as its classification/vas example
configures it: a line from ``left_label`` to ``right_label`` with no marks, ``min_value`` 0 to
``max_value`` 100 in tenths (``precision`` 1), its number shown only with ``show_value``. The answer is
a number, stored once the scale is moved; upstream's export names it by the scheme, and both exports
import back as the same stored answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from potato.config import load_config, validate
from potato.server import close_app, create_app
from tests.conftest import ADMIN_KEY
from tests.harness.labelstore import invoke as _run, stored_answers as _stored
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
PAIN = {"annotation_type": "vas", "name": "pain_level", "description": "Rate the pain level described in this text",
        "left_label": "No pain", "right_label": "Worst pain imaginable", "min_value": 0, "max_value": 100,
        "show_value": True}
ITEMS = [{"id": "v1", "text": "A dull ache."}, {"id": "v2", "text": "It hurts <b>badly</b>."}]


def _report(schemes: list[dict[str, Any]]) -> Any:
    return validate(upstream(annotation_schemes=schemes), CONFIG)


def _project(root: Path, schemes: list[dict[str, Any]] = [PAIN]) -> Path:  # noqa: B006 - never changed
    (root / "data").mkdir(parents=True)
    (root / "data" / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in ITEMS), encoding="utf-8")
    config = {"annotation_task_name": "Pain", "task_dir": ".", "data_files": ["data/items.jsonl"],
              "item_properties": {"id_key": "id", "text_key": "text"}, "output_annotation_dir": "out",
              "admin_api_key": ADMIN_KEY, "annotation_schemes": schemes}
    path = root / "config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    path.chmod(0o600)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = _project(tmp_path / "project")
    app = create_app(load_config(path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    client = app.test_client()
    client.post("/login", data={"name": "ann"})
    try:
        yield path, client
    finally:
        close_app(app)


def _label(client: Any, item_id: str, value: Any) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": True, "labels": {"pain_level": value}})


def test_upstreams_vas_validates_as_a_scale_without_marks() -> None:
    report = _report([PAIN])
    assert report.errors == []
    vas = report.config.annotation_schemes[0]
    assert (vas.min_value, vas.max_value, vas.step, vas.show_value, vas.starting_value) == (0, 100, 0.1, True, 50)
    assert (vas.min_label, vas.max_label, vas.training_type) == ("No pain", "Worst pain imaginable", None)
    plain = _report([{"annotation_type": "vas", "name": "v", "precision": 2}]).config.annotation_schemes[0]
    assert (plain.min_value, plain.max_value, plain.step, plain.show_value) == (0, 100, 0.01, False)
    errors = [i.message for i in _report([{**PAIN, "max_value": 0}]).errors]
    assert errors == ["annotation_schemes[0].max_value: must be greater than min_value (0), got 0"]
    errors = [i.message for i in _report([{**PAIN, "labels": ["a"]}]).errors]
    assert errors == ["annotation_schemes[0].labels: a vas scheme takes no labels (annotators pick a number); remove "
                      "labels, or use annotation_type: radio or likert"]
    errors = [i.message for i in _report([{**PAIN, "left_label": "x", "annotation_type": "slider"}]).errors]
    assert errors[0] == "annotation_schemes[0].left_label: applies to vas schemes only; remove it from this slider scheme"


def test_the_page_draws_the_line_with_its_ends_and_stores_a_number_on_it(project: tuple[Path, Any]) -> None:
    path, client = project
    page = client.get("/annotate").get_data(as_text=True)
    assert 'data-type="slider"' in page and 'class="numeric vas"' in page
    assert '<span>No pain</span>' in page and '<span>Worst pain imaginable</span>' in page
    assert 'step="0.1"' in page and 'aria-label="Rate the pain level described in this text (from No pain to Worst pain imaginable)"' in page
    assert _label(client, "v1", 73.4).status_code == 200
    assert _stored(path) == {("v1", "pain_level"): 73.4}
    assert _label(client, "v1", 73.45).get_json()["error"] == (
        "73.45 is not an answer to 'pain_level' (valid: a number from 0 to 100 in steps of 0.1)")
    assert _label(client, "v1", 101).status_code == 400 and _label(client, "v1", "high").status_code == 400


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(project: tuple[Path, Any], tmp_path: Path,
                                                             fmt: str) -> None:
    path, client = project
    assert _label(client, "v1", 73.4).status_code == 200 and _label(client, "v2", 100).status_code == 200
    if fmt == "ours":
        assert _run("export", path, "-o", tmp_path / "labels.jsonl").exit_code == 0
        source = tmp_path / "labels.jsonl"
    else:
        assert _run("export", path, "--upstream-format", fmt, "-o", tmp_path / "up").exit_code == 0
        source = tmp_path / "up" / f"annotations.{fmt}"
        if fmt == "jsonl":  # upstream's page names the answer by the scheme
            rows = [json.loads(line) for line in source.read_text().splitlines()]
            assert {row["instance_id"]: row["labels"] for row in rows} == {
                "v1": {"pain_level": {"pain_level": "73.4"}}, "v2": {"pain_level": {"pain_level": "100"}}}
    fresh = _project(tmp_path / "fresh")
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)
