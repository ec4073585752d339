"""scripts/upstream-census counts which upstream example projects validate here (issue 36's before and
after); run on a folder of its own: one project taken, two refused by the same feature."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import base_config, review_items

ROOT = Path(__file__).resolve().parents[2]


def project(folder: Path, **extra: object) -> None:
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "reviews.json").write_text(json.dumps(review_items(5)), encoding="utf-8")
    raw = base_config()
    raw.update(extra)
    (folder / "config.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")


def test_the_census_counts_projects_and_their_commonest_refusal(tmp_path: Path) -> None:
    project(tmp_path / "classification" / "plain")
    project(tmp_path / "classification" / "flow", surveyflow={"on": True})
    project(tmp_path / "crowd" / "panel", surveyflow={"on": True})
    census = [sys.executable, str(ROOT / "scripts" / "upstream-census"), str(tmp_path)]
    out = subprocess.run(census, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "ok       classification/plain/config.yaml" in lines
    assert any(line.startswith("refused  crowd/panel/config.yaml: surveyflow: 'surveyflow' is a Potato feature")
               for line in lines), out.stdout
    assert "1 of 3 projects validate here; refused: 2." in lines
    assert any(line.startswith("   2  surveyflow: ") for line in lines), out.stdout
    assert "Keys of validating projects that nothing reads or names: none." in lines  # issue 42: none in silence
    one = subprocess.run(census + ["classification"], capture_output=True, text=True, timeout=120)
    assert "1 of 2 projects validate here; refused: 1." in one.stdout.splitlines()
    none = subprocess.run(census + ["images"], capture_output=True, text=True, timeout=120)
    assert none.returncode != 0 and "no such folder" in none.stderr


def bare_python3(tmp_path: Path) -> dict[str, str]:
    """An environment whose first python3 on PATH has no site-packages (so no Potato, no PyYAML): the
    system python3 of a machine where Potato lives only in the checkout's .venv."""
    base: str = getattr(sys, "_base_executable", sys.executable)  # the interpreter the venv was made from
    bare = tmp_path / "bin"
    bare.mkdir()
    stand_in = bare / "python3"
    stand_in.write_text(f"#!/bin/sh\nexec {shlex.quote(base)} -S \"$@\"\n", encoding="utf-8")
    stand_in.chmod(0o755)
    env = {**os.environ, "PATH": f"{bare}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    assert subprocess.run(["python3", "-c", "import potato"], env=env, capture_output=True).returncode != 0
    return env


def test_the_census_runs_as_the_docs_write_it_whatever_python3_the_path_finds(tmp_path: Path) -> None:
    """Issue 42 B: docs/migrating-from-potato.md says ``scripts/upstream-census FOLDER`` from a checkout;
    its ``#!/usr/bin/env python3`` ran the PATH's python3, which has no Potato, and it ended with "No
    module named potato". Run exactly so, from the checkout's root, with a python3 first on PATH that
    has no site-packages at all: the script finds the checkout's .venv (scripts/setup's) itself."""
    assert (ROOT / ".venv" / "bin" / "python").exists(), "scripts/setup makes .venv; the docs' command needs it"
    env = bare_python3(tmp_path)
    examples = tmp_path / "examples"
    project(examples / "classification" / "plain")
    out = subprocess.run(["scripts/upstream-census", str(examples)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ok       classification/plain/config.yaml" in out.stdout.splitlines()
    assert "1 of 1 projects validate here; refused: 0." in out.stdout.splitlines()


def test_without_a_venv_the_census_says_to_run_setup(tmp_path: Path) -> None:
    """Issue 42 B: a checkout where scripts/setup never ran, started by a python3 without Potato's
    packages, said only "No module named potato"; it now names the Python and the fix."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    (checkout / "src").mkdir()
    script = checkout / "scripts" / "upstream-census"
    script.write_bytes((ROOT / "scripts" / "upstream-census").read_bytes())
    script.chmod(0o755)
    out = subprocess.run(["scripts/upstream-census", str(tmp_path)], cwd=checkout, env=bare_python3(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and out.stdout == ""
    assert "cannot import this checkout's Potato" in out.stderr and "Run scripts/setup" in out.stderr, out.stderr
