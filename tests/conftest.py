"""Shared fixtures: a small project on disk, its config, the app, a client and a CLI runner."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from potato.config import load_config
from potato.config.schema import Config

ADMIN_KEY = "test-admin-key-0123456789"

POSITIVE = ["works perfectly", "is great", "exceeded my expectations", "is sturdy and well made"]
NEGATIVE = ["broke after two days", "was a waste of money", "arrived damaged", "is far too noisy"]


def review_items(n: int = 40) -> list[dict[str, str]]:
    """Deterministic reviews: even ids positive, odd ids negative (tests can check a model)."""
    items = []
    for i in range(n):
        words = POSITIVE if i % 2 == 0 else NEGATIVE
        items.append({"id": f"r{i:03d}", "text": f"The item {i} {words[i % len(words)]}."})
    return items


def truth(item_id: str) -> str:
    return "positive" if int(item_id[1:]) % 2 == 0 else "negative"


def base_config() -> dict:
    return {
        "annotation_task_name": "Review Sentiment",
        "task_dir": ".",
        "data_files": ["data/reviews.json"],
        "item_properties": {"id_key": "id", "text_key": "text"},
        "output_annotation_dir": "annotation_output",
        "admin_api_key": ADMIN_KEY,
        "annotation_schemes": [
            {
                "annotation_type": "radio",
                "name": "sentiment",
                "description": "Is this review positive or negative?",
                "labels": ["positive", "negative"],
            },
            {
                "annotation_type": "multiselect",
                "name": "aspects",
                "description": "What does it talk about?",
                "labels": ["price", "quality", "delivery"],
            },
            {"annotation_type": "text", "name": "note", "description": "Anything else?"},
        ],
    }


RIG_ENTRIES = ("from tests.harness.sshd import", "from tests.harness.slurmcluster import")


@functools.lru_cache(maxsize=None)
def scope_of(module: str) -> str:
    """Where a test module runs under pytest-xdist (README's test command: ``-n 4``): on a worker of
    its own (its module fixtures, a trained server say, are made once), but every module that trains
    through the test rig on one worker together, since they share the rig's ``trainer`` account,
    whose jobs and files a test may clear. Read off the module's imports, so no list can fall behind."""
    try:
        text = (Path(__file__).parent.parent / module).read_text(encoding="utf-8")
    except OSError:
        return module
    return "the test rig" if any(entry in text for entry in RIG_ENTRIES) else module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ModuleOrRig(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid.split("::", 1)[0])

    return ModuleOrRig(config, log)


@pytest.fixture
def make_project(tmp_path: Path) -> Callable[..., Path]:
    """Write a project folder; returns the config path. Pass overrides for top-level keys."""

    def _make(n_items: int = 40, **overrides: object) -> Path:
        root = tmp_path / "project"
        (root / "data").mkdir(parents=True, exist_ok=True)
        (root / "data" / "reviews.json").write_text(json.dumps(review_items(n_items)), encoding="utf-8")
        raw = base_config()
        raw.update(overrides)
        path = root / "config.yaml"
        path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
        path.chmod(0o600)  # it holds the admin key: as docs/security.md asks, the server user's alone
        return path

    return _make


@pytest.fixture
def config_path(make_project: Callable[..., Path]) -> Path:
    return make_project()


@pytest.fixture
def config(config_path: Path) -> Config:
    return load_config(config_path)


@pytest.fixture
def app(config: Config) -> Iterator[object]:
    from potato.server import close_app, create_app

    # No dispatcher thread: these tests drive the app in-process; runs are tested under gunicorn.
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    yield application
    close_app(application)


@pytest.fixture
def client(app):  # type: ignore[no-untyped-def]
    return app.test_client()


@pytest.fixture
def admin_headers() -> dict[str, str]:
    return {"X-API-Key": ADMIN_KEY}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's tokens or a proxy (the rig's description stays: tests/harness/sshd.py)."""
    for name in list(os.environ):
        if (name.startswith("POTATO_") and name != "POTATO_TEST_RIG") or name.lower().endswith("_proxy"):
            monkeypatch.delenv(name, raising=False)
