"""Issue 24, active learning under gunicorn, as an admin turns it on from upstream's keys: runs start on
their own as labels arrive, and after a run every annotator's next items are the ones nobody has
labelled that the run was least sure of; an item an annotator already has stays where it is."""

from __future__ import annotations

import json
import time
from typing import Any, Dict, List

import pytest
import requests

from tests.harness.active_learning import server  # noqa: F401 - the fixture
from tests.harness.annotating import current_item, label, signed_in
from tests.harness.runs import H
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration


def succeeded_runs(srv: ServerProcess) -> List[Dict[str, Any]]:
    runs = requests.get(srv.url + "/admin/training/api/runs", headers=H).json()["runs"]
    return [r for r in runs if r["state"] == "succeeded"]


def test_after_a_run_annotators_get_the_items_it_was_least_sure_of(server: ServerProcess) -> None:  # noqa: F811
    state = requests.get(server.url + "/admin/training/api/active-learning", headers=H).json()
    assert (state["enabled"], state["run_id"], state["uncertainty"]) == (True, None, "least_confidence")

    gold = signed_in(server, "gold")
    item = current_item(gold, server)
    assert item["id"] == "r000"  # no model yet: the file's order
    for _ in range(20):
        item = label(gold, server, item["id"])
    open_item = item["id"]  # gold has it open: handed out before any order existed
    assert open_item == "r020"

    deadline = time.monotonic() + 120
    while not succeeded_runs(server) or requests.get(server.url + "/admin/training/api/active-learning",
                                                     headers=H).json()["run_id"] is None:
        assert time.monotonic() < deadline, server.output()[-3000:]
        time.sleep(0.3)
    run = succeeded_runs(server)[0]
    assert run["trigger"] == "auto"
    state = requests.get(server.url + "/admin/training/api/active-learning", headers=H).json()
    assert state["run_id"] == run["id"] and state["ordered"] == 30
    assert "Active learning: the next 30 items nobody has labelled go to annotators most uncertain first" \
        in requests.get(f"{server.url}/admin/training/api/runs/{run['id']}/log", headers=H).text

    predictions = server.config_path.parent / "annotation_output" / "training" / "runs" / run["id"] / "predictions.jsonl"
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    confidence = {r["item_id"]: r["confidence"] for r in rows if r["schema"] == "sentiment"}
    unlabelled = [f"r{i:03d}" for i in range(20, 80)]
    least_sure = sorted(unlabelled, key=lambda i: (confidence[i], int(i[1:])))

    kim = signed_in(server, "kim")
    got = [current_item(kim, server)["id"]]
    for _ in range(2):
        got.append(label(kim, server, got[-1])["id"])
    assert got == least_sure[:3]
    assert confidence[got[0]] <= min(confidence[i] for i in unlabelled)

    # gold's open item did not move; gold's next one follows the order too.
    assert label(gold, server, open_item)["id"] == least_sure[0]
