"""Issue 36 on the local backend, under gunicorn: spans marked on two fields of an item (a premise
and a hypothesis, both ``span_target``) are stored by field, trained by field (sklearn-token-
classification on each field's text), scored span by span with the field part of a span's identity,
and suggested back in the field they belong to; the export in upstream's layout names each span's
``target_field``, and importing it stores the same spans."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.harness.servers import ServerProcess
from tests.harness.annotating import signed_in
from tests.harness.spanfields import FIELDS, pairs, truth
from tests.harness.spans import NER, mark, stored
from tests.harness.runs import TERMINAL, start, wait

pytestmark = pytest.mark.integration
H = {"X-API-Key": ADMIN_KEY}


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    config = make_project(annotation_schemes=[NER], item_properties={"id_key": "id", "text_key": "premise"},
                          instance_display={"fields": FIELDS}, output_annotation_format="jsonl", model_training={
                              "enabled": True, "grace_seconds": 2,
                              "writeback": {"schemas": ["entities"], "include_unlabeled": True, "min_confidence": 0.5}})
    (config.parent / "data" / "reviews.json").write_text(json.dumps(pairs()), encoding="utf-8")
    srv = ServerProcess(config).start()
    yield srv
    srv.stop()


def test_spans_on_two_fields_train_score_and_come_back_in_their_field(server: ServerProcess) -> None:
    items = pairs()
    gold = signed_in(server, "gold")
    for item in items[:30]:
        sent = [{k: v for k, v in s.items() if k != "text"} for s in truth(item)]
        assert mark(gold, server, item["id"], sent)["labels"]["entities"] == truth(item)

    # A span in a field the project does not mark, or past its field's end, is refused by name.
    bad = gold.post(server.url + "/api/label", json={"id": "p000", "go": "stay", "labels": {"entities": [
        {"start": 0, "end": 3, "label": "PER", "field": "title"}]}})
    assert bad.status_code == 400
    assert bad.json()["error"] == ("'entities': span 1: field 'title' is not one this scheme marks spans on: premise, "
                                   "hypothesis")
    long = gold.post(server.url + "/api/label", json={"id": "p000", "go": "stay", "labels": {"entities": [
        {"start": 0, "end": 99, "label": "PER", "field": "hypothesis"}]}})
    assert long.status_code == 400 and "span 1 (field hypothesis): 0-99 is not a stretch of the field's text" in \
        long.json()["error"]
    assert stored(server, "gold")["p000"]["label"] == truth(items[0])  # nothing refused replaced it

    run = start(server, trainer="sklearn-token-classification", schemas=["entities"])
    done = wait(server, run["id"], TERMINAL, timeout=180)
    assert done["state"] == "succeeded", server.output()[-3000:]
    metrics = done["metrics"]
    assert metrics["entities/holdout_f1"] >= 0.9, metrics
    assert metrics["suggestions/written"] >= 10

    kim = signed_in(server, "kim")
    shown = kim.get(server.url + "/api/item/33").json()["item"]  # p032: nobody marked it
    assert shown["id"] == "p032"
    suggested = shown["suggestions"]["entities"]["label"]
    want = truth(items[32])
    assert [{k: s.get(k) for k in ("start", "end", "label", "field")} for s in suggested] == [
        {k: s.get(k) for k in ("start", "end", "label", "field")} for s in want]
    assert [f.get("span_field") for f in shown["fields"]] == ["", "hypothesis"]

    # Accepted whole: each span keeps the run, in its own field.
    mark(kim, server, "p032", [{**s, "run_id": run["id"]} for s in suggested], accepted={"entities": run["id"]})
    row = stored(server, "kim")["p032"]
    assert (row["source"], row["run_id"]) == ("suggestion", run["id"])
    assert [(s.get("field"), s["text"]) for s in row["label"]] == [(s.get("field"), s["text"]) for s in want]

    # The export in upstream's layout names each span's field; importing it back stores the same spans.
    folder = server.config_path.parent / "upstream-export"
    subprocess.run([sys.executable, "-m", "potato", "export", str(server.config_path), "--upstream-format", "jsonl",
                    "-o", str(folder)], check=True, capture_output=True, timeout=120)
    records = [json.loads(line) for line in (folder / "annotations.jsonl").read_text(encoding="utf-8").splitlines()]
    kims = next(r for r in records if r["user_id"] == "kim" and r["instance_id"] == "p032")
    assert [(s["name"], s["text"], s.get("target_field")) for s in kims["spans"]["entities"]] == [
        (s["label"], s["text"], s.get("field")) for s in want]
    r = requests.post(server.url + "/admin/api/labels", headers=H, json={"user": "copy", "labels": [kims]})
    assert r.status_code == 200, r.text
    assert [{k: v for k, v in s.items()} for s in stored(server, "copy")["p032"]["label"]] == want
