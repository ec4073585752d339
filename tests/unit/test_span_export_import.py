"""Issue 23: span answers in exports (our JSON lines, upstream's layout) and in ``potato import-labels``.

A span answer is stored as a list of ``{"start", "end", "label", "text"}`` sorted by position, offsets
counting code points of the item's text; ``[]`` is an answer (nothing to mark). Our export writes that
list as the label; upstream's layout writes 2.12.1's span objects (checked against files 2.12.1 wrote in
test_upstream_export_fixture.py). An import checks each span against the item's text and stores it as
the annotation page does, so export -> import into a fresh project gives the same stored spans.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from click.testing import CliRunner, Result

from potato import upstream_export
from potato.cli import cli
from potato.config import load_config
from potato.config.schema import Config
from potato.db import Database
from potato.label_import import Entry, check_entries
from potato.labels import LabelStore
from potato.server import close_app, create_app
from tests.conftest import ADMIN_KEY

ITEMS = [
    {"id": "s1", "text": "Ada Lovelace met Babbage in London."},
    {"id": "s2", "text": "Zoë flew 🍣 from Zürich to Ōsaka."},  # an astral character: code points, not UTF-16
    {"id": "s3", "text": "Nothing to mark here."},
]
SCHEMES = [
    {"annotation_type": "radio", "name": "sentiment", "description": "Sentiment", "labels": ["positive", "negative"]},
    {"annotation_type": "span", "name": "entities", "description": "Entities", "labels": ["PER", "ORG", "LOC"]},
]
# What an annotator sends (in any order, with or without the text) and what is stored for it.
SENT = {
    "s1": [{"start": 28, "end": 34, "label": "LOC"}, {"start": 0, "end": 12, "label": "PER", "text": "Ada Lovelace"},
           {"start": 17, "end": 24, "label": "PER"}],
    "s2": [{"start": 16, "end": 22, "label": "LOC"}, {"start": 0, "end": 3, "label": "PER"},
           {"start": 26, "end": 31, "label": "LOC"}],
    "s3": [],
}
STORED = {
    "s1": [{"start": 0, "end": 12, "label": "PER", "text": "Ada Lovelace"},
           {"start": 17, "end": 24, "label": "PER", "text": "Babbage"},
           {"start": 28, "end": 34, "label": "LOC", "text": "London"}],
    "s2": [{"start": 0, "end": 3, "label": "PER", "text": "Zoë"},
           {"start": 16, "end": 22, "label": "LOC", "text": "Zürich"},
           {"start": 26, "end": 31, "label": "LOC", "text": "Ōsaka"}],
    "s3": [],
}


def _project(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "data" / "items.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS),
                                               encoding="utf-8")
    config = {"annotation_task_name": "Spans", "task_dir": ".", "data_files": ["data/items.jsonl"],
              "item_properties": {"id_key": "id", "text_key": "text"}, "output_annotation_dir": "annotation_output",
              "admin_api_key": ADMIN_KEY, "annotation_schemes": SCHEMES}
    path = root / "config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    path.chmod(0o600)
    return path


def _stored(config_path: Path, schema: str = "entities") -> dict[str, Any]:
    store = LabelStore(Database(load_config(config_path).database_path))
    return {lab.item_id: lab.value for lab in store.iter_labels() if lab.schema == schema}


def _run(*args: Any) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def annotated(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    """A project where annotator 'ann' marked the spans of SENT through the annotation API."""
    config_path = _project(tmp_path / "project")
    app = create_app(load_config(config_path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        client = app.test_client()
        client.post("/login", data={"name": "ann"})
        for item_id, spans in SENT.items():
            saved = client.post("/api/label", json={"id": item_id, "labels": {"entities": spans}, "go": "stay"})
            assert saved.status_code == 200, saved.get_json()
        client.post("/api/label", json={"id": "s1", "labels": {"sentiment": "positive"}, "go": "stay"})
        yield config_path, app
    finally:
        close_app(app)


@pytest.fixture
def fresh(tmp_path: Path) -> Callable[[str], Path]:
    """A new project with the same config and items and no labels."""
    return lambda name: _project(tmp_path / name)


# -- our JSON lines export ----------------------------------------------------------------------

def test_spans_export_as_the_stored_list_from_the_cli_and_the_admin_api(annotated: tuple[Path, Any],
                                                                        tmp_path: Path) -> None:
    config_path, app = annotated
    assert _stored(config_path) == STORED
    out = tmp_path / "labels.jsonl"
    assert _run("export", config_path, "-o", out).exit_code == 0
    from_cli = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    from_api = [json.loads(line) for line in app.test_client().get(
        "/admin/api/export", headers={"X-API-Key": ADMIN_KEY}).get_data(as_text=True).splitlines()]
    for lines in (from_cli, from_api):
        assert {row["id"]: row["label"] for row in lines if row["schema"] == "entities"} == STORED
        assert all(row["user"] == "ann" for row in lines)


# -- upstream's layout --------------------------------------------------------------------------

def test_upstream_jsonl_holds_2_12_1s_span_objects_and_no_spans_for_nothing_marked(
        annotated: tuple[Path, Any], tmp_path: Path) -> None:
    config_path, _ = annotated
    assert _run("export", config_path, "--upstream-format", "jsonl", "-o", tmp_path / "up").exit_code == 0
    records = {r["instance_id"]: r for r in map(json.loads, (tmp_path / "up" / "annotations.jsonl").read_text(
        encoding="utf-8").splitlines())}
    assert records["s2"]["spans"] == {"entities": [
        {"schema": "entities", "name": "PER", "title": "PER", "start": 0, "end": 3, "id": "entities_PER_0_3",
         "text": "Zoë"},
        {"schema": "entities", "name": "LOC", "title": "LOC", "start": 16, "end": 22, "id": "entities_LOC_16_22",
         "text": "Zürich"},
        {"schema": "entities", "name": "LOC", "title": "LOC", "start": 26, "end": 31, "id": "entities_LOC_26_31",
         "text": "Ōsaka"}]}
    assert "entities" not in records["s2"]["labels"]
    # Upstream keeps no span list for an item with none: the record is there, its spans are not.
    assert records["s3"] == {"instance_id": "s3", "user_id": "ann", "labels": {}, "spans": {}, "links": {}}


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_upstream_csv_and_tsv_hold_the_spans_as_json_text_in_one_column(annotated: tuple[Path, Any],
                                                                        tmp_path: Path, fmt: str) -> None:
    config_path, _ = annotated
    assert _run("export", config_path, "--upstream-format", fmt, "-o", tmp_path / "up").exit_code == 0
    text = (tmp_path / "up" / f"annotations.{fmt}").read_text(encoding="utf-8")
    rows = {r["instance_id"]: r for r in csv.DictReader(io.StringIO(text, newline=""),
                                                        delimiter="\t" if fmt == "tsv" else ",")}
    assert [(s["name"], s["text"]) for s in json.loads(rows["s1"]["entities._spans"])] == [
        ("PER", "Ada Lovelace"), ("PER", "Babbage"), ("LOC", "London")]
    assert rows["s1"]["sentiment.positive"] == "positive"
    assert rows["s3"]["entities._spans"] == ""
    # As 2.12.1 writes the cell: json.dumps with its defaults, so "Zoë" is "Zo\u00eb" in the file.
    assert '""text"": ""Zo\\u00eb""' in text and "Zoë" not in text


def test_a_run_id_stays_out_of_upstreams_span_objects() -> None:
    spans = [{"start": 0, "end": 3, "label": "PER", "text": "Zoë", "run_id": "r-17"}]
    assert upstream_export.upstream_spans("entities", spans) == [
        {"schema": "entities", "name": "PER", "title": "PER", "start": 0, "end": 3, "id": "entities_PER_0_3",
         "text": "Zoë"}]
    assert upstream_export.upstream_spans("entities", []) == []


def test_a_span_on_another_field_is_upstreams_target_field_both_ways() -> None:
    """Issue 36: upstream names a span's field target_field; so does the export, and an import reads it."""
    spans = [{"start": 0, "end": 3, "label": "PER", "text": "Zoë", "field": "hypothesis"}]
    exported = upstream_export.upstream_spans("entities", spans)
    assert exported[0]["target_field"] == "hypothesis"
    assert upstream_export.our_spans("entities", exported) == (spans, None)


# -- import-labels ------------------------------------------------------------------------------

def test_our_jsonl_round_trips_into_a_fresh_project(annotated: tuple[Path, Any], fresh: Callable[[str], Path],
                                                    tmp_path: Path) -> None:
    config_path, _ = annotated
    out = tmp_path / "labels.jsonl"
    assert _run("export", config_path, "-o", out).exit_code == 0
    target = fresh("fresh")
    result = _run("import-labels", target, out, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert "Imported 4 label(s) for user 'ann' (4 new, 0 changed, 0 unchanged)" in result.output
    assert _stored(target) == _stored(config_path) == STORED
    assert _stored(target, "sentiment") == {"s1": "positive"}
    again = _run("import-labels", target, out, "--user", "ann")
    assert "(0 new, 0 changed, 4 unchanged)" in again.output


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "tsv"])
def test_upstreams_layout_round_trips_into_a_fresh_project(annotated: tuple[Path, Any],
                                                           fresh: Callable[[str], Path], tmp_path: Path,
                                                           fmt: str) -> None:
    config_path, _ = annotated
    assert _run("export", config_path, "--upstream-format", fmt, "-o", tmp_path / "up").exit_code == 0
    target = fresh("fresh")
    result = _run("import-labels", target, tmp_path / "up" / f"annotations.{fmt}", "--user", "ann")
    assert result.exit_code == 0, result.output
    # Nothing marked has no place in upstream's layout (see the export test): every other span answer
    # comes back as it was stored.
    assert _stored(target) == {k: v for k, v in STORED.items() if v}
    assert _stored(target, "sentiment") == {"s1": "positive"}


def test_our_csv_takes_spans_as_json_text(fresh: Callable[[str], Path], tmp_path: Path) -> None:
    target = fresh("fresh")
    path = tmp_path / "labels.csv"
    cell = json.dumps(SENT["s1"]).replace('"', '""')
    path.write_text(f'id,schema,label\ns1,entities,"{cell}"\ns3,entities,[]\n', encoding="utf-8")
    result = _run("import-labels", target, path, "--user", "gold")
    assert result.exit_code == 0, result.output
    assert _stored(target) == {"s1": STORED["s1"], "s3": []}


def test_a_bad_span_names_line_span_and_fix_and_nothing_of_the_file_is_imported(
        fresh: Callable[[str], Path], tmp_path: Path) -> None:
    target = fresh("fresh")
    path = tmp_path / "labels.jsonl"
    lines = [{"id": "s1", "schema": "entities", "label": STORED["s1"]},
             {"id": "s2", "schema": "entities", "label": [{"start": 0, "end": 3, "label": "PER"},
                                                          {"start": 30, "end": 40, "label": "LOC"}]}]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "potato", "import-labels", str(target), str(path), "--user",
                             "gold"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert (f"{path}:2: the spans of 'entities' on item 's2': span 2 {{\"start\": 30, \"end\": 40, \"label\": "
            "\"LOC\"}: 30-40 is not a stretch of the item's text, which has 32 characters (0 <= start < end <= "
            "length); fix that span or leave it out (start and end count characters of the item's text from 0, "
            "end exclusive; labels: PER, ORG, LOC)") in result.stderr
    assert "nothing was imported" in result.stderr
    assert _stored(target) == {}


def _problems(config: Config, *data: object, from_csv: bool = False) -> list[str]:
    texts = {i["id"]: i["text"] for i in ITEMS}
    return check_entries(config, texts, [Entry(f"f:{n}", d, from_csv) for n, d in enumerate(data, 1)], "u").problems


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return load_config(_project(tmp_path / "pure"))


def test_each_kind_of_bad_span_is_named(config: Config) -> None:
    assert _problems(
        config,
        {"id": "s1", "schema": "entities", "label": [{"start": 0, "end": 3, "label": "PERSON"}]},
        {"id": "s1", "schema": "entities", "label": [{"start": 0, "end": 3, "label": "PER", "text": "Ada L"}]},
        {"id": "s1", "schema": "entities", "label": [{"start": 0, "end": 12, "label": "PER"},
                                                     {"start": 4, "end": 12, "label": "PER"}]},
        {"id": "s1", "schema": "entities", "label": "Ada"},
    ) == [
        "f:1: the spans of 'entities' on item 's1': span 1 {\"start\": 0, \"end\": 3, \"label\": \"PERSON\"}: label "
        "'PERSON' is not one of this scheme's labels: PER, ORG, LOC; fix that span or leave it out (start and end "
        "count characters of the item's text from 0, end exclusive; labels: PER, ORG, LOC)",
        "f:2: the spans of 'entities' on item 's1': span 1 {\"start\": 0, \"end\": 3, \"label\": \"PER\", \"text\": "
        "\"Ada L\"}: the text at 0-3 is 'Ada', not 'Ada L'; the offsets must count characters of the item's text "
        "as shown; fix that span or leave it out (start and end count characters of the item's text from 0, end "
        "exclusive; labels: PER, ORG, LOC)",
        "f:3: the spans of 'entities' on item 's1': the spans PER 0-12 ('Ada Lovelace') and PER 4-12 ('Lovelace') "
        "overlap, and this scheme does not allow overlapping spans (allow_overlapping: true does); fix that span "
        "or leave it out (start and end count characters of the item's text from 0, end exclusive; labels: PER, "
        "ORG, LOC)",
        "f:4: the spans of 'entities' on item 's1': spans must be a list of {\"start\": int, \"end\": int, \"label\": "
        "str} objects; fix that span or leave it out (start and end count characters of the item's text from 0, "
        "end exclusive; labels: PER, ORG, LOC)",
    ]


def test_upstream_spans_it_cannot_keep_are_refused_by_name(config: Config) -> None:
    discontinuous = {"schema": "entities", "name": "LOC", "start": 0, "end": 3, "id": "x",
                     "additional_parts": [{"start": 8, "end": 12, "text": "Love"}]}
    elsewhere = {"schema": "entities", "name": "LOC", "start": 0, "end": 3, "target_field": "title"}
    problems = _problems(
        config,
        {"instance_id": "s1", "user_id": "x", "labels": {}, "spans": {"entities": [discontinuous]}},
        {"instance_id": "s1", "user_id": "x", "labels": {}, "spans": {"entities": [elsewhere]}},
        {"instance_id": "s1", "user_id": "x", "labels": [], "spans": {}},
    )
    assert problems[0].startswith('f:1: the spans of \'entities\': span 1 {"schema": "entities", "name": "LOC"')
    assert problems[0].endswith("is discontinuous (additional_parts), which this server does not store; split it "
                                "into one span per stretch of text, or leave it out")
    assert problems[1].endswith("field 'title' is not one this scheme marks spans on: text; fix that span or leave it "
                                "out (start and end count characters of the item's text from 0, end exclusive; "
                                "labels: PER, ORG, LOC)")
    assert problems[2] == ('f:3: "labels" must map each scheme to {label_name: value}, as upstream Potato '
                           "exports it")


def test_an_upstream_span_without_text_is_checked_by_its_offsets(config: Config) -> None:
    """2.12.1 writes "text": "" when it cannot slice the item; the offsets are still checked."""
    record = {"instance_id": "s1", "user_id": "x", "labels": {"sentiment": {"negative": "negative"}},
              "spans": {"entities": [{"schema": "entities", "name": "PER", "start": 17, "end": 24, "text": ""}]}}
    batch = check_entries(config, {i["id"]: i["text"] for i in ITEMS}, [Entry("f:1", record)], "u")
    assert batch.problems == []
    assert {lab.schema: lab.value for lab in batch.labels} == {
        "sentiment": "negative", "entities": [{"start": 17, "end": 24, "label": "PER", "text": "Babbage"}]}


def test_an_upstream_record_of_an_unknown_item_is_named_once(config: Config) -> None:
    record = {"instance_id": "s9", "user_id": "x", "labels": {"sentiment": {"negative": "negative"}},
              "spans": {"entities": [{"name": "PER", "start": 0, "end": 3}]}}
    assert _problems(config, record) == ["f:1: unknown item id 's9'; use an id from the project's data files"]


def test_spans_need_the_items_text(config: Config) -> None:
    batch = check_entries(config, {"s1": None}, [Entry("f:1", {"id": "s1", "schema": "entities", "label": []})], "u")
    assert batch.problems == ["f:1: the text of item 's1' is unknown here, so its spans cannot be checked"]


def test_the_labels_api_checks_spans_against_the_items_text(annotated: tuple[Path, Any]) -> None:
    _, app = annotated
    client = app.test_client()
    bad = client.post("/admin/api/labels", headers={"X-API-Key": ADMIN_KEY}, json={
        "user": "gold", "labels": [{"id": "s2", "schema": "entities", "label": [{"start": 5, "end": 9, "label": "LOC",
                                                                                 "text": "flew"}]}]})
    assert bad.status_code == 400
    problem = bad.get_json()["problems"][0]
    assert problem.startswith("labels[0]: the spans of 'entities' on item 's2': span 1 {")
    assert "}: the text at 5-9 is 'lew ', not 'flew'; the offsets must count characters" in problem
    good = client.post("/admin/api/labels", headers={"X-API-Key": ADMIN_KEY}, json={
        "user": "gold", "labels": [{"id": "s2", "schema": "entities", "label": [{"start": 4, "end": 8, "label": "LOC"}]}]})
    assert good.status_code == 200, good.get_json()
    gold = client.get("/admin/api/labels?user=gold", headers={"X-API-Key": ADMIN_KEY}).get_json()["labels"]
    assert [lab["label"] for lab in gold] == [[{"start": 4, "end": 8, "label": "LOC", "text": "flew"}]]


def test_the_labels_api_takes_a_record_of_upstreams_export(annotated: tuple[Path, Any]) -> None:
    _, app = annotated
    client = app.test_client()
    record = {"instance_id": "s1", "user_id": "someone", "labels": {"sentiment": {"negative": "negative"}},
              "spans": {"entities": [{"schema": "entities", "name": "LOC", "title": "LOC", "start": 28, "end": 34,
                                      "id": "entities_LOC_28_34", "text": "London"}]}, "links": {}}
    saved = client.post("/admin/api/labels", headers={"X-API-Key": ADMIN_KEY}, json={"user": "up", "labels": [record]})
    assert saved.status_code == 200 and saved.get_json()["stored"] == 2, saved.get_json()
    up = client.get("/admin/api/labels?user=up", headers={"X-API-Key": ADMIN_KEY}).get_json()["labels"]
    assert {lab["schema"]: lab["label"] for lab in up} == {
        "sentiment": "negative", "entities": [{"start": 28, "end": 34, "label": "LOC", "text": "London"}]}
