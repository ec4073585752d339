"""A span project as the span tests under gunicorn set it up: people and places on 40 items
(``<person> flew to <place> on Monday.``) with their true spans, spans marked through the annotators' API
and read back as stored, and a server after a real span run (``trained``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
import requests

from tests.harness.annotating import signed_in
from tests.harness.runs import H, TERMINAL, start, wait
from tests.harness.servers import ServerProcess

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


def mark(session: requests.Session, srv: ServerProcess, item_id: str, spans: Any, **extra: Any) -> Dict[str, Any]:
    r = session.post(srv.url + "/api/label", json={"id": item_id, "labels": {"entities": spans}, "go": "stay", **extra})
    assert r.status_code == 200, r.text
    return r.json()["item"]


def stored(srv: ServerProcess, user: str) -> Dict[str, Dict[str, Any]]:
    rows = requests.get(f"{srv.url}/admin/api/labels?user={user}", headers=H).json()["labels"]
    return {r["id"]: r for r in rows}


@pytest.fixture
def trained(make_project: Callable[..., Path]) -> Iterator[tuple[ServerProcess, dict[str, Any]]]:
    srv = ServerProcess(span_project(make_project)).start()
    try:
        gold = signed_in(srv, "gold")
        for item in span_items()[:30]:
            mark(gold, srv, item["id"], true_spans(item))
        run = start(srv, trainer="sklearn-token-classification", schemas=["entities"])
        done = wait(srv, run["id"], TERMINAL, timeout=180)
        assert done["state"] == "succeeded", srv.output()[-3000:]
        yield srv, done
    finally:
        srv.stop()
