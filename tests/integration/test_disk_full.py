"""A full disk under gunicorn, on a real (tiny) file system: labels get a 507 that says so and
nothing half-stored, the server keeps serving, and works again once there is space; `potato start`
says the disk is full instead of a traceback. Needs root (it mounts a 4 MB tmpfs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.harness.disks import tmpfs
from tests.harness.servers import ServerProcess
from tests.faults.matrix import fault

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    yield from tmpfs(tmp_path, "4m")


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
    return filler


@fault("The disk",
       "The disk is full while annotators label",
       "Saves get 507 and store nothing half; the server serves on and saves again once there is space",
       "'The server's disk is full; nothing was stored. Tell the study's admin.'",
       lost="the refused save (the page keeps the pick)")
def test_a_full_disk_is_a_507_that_stores_nothing_and_the_server_recovers(
        make_project: Callable[..., Path], small_disk: Path) -> None:
    srv = ServerProcess(make_project(output_annotation_dir=str(small_disk / "out"))).start()
    try:
        ann = requests.Session()
        ann.post(srv.url + "/login", data={"name": "ann"})
        assert ann.post(srv.url + "/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}}).status_code == 200
        filler = fill(small_disk)
        full = ann.post(srv.url + "/api/label", json={"id": "r001", "labels": {"sentiment": "negative", "note": "x" * 4000}})
        assert full.status_code == 507, full.text
        assert full.json()["error"] == "The server's disk is full; nothing was stored. Tell the study's admin."
        labels = requests.get(srv.url + "/admin/api/labels", headers={"X-API-Key": ADMIN_KEY}).json()
        assert [(x["id"], x["schema"]) for x in labels["labels"]] == [("r000", "sentiment")]  # nothing half-stored
        filler.unlink()
        again = ann.post(srv.url + "/api/label", json={"id": "r001", "labels": {"sentiment": "negative"}})
        assert again.status_code == 200
    finally:
        srv.stop()
    assert "Traceback" not in srv.output()


def test_start_on_a_full_disk_says_so(make_project: Callable[..., Path], small_disk: Path) -> None:
    fill(small_disk)
    config = make_project(output_annotation_dir=str(small_disk / "out"))
    proc = subprocess.run([sys.executable, "-m", "potato", "start", str(config), "-p", "1"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "the disk is full" in proc.stderr and "Free some space" in proc.stderr
