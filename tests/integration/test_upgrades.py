"""Upgrades: a project written by the previous release opens with this one, whole; a database from a
newer release is refused and left as it was (issue 19).

tests/fixtures/previous_release/ was written by scripts/upgrade-fixture running an earlier commit's
server for real (its written_by.json names it): two annotators' labels of three scheme types, a
succeeded local run with its holdout score and 40 suggestions, and a registered agent backend.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from potato.db import MIGRATIONS
from tests.harness.servers import ServerProcess, free_port

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "previous_release"
KEY = "upgrade-fixture-admin-key-0123456789"
H = {"X-API-Key": KEY}


def copy_fixture(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    (project / "config.yaml").chmod(0o600)
    return project


def test_a_project_of_the_previous_release_opens_with_every_label_run_and_suggestion(tmp_path: Path) -> None:
    written = json.loads((FIXTURE / "written_by.json").read_text())
    project = copy_fixture(tmp_path)
    srv = ServerProcess(project / "config.yaml").start()
    try:
        exported = subprocess.run([sys.executable, "-m", "potato", "export", str(project / "config.yaml")],
                                  capture_output=True, text=True, timeout=60, check=True).stdout
        labels = {(r["user"], r["id"], r["schema"]): r["label"] for r in map(json.loads, exported.splitlines())}
        assert len(labels) == 33
        assert labels[("gold", "r001", "aspects")] == ["price", "quality"]
        assert labels[("gold", "r002", "note")] == "Bought it twice; ünïcode kept"
        assert labels[("second", "r000", "sentiment")] == "positive"
        assert [labels[("gold", f"r{i:03d}", "sentiment")] for i in range(4)] == [
            "negative", "positive", "negative", "positive"]

        run = requests.get(f"{srv.url}/admin/training/api/runs/{written['run']}", headers=H, timeout=10).json()
        assert run["state"] == "succeeded" and run["trainer"] == "sklearn-text-classification"
        assert run["metrics"]["holdout_accuracy"] == 1.0 and run["metrics"]["n_holdout"] == 6
        suggestions = requests.get(f"{srv.url}/admin/training/api/runs/{written['run']}/suggestions", headers=H,
                                   timeout=10).json()
        assert suggestions["count"] == 40
        log = requests.get(f"{srv.url}/admin/training/api/runs/{written['run']}/log", headers=H, timeout=10)
        assert log.status_code == 200 and log.text.strip()
        agents = requests.get(f"{srv.url}/admin/training/api/agents", headers=H, timeout=10).json()["agents"]
        assert [(a["backend"], a["registered"]) for a in agents] == [("lab", True)]
        # An annotator of the old release signs in again and finds their answer on their first item.
        session = requests.Session()
        assert session.post(f"{srv.url}/login", data={"name": "second"}, timeout=10).ok
        item = session.get(f"{srv.url}/api/item/1", timeout=10).json()["item"]
        assert item["id"] == "r000" and item["labels"]["sentiment"] == "positive", item
    finally:
        srv.stop()


def test_a_database_from_a_newer_release_is_refused_and_not_modified(tmp_path: Path) -> None:
    project = copy_fixture(tmp_path)
    database = project / "annotation_output" / "potato.sqlite3"
    with sqlite3.connect(database) as conn:
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.close()
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    files = sorted(p.name for p in database.parent.iterdir())
    done = subprocess.run([sys.executable, "-m", "potato", "start", str(project / "config.yaml"), "-p", str(free_port())],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert (f"Error: {database} was written by a newer Potato (database schema {len(MIGRATIONS) + 1}; this Potato "
            f"knows up to {len(MIGRATIONS)}), so this one does not open it and has not changed it.") in done.stderr
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in database.parent.iterdir()) == files
    exported = subprocess.run([sys.executable, "-m", "potato", "export", str(project / "config.yaml")],
                              capture_output=True, text=True, timeout=60)
    assert exported.returncode == 1 and "was written by a newer Potato" in exported.stderr
