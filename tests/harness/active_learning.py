"""The active-learning project under gunicorn that the active-learning tests (the API's and the page's)
share: 80 items, runs that start on their own as labels arrive, reordering after each."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.harness.servers import ServerProcess


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    config = make_project(n_items=80, model_training={"enabled": True, "grace_seconds": 2}, active_learning={
        "enabled": True, "schema_names": ["sentiment"], "min_instances_for_training": 10,
        "update_frequency": 20, "max_instances_to_reorder": 30, "random_sample_percent": 0,
        "resolution_strategy": "majority_vote"})
    srv = ServerProcess(config).start()
    yield srv
    srv.stop()
