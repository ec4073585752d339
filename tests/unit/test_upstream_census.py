"""scripts/upstream-census counts which upstream example projects validate here (issue 36's before and
after); run on a folder of its own: one project taken, two refused by the same feature."""

from __future__ import annotations

import json
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
    one = subprocess.run(census + ["classification"], capture_output=True, text=True, timeout=120)
    assert "1 of 2 projects validate here; refused: 1." in one.stdout.splitlines()
    none = subprocess.run(census + ["images"], capture_output=True, text=True, timeout=120)
    assert none.returncode != 0 and "no such folder" in none.stderr
