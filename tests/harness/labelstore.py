"""What a project's database holds, read as the tests of the answer types compare it, and the CLI
invoked in-process as those tests export and import (one way for every type's round trip)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

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


@contextmanager
def annotator(config_path: Path, name: str = "ann") -> Iterator[Any]:
    """The project's app in this process (no dispatcher), and a test client signed in as ``name``, as
    the answer-type tests send answers the way the page does; the app is closed after."""
    from potato.server import close_app, create_app

    app = create_app(load_config(config_path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        client = app.test_client()
        client.post("/login", data={"name": name})
        yield client
    finally:
        close_app(app)


def exported(config_path: Path, folder: Path, fmt: str) -> Path:
    """The project's labels exported into ``folder`` in ``fmt`` (``ours``, or upstream's ``jsonl`` or
    ``csv`` layout), as ``potato export`` writes them; the file's path."""
    if fmt == "ours":
        assert invoke("export", config_path, "-o", folder / "labels.jsonl").exit_code == 0
        return folder / "labels.jsonl"
    assert invoke("export", config_path, "--upstream-format", fmt, "-o", folder / "up").exit_code == 0
    return folder / "up" / f"annotations.{fmt}"


def write_project(root: Path, name: str, items: Iterable[Mapping[str, Any]], schemes: Sequence[Mapping[str, Any]],
                  text_key: str = "text", data: str = "items.jsonl", output: str = "out", **more: Any) -> Path:
    """A project folder as the answer-type tests make one: ``items`` as JSON lines in data/``data``, a
    config (``more`` for its other keys) readable by its owner alone; the config's path."""
    from tests.conftest import ADMIN_KEY

    (root / "data").mkdir(parents=True)
    (root / "data" / data).write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    config = {"annotation_task_name": name, "task_dir": ".", "data_files": [f"data/{data}"],
              "item_properties": {"id_key": "id", "text_key": text_key}, "output_annotation_dir": output,
              "admin_api_key": ADMIN_KEY, "annotation_schemes": list(schemes), **more}
    path = root / "config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    path.chmod(0o600)
    return path
