"""Issue 43 (item 6): whether agents poll for a backend's runs is its flag, never its type. A polling
backend registered from this module alone is listed with its agent and its queued runs say why they
wait, as the built-in agent backend's; a backend whose two sides disagree is refused at registration."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

from potato import defaults
from potato.config import BackendKind, load_config
from potato.config._checks import integer, text
from potato.server.training import backends
from potato.server.training.backends.agent import Polling, agent_entries, explain_queued
from potato.server.training.runs.store import RunStore


@dataclass(frozen=True)
class PagerSettings:
    """A toy backend whose runs wait for an agent that asks, as an agent backend's do."""

    name: str
    type: str = "pager"
    description: str = ""
    heartbeat_timeout_s: int = defaults.HEARTBEAT_TIMEOUT_S
    queue_timeout_s: int | None = None

    def describe(self) -> str:
        return f"{self.name} (pager)"


class Pager(Polling):
    type = "pager"


PAGER_KIND = BackendKind("pager", PagerSettings, {"type": text(), "description": text(allow_empty=True),
                                                  "heartbeat_timeout_s": integer(1)}, "a pager backend", polled=True)


@pytest.fixture
def pager() -> Iterator[None]:
    from potato.config.training import backends as _backends

    backends.register_backend(Pager, PAGER_KIND)
    yield
    backends.BACKEND_CLASSES.pop("pager")
    _backends.BACKEND_KINDS.pop("pager")


def test_a_registered_polling_backend_is_listed_and_its_queued_runs_say_why_they_wait(
        pager: None, make_project: Callable[..., Path]) -> None:
    config = load_config(make_project(model_training={"enabled": True, "backends": {"desk": {"type": "pager"}}}))
    from potato.db import Database

    db = Database(config.database_path)
    try:
        store = RunStore(db, config.training_dir / "runs")
        run = store.create("noop", ["sentiment"], "desk", {})
        from potato.server.training.runs.tokens import BackendTokens

        assert [entry["backend"] for entry in agent_entries(config, BackendTokens(db), store)] == ["desk"]
        explain_queued(config, store, [run])
        assert run.step and "desk" in run.step  # why it waits: no agent polls for desk
    finally:
        db.close()


def test_a_backend_whose_two_sides_disagree_on_polling_is_refused() -> None:
    with pytest.raises(ValueError, match="both sides must agree whether agents poll for its runs"):
        backends.register_backend(Pager, BackendKind("pager", PagerSettings, {"type": text()}, "a pager backend"))
    assert "pager" not in backends.BACKEND_CLASSES
