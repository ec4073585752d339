"""What a project's database holds, read as the tests of the answer types compare it, and the CLI
invoked in-process as those tests export and import (one way for every type's round trip)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from potato.cli import cli
from potato.config import load_config
from potato.db import Database
from potato.labels import LabelStore


def stored_answers(config_path: Path) -> dict[tuple[str, str], Any]:
    """Every stored answer of the project, by (item id, scheme)."""
    store = LabelStore(Database(load_config(config_path).database_path))
    return {(lab.item_id, lab.schema): lab.value for lab in store.iter_labels()}


def invoke(*args: Any) -> Result:
    """``potato ARGS...`` in this process; an exception it raises is raised here."""
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
