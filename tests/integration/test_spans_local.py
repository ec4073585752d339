"""Issue 23 on the local backend, under gunicorn: spans marked through the annotators' API train
sklearn-token-classification, the holdout's span F1 is on the run, and the model's spans come back as
suggestions that an annotator accepts whole or in part, the provenance stored span by span."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.harness.runs import TERMINAL, start, wait
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration
H = {"X-API-Key": ADMIN_KEY}

PEOPLE = ["Ada", "Bruno", "Clara", "Dmitri", "Elena", "Farid", "Grace", "Hugo"]
PLACES = ["Paris", "Oslo", "Lima", "Rome", "Kyoto", "Accra", "Quito"]
NER = {"annotation_type": "span", "name": "entities", "description": "Mark people and places",
       "labels": [{"name": "PER", "color": "#e6194b"}, {"name": "LOC", "color": "#4363d8"}]}


def span_items(n: int = 40) -> List[Dict[str, Any]]:
    """``<person> flew to <place> on Monday.``: the person first, the place after "to"."""
    return [{"id": f"s{i:03d}", "text": f"{PEOPLE[i % len(PEOPLE)]} flew to {PLACES[i % len(PLACES)]} on Monday."}
            for i in range(n)]


def true_spans(item: Dict[str, Any]) -> List[Dict[str, Any]]:
    text = item["text"]
    person, place = text.split(" ")[0], text.split(" ")[3]
    return [{"start": 0, "end": len(person), "label": "PER"},
            {"start": text.index(place), "end": text.index(place) + len(place), "label": "LOC"}]


def span_project(make_project: Callable[..., Path], backends: Dict[str, Any] | None = None) -> Path:
    """A project whose one scheme marks people and places, on 40 items, with the model's spans of
    confidence 0.5 or more written back (and ``backends`` to train on besides this machine)."""
    config = make_project(annotation_schemes=[NER], model_training={
        "enabled": True, "grace_seconds": 2, **({"backends": backends} if backends else {}),
        "writeback": {"schemas": ["entities"], "include_unlabeled": True, "min_confidence": 0.5}})
    (config.parent / "data" / "reviews.json").write_text(json.dumps(span_items()), encoding="utf-8")
    return config


def signed_in(srv: ServerProcess, name: str) -> requests.Session:
    s = requests.Session()
    assert s.post(srv.url + "/login", data={"name": name}, allow_redirects=False).status_code == 302
    return s


def mark(session: requests.Session, srv: ServerProcess, item_id: str, spans: Any, **extra: Any) -> Dict[str, Any]:
    r = session.post(srv.url + "/api/label", json={"id": item_id, "labels": {"entities": spans}, "go": "stay", **extra})
    assert r.status_code == 200, r.text
    return r.json()["item"]


def stored(srv: ServerProcess, user: str) -> Dict[str, Dict[str, Any]]:
    rows = requests.get(f"{srv.url}/admin/api/labels?user={user}", headers=H).json()["labels"]
    return {r["id"]: r for r in rows}


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
