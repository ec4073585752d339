"""Recording an agent's reports (issue 20): a run that an older server recorded, without the length of
its events.jsonl, keeps every event it had when the upgraded server takes the next report."""

from __future__ import annotations

import json
import time
from typing import Any

from potato.server.training.runs.recorder import RunRecorder
from potato.server.training.runs.store import RunState


def test_a_run_reported_on_by_an_older_server_keeps_its_events(app: Any) -> None:
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    run = store.create("noop", ["sentiment"], "lab", {})
    store.move(run.id, RunState.PREPARING)
    store.move(run.id, RunState.RUNNING)
    old = [{"type": "log", "text": f"before the upgrade {i}"} for i in range(3)]
    (store.run_dir(run.id) / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in old))
    store.update(run.id, events_seen=3)  # as the older server left it: no events_bytes
    RunRecorder(project, store, store.get(run.id)).report(3, [{"type": "log", "text": "after"}], [], time.time())
    lines = (store.run_dir(run.id) / "events.jsonl").read_text().splitlines()
    assert [json.loads(x)["text"] for x in lines] == [e["text"] for e in old] + ["after"]
