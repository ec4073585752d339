"""Issue 12 under gunicorn (3 workers): a per-item cap holds when annotators sign in all at once.

Each item's place is handed out inside a write transaction; here 30 annotators race through three
worker processes for the places of 10 items that take one annotator each.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.servers import ServerProcess

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
