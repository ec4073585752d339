"""Reading the bundle: every problem is a BadJob that names the file, the line and the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.training.job.failures import BadJob
from potato.training.job.spec import parse_job, read_holdout, read_items, read_job, read_labels
from potato.training.job.schemes import SchemeType

from tests.harness.jobdirs import ASPECTS, SENTIMENT, job_json


def test_a_valid_job() -> None:
    job = parse_job(job_json("noop", (SENTIMENT, ASPECTS), {"sleep_s": 1}, device="cuda:1", num_threads=2))
    assert job.trainer == "noop" and job.schema_names == ("sentiment", "aspects")
    assert job.schemas[1].annotation_type is SchemeType.MULTISELECT
    assert job.schemas[1].labels == ("price", "quality", "delivery")
    assert (job.device, job.num_threads, job.max_ram_mb, job.grace_seconds) == ("cuda:1", 2, None, 20)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"format": 3}, "has format 3, but this worker reads formats 1, 2"),
        ({"trainer": ""}, "trainer must be a non-empty string"),
        ({"schemas": ["nope"]}, "schema 'nope' is in schemas but not in schemes"),
        ({"device": "gpu"}, "device must be auto, cpu, cuda, cuda:N or mps, not 'gpu'"),
        ({"num_threads": 0}, "num_threads must be a positive integer or null, not 0"),
        ({"max_ram_mb": "1G"}, "max_ram_mb must be a positive integer or null"),
        ({"params": []}, "params must be an object"),
        ({"schemes": [{"name": "sentiment", "annotation_type": "scale"}]}, "valid types are: radio"),
    ],
)
def test_invalid_jobs(change: dict[str, Any], message: str) -> None:
    data = job_json("noop")
    data.update(change)
    with pytest.raises(BadJob, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_job(data)


def test_a_job_from_an_older_server_names_its_schemas_apart() -> None:
    """Issue 35: job.json carries one key, ``schemes``, in the run's order; a job an older server
    wrote (``schemas`` for the order, ``schemes`` in the config's) is read the same."""
    new = parse_job(job_json("noop", (ASPECTS, SENTIMENT)))
    old = job_json("noop", (SENTIMENT, ASPECTS))
    old["schemas"] = ["aspects", "sentiment"]
    assert "schemas" not in job_json("noop") and new.schema_names == ("aspects", "sentiment")
    assert parse_job(old) == new


def test_a_slider_is_a_scheme_but_not_one_to_train() -> None:
    slider = {"name": "score", "annotation_type": "slider", "labels": []}
    with pytest.raises(BadJob, match="schema 'score' is a slider scheme; trainers predict radio"):
        parse_job(job_json("noop", (SENTIMENT, slider)))


def test_a_text_schema_cannot_be_trained() -> None:
    note = {"name": "note", "annotation_type": "text", "labels": []}
    with pytest.raises(BadJob, match="schema 'note' is a text scheme; trainers predict radio, multiselect, span and pairwise schemes only"):
        parse_job(job_json("noop", (SENTIMENT, note)))


def test_missing_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(BadJob, match="job.json is missing"):
        read_job(tmp_path)
    (tmp_path / "job.json").write_text("{not json")
    with pytest.raises(BadJob, match="job.json is not valid JSON"):
        read_job(tmp_path)
    (tmp_path / "items.jsonl").write_text('{"id": "a", "text": "x"}\n\n{"id": "a", "text": "y"}\n')
    with pytest.raises(BadJob, match="items.jsonl line 3 repeats item id 'a'"):
        read_items(tmp_path)
    (tmp_path / "items.jsonl").write_text('{"id": 7}\n[1]\n')
    with pytest.raises(BadJob, match="items.jsonl line 2 must be a JSON object"):
        read_items(tmp_path)
    (tmp_path / "split.json").write_text('{"holdout": "a"}')
    with pytest.raises(BadJob, match="holdout is a list of item ids"):
        read_holdout(tmp_path)


def test_labels_are_typed_per_schema(tmp_path: Path) -> None:
    job = parse_job(job_json("noop", (SENTIMENT, ASPECTS)))
    rows = [
        {"item_id": "a", "schema": "sentiment", "label": "positive", "user": "u"},
        {"item_id": "a", "schema": "aspects", "label": ["quality", "price"], "user": "u"},
        {"item_id": "a", "schema": "note", "label": "free text", "user": "u"},
    ]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    labels = read_labels(tmp_path, job)
    assert [(r.schema, r.label) for r in labels] == [("sentiment", "positive"), ("aspects", ("price", "quality"))]
    (tmp_path / "labels.jsonl").write_text(json.dumps({"item_id": "a", "schema": "aspects", "label": "price"}))
    with pytest.raises(BadJob, match="labels.jsonl line 1: schema 'aspects' is multiselect"):
        read_labels(tmp_path, job)
