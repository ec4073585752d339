"""Following an ssh run (issue 44, a regression after issue 43): the ssh thread starts the copy-back
only once the run's predictions are saved and it waits on its model files, never at the move to
``copying`` that the writeback itself runs under; a session that ends then is no lost agent."""

from __future__ import annotations

import threading
from typing import Any

from potato.config.schema import SshBackendSettings
from potato.server.training.backends.ssh.run import SshRun
from potato.server.training.runs.store import RunState


class _Ended:
    """A session whose ssh client has exited (the agent reported and quit)."""

    def ended(self) -> bool:
        return True


def _follower(app: Any, fetch: bool = True) -> tuple[Any, SshRun]:
    project, store = app.extensions["potato"], app.extensions["potato.runs"]
    run = store.create("noop", ["sentiment"], "lab", {})
    store.move(run.id, RunState.PREPARING)
    store.move(run.id, RunState.RUNNING)
    backend = SshBackendSettings(name="lab", host="127.0.0.1", fetch_artifacts=fetch)
    return store, SshRun(project, store, store.get(run.id), "", backend, "")


def _follow_in_thread(follower: SshRun) -> tuple[threading.Thread, list[bool]]:
    answer: list[bool] = []
    thread = threading.Thread(target=lambda: answer.append(follower.follow()), daemon=True)
    thread.start()
    return thread, answer


def test_the_copy_back_waits_for_the_writeback(app: Any) -> None:
    store, follower = _follower(app)
    thread, answer = _follow_in_thread(follower)
    store.move(follower.run.id, RunState.COPYING, step="saving predictions and model files")
    thread.join(1.5)
    assert thread.is_alive() and not answer  # the writeback runs: nothing may be copied yet
    store.await_copy(follower.run.id, step="copying the model files")
    thread.join(5)
    assert answer == [True]


def test_a_session_that_ends_during_the_writeback_is_no_lost_agent(app: Any) -> None:
    store, follower = _follower(app)
    store.move(follower.run.id, RunState.COPYING)
    follower.session = _Ended()  # type: ignore[assignment]
    thread, answer = _follow_in_thread(follower)
    thread.join(1.5)
    assert thread.is_alive() and store.get(follower.run.id).state is RunState.COPYING
    store.await_copy(follower.run.id)
    thread.join(5)
    assert answer == [True]


def test_a_run_without_a_copy_ends_without_one(app: Any) -> None:
    store, follower = _follower(app, fetch=False)
    thread, answer = _follow_in_thread(follower)
    store.move(follower.run.id, RunState.COPYING)
    store.move(follower.run.id, RunState.SUCCEEDED)
    thread.join(5)
    assert answer == [False]
