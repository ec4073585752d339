"""Issue 33 item 4 under gunicorn: with annotation_output made beforehand as 0755 (a volume, a ``mkdir``) and
a umask of 022, a real local run left its folder 0755 and bundle.tar.gz, predictions.jsonl and run.log
0644, readable by every account on the machine. Now everything under training/ is folders 0700 and files
0600, and the server says at start that the output folder is open to others and how to close it."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path
from typing import Callable

import pytest

from tests.harness.runs import TERMINAL, label_all, start, training_config, wait
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration


def test_a_local_run_under_an_open_output_folder_keeps_its_files_private(make_project: Callable[..., Path]) -> None:
    config_path = make_project(**training_config())
    output = config_path.parent / "annotation_output"
    output.mkdir()
    output.chmod(0o755)
    old = os.umask(0o022)
    try:
        srv = ServerProcess(config_path).start()
    finally:
        os.umask(old)
    try:
        assert (f"warning: output_annotation_dir: other accounts on this machine can open {output} (mode 0755); "
                f"make it yours alone: chmod 700 {shlex.quote(str(output))}") in srv.output()
        label_all(srv, 30)
        run = start(srv, trainer="sklearn-text-classification", schemas=["sentiment"], backend="local")
        assert wait(srv, run["id"], TERMINAL)["state"] == "succeeded"
    finally:
        srv.stop()
    training = output / "training"
    run_dir = training / "runs" / run["id"]
    names = {p.name for p in run_dir.rglob("*")}
    assert {"bundle.tar.gz", "predictions.jsonl", "run.log", "events.jsonl", "agent.out", "artifacts"} <= names
    paths = [training, *training.rglob("*")]
    opened = {str(p.relative_to(output)): oct(stat.S_IMODE(p.lstat().st_mode)) for p in paths
              if stat.S_IMODE(p.lstat().st_mode) & 0o077}
    assert opened == {}
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in paths if p.is_dir())
