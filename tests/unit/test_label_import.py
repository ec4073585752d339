"""Issue 4: checking label entries (pure): every bad entry is named with what is valid."""

from __future__ import annotations

from pathlib import Path

from potato.config.schema import Config
from potato.label_import import Entry, check_entries, read_entries
from potato.labels import LabelSource


def _check(config: Config, *data: object):  # type: ignore[no-untyped-def]
    ids = dict.fromkeys(f"r{i:03d}" for i in range(40))
    return check_entries(config, ids, [Entry(f"f:{i + 1}", d) for i, d in enumerate(data)], "ann")


def test_good_entries_of_every_scheme_type(config: Config) -> None:
    batch = _check(
        config,
        {"id": "r000", "schema": "sentiment", "label": "positive"},
        {"id": "r000", "schema": "aspects", "label": ["price", "quality"]},
        {"id": "r001", "schema": "note", "label": "free text"},
    )
    assert batch.problems == []
    assert {(lab.item_id, lab.schema) for lab in batch.labels} == {("r000", "sentiment"), ("r000", "aspects"), ("r001", "note")}
    assert all(lab.source is LabelSource.IMPORT and lab.user == "ann" for lab in batch.labels)


def test_each_problem_names_line_and_valid_values(config: Config) -> None:
    batch = _check(
        config,
        {"id": "nope", "schema": "sentiment", "label": "positive"},
        {"id": "r000", "schema": "mood", "label": "positive"},
        {"id": "r000", "schema": "sentiment", "label": "neutral"},
        {"id": "r000", "schema": "aspects", "label": "price"},
        {"id": "r000", "schema": "sentiment"},
        ["not", "an", "object"],
    )
    assert batch.labels == []
    assert batch.problems == [
        "f:1: unknown item id 'nope'; use an id from the project's data files",
        "f:2: unknown schema 'mood'; valid schemas: sentiment, aspects, note",
        "f:3: 'neutral' is not a valid label for 'sentiment'; expected one of: positive, negative",
        "f:4: 'price' is not a valid label for 'aspects'; expected a list of distinct labels from: price, quality, delivery",
        "f:5: missing label; each entry needs id, schema and label",
        "f:6: expected an object with id, schema and label",
    ]


def test_later_entry_for_same_key_wins(config: Config) -> None:
    batch = _check(
        config,
        {"id": "r000", "schema": "sentiment", "label": "positive"},
        {"id": "r000", "schema": "sentiment", "label": "negative"},
    )
    assert [lab.value for lab in batch.labels] == ["negative"]


def test_csv_and_jsonl_files(config: Config, tmp_path: Path) -> None:
    csv_path = tmp_path / "l.csv"
    csv_path.write_text('id,schema,label\nr000,sentiment,positive\nr001,aspects,price|delivery\nr002,aspects,"[""quality""]"\n')
    batch = check_entries(config, dict.fromkeys(["r000", "r001", "r002"]), read_entries(csv_path), "u")
    assert batch.problems == []
    assert sorted((lab.item_id, str(lab.value)) for lab in batch.labels) == [
        ("r000", "positive"), ("r001", "['price', 'delivery']"), ("r002", "['quality']")
    ]
    jl = tmp_path / "l.jsonl"
    jl.write_text('{"id": "r000", "schema": "sentiment", "label": "positive"}\n{oops\n')
    batch = check_entries(config, {"r000": None}, read_entries(jl), "u")
    assert len(batch.labels) == 1
    assert batch.problems == [f"{jl}:2: not valid JSON (Expecting property name enclosed in double quotes); each line must be one JSON object"]
