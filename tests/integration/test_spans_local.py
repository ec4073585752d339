"""Issue 23 on the local backend, under gunicorn: spans marked through the annotators' API train
sklearn-token-classification, the holdout's span F1 is on the run, and the model's spans come back as
suggestions that an annotator accepts whole or in part, the provenance stored span by span."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

from tests.harness.annotating import signed_in
from tests.harness.runs import H, TERMINAL, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.spans import mark, span_items, span_project, stored, true_spans

pytestmark = pytest.mark.integration


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    srv = ServerProcess(span_project(make_project)).start()
    yield srv
    srv.stop()


def test_a_span_run_trains_scores_and_its_spans_are_accepted_with_their_provenance(server: ServerProcess) -> None:
    items = span_items()
    gold = signed_in(server, "gold")
    for item in items[:30]:
        mark(gold, server, item["id"], true_spans(item))

    run = start(server, trainer="sklearn-token-classification", schemas=["entities"])
    done = wait(server, run["id"], TERMINAL, timeout=180)
    assert done["state"] == "succeeded", server.output()[-3000:]
    metrics = done["metrics"]
    assert metrics["entities/holdout_f1"] >= 0.9
    assert {"entities/PER/holdout_f1", "entities/LOC/holdout_recall", "entities/holdout_precision"} <= set(metrics)
    assert metrics["suggestions/written"] >= 10

    kim = signed_in(server, "kim")
    first = kim.get(server.url + "/api/item/31").json()["item"]  # s030: nobody marked it
    assert first["id"] == "s030"
    shown = first["suggestions"]["entities"]
    assert shown["run_id"] == run["id"] and shown["score"] == metrics["entities/holdout_f1"]
    want = true_spans(items[30])
    assert [{k: s[k] for k in ("start", "end", "label")} for s in shown["label"]] == want
    assert all(0.5 <= s["confidence"] <= 1 for s in shown["label"])

    # Accepted whole: every span from the suggestion, so the answer is the suggestion's.
    accepted = [{**s, "run_id": run["id"]} for s in want]
    mark(kim, server, "s030", accepted, accepted={"entities": run["id"]})
    row = stored(server, "kim")["s030"]
    assert (row["source"], row["run_id"]) == ("suggestion", run["id"])
    assert [(s["label"], s["text"], s.get("run_id")) for s in row["label"]] == [
        ("PER", items[30]["text"].split(" ")[0], run["id"]), ("LOC", items[30]["text"].split(" ")[3], run["id"])]

    # Corrected: one suggested span kept, the other relabelled by hand; a run id on a span the model
    # never suggested is not believed.
    person, place = true_spans(items[31])
    mine = [{**person, "run_id": run["id"]}, {**place, "label": "PER", "run_id": run["id"]}]
    mark(kim, server, "s031", mine, accepted={"entities": run["id"]})
    row = stored(server, "kim")["s031"]
    assert (row["source"], row.get("run_id")) == ("human", None)
    assert [s.get("run_id") for s in row["label"]] == [run["id"], None]

    # Once kim answered, the item is hers: a later page load still offers the model's view, but her
    # spans are what is stored and exported.
    export = [json.loads(line) for line in
              requests.get(server.url + "/admin/api/export", headers=H).text.splitlines()]
    kims = {r["id"]: r for r in export if r["user"] == "kim"}
    assert [s["label"] for s in kims["s031"]["label"]] == ["PER", "PER"]
