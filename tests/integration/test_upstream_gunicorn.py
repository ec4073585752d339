"""Issue 12 under gunicorn (3 workers): upstream Potato's assignment caps and export files.

Each item's place is handed out inside a write transaction; here 30 annotators race through three
worker processes for the places of 10 items that take one annotator each. The export files that
``output_annotation_format`` asks for are kept written by one of the workers.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration


def test_thirty_annotators_racing_never_share_an_item_capped_at_one(make_project: Callable[..., Path]) -> None:
    srv = ServerProcess(make_project(n_items=10, num_annotators_per_item=1, max_annotations_per_user=1,
                                     assignment_strategy="random", random_seed=7)).start()
    got: dict[str, str | None] = {}
    lock, go = threading.Lock(), threading.Event()

    def annotator(name: str) -> None:
        s = requests.Session()
        s.post(srv.url + "/login", data={"name": name}, allow_redirects=False)
        go.wait()
        page = s.get(srv.url + "/annotate").text
        item = page.split('"id": "', 1)[1].split('"', 1)[0] if '"id": "r' in page else None
        if item is not None:
            answer = s.post(srv.url + "/api/label", json={"id": item, "labels": {"sentiment": "positive"}})
            assert answer.status_code == 200, answer.text
        else:
            assert "No items left for you" in page
        with lock:
            got[name] = item

    try:
        threads = [threading.Thread(target=annotator, args=(f"worker-{i}",)) for i in range(30)]
        for t in threads:
            t.start()
        go.set()
        for t in threads:
            t.join(60)
        items = [item for item in got.values() if item is not None]
        assert len(got) == 30 and sorted(items) == [f"r{i:03d}" for i in range(10)]  # each item once
        labels = requests.get(srv.url + "/admin/api/labels", headers={"X-API-Key": ADMIN_KEY}).json()
        assert labels["count"] == 10
    finally:
        srv.stop()


def test_the_export_files_follow_the_labels(make_project: Callable[..., Path]) -> None:
    config = make_project(output_annotation_format="tsv", export_annotation_format="jsonl", auto_export_interval=1)
    srv = ServerProcess(config).start()
    try:
        s = requests.Session()
        s.post(srv.url + "/login", data={"name": "alice"}, allow_redirects=False)
        s.post(srv.url + "/api/label", json={"id": "r001", "labels": {"sentiment": "negative", "aspects": ["price"]}})
        tsv = config.parent / "annotation_output" / "exports" / "tsv" / "annotations.tsv"
        expected = ["instance_id\tuser_id\tsentiment.negative\taspects.price", "r001\talice\tnegative\tprice"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (tsv.exists() and tsv.read_text().splitlines() == expected):
            time.sleep(0.2)
        assert tsv.read_text().splitlines() == expected
        assert (tsv.parent.parent / "jsonl" / "annotations.jsonl").exists()
        assert "could not write" not in srv.output()
    finally:
        srv.stop()
