"""A server leaves nothing in the project folder that a copy cannot take (issue 33 item 15).

README's first command serves examples/reviews in place; its test command then copied that folder
and failed on the dispatcher's named pipe (``shutil.Error: ... is a named pipe``), which lived in
``annotation_output/training/``. A backup, ``cp -r`` or rsync of a project trips on the same. Here a
real server (gunicorn, its dispatcher, a local run that rings the dispatcher's bell) serves a
project, and the project is copied while it runs and after it stopped.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path
from typing import Callable, List

import pytest

from tests.harness.runs import TERMINAL, label_all, start, training_config, wait
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration


def special_files(folder: Path) -> List[str]:
    """Everything under ``folder`` that is not a plain file or folder (named pipes, sockets, devices)."""
    found = []
    for path in folder.rglob("*"):
        mode = path.lstat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            found.append(str(path.relative_to(folder)))
    return found


def test_a_served_project_holds_no_special_file_and_copies_whole(
        make_project: Callable[..., Path], tmp_path: Path) -> None:
    config_path = make_project(**training_config())
    project = config_path.parent
    srv = ServerProcess(config_path).start()
    try:
        label_all(srv, 20)
        run = start(srv, trainer="noop", schemas=["sentiment"], backend="local")  # queued: the bell rings
        assert wait(srv, run["id"], TERMINAL, timeout=120)["state"] == "succeeded"
        assert (project / "annotation_output" / "training").is_dir()
        assert special_files(project) == []
        shutil.copytree(project, tmp_path / "while-serving")
    finally:
        srv.stop()
    assert special_files(project) == []
    shutil.copytree(project, tmp_path / "after")
