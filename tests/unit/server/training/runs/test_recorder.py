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


def test_a_held_run_is_awaiting_its_copy_only_once_its_writeback_is_done(app: Any, monkeypatch: Any) -> None:
    """Issue 44 (the regression CI found after issue 43): a run is ``copying`` while its predictions
    are written back too; the copy-back of its model files must wait until they are, or a backend with
    fetch_artifacts off copied them anyway (and one with it on could end the run mid-writeback)."""
    from potato.server.training.runs import recorder as recorder_module

    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    seen: list[tuple[RunState, bool]] = []
    real = recorder_module.write_back

    def watched(*args: Any, **kwargs: Any) -> Any:
        during = store.get(run.id)
        seen.append((during.state, during.awaiting_copy))
        return real(*args, **kwargs)

    monkeypatch.setattr(recorder_module, "write_back", watched)
    for hold in (True, False):
        run = store.create("noop", ["sentiment"], "lab", {})
        store.move(run.id, RunState.PREPARING)
        store.move(run.id, RunState.RUNNING)
        state = RunRecorder(project, store, store.get(run.id)).finish(0, {"status": "succeeded"}, None, None, None,
                                                                      hold_copying=hold)
        after = store.get(run.id)
        assert seen.pop() == (RunState.COPYING, False)
        assert (state, after.state, after.awaiting_copy) == (
            (RunState.COPYING, RunState.COPYING, True) if hold else (RunState.SUCCEEDED, RunState.SUCCEEDED, False))


def test_a_report_sent_again_after_a_server_stopped_mid_save_is_saved(app: Any) -> None:
    """Issue 44: the server was killed between the move to copying and the end of the writeback; the
    agent sends its report again, and that one is saved, so the restarted server's copy-back (which
    waits for awaiting_copy) starts instead of waiting for ever. A run that has ended keeps its fields."""
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    run = store.create("noop", ["sentiment"], "lab", {})
    for state in (RunState.PREPARING, RunState.RUNNING, RunState.COPYING):
        store.move(run.id, state)
    assert not store.get(run.id).awaiting_copy  # as the killed server left it
    state = RunRecorder(project, store, store.get(run.id)).finish(0, {"status": "succeeded"}, None, None, None,
                                                                  hold_copying=True)
    assert state is RunState.COPYING and store.get(run.id).awaiting_copy
    store.move(run.id, RunState.SUCCEEDED, step="done")
    store.await_copy(run.id, step="copying the model files")  # a late second save
    assert store.get(run.id).step == "done"
