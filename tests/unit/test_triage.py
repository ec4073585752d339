"""Issue 45 (item 3): upstream's ``triage`` scheme, as its triage and safety-escalation examples
configure it: keep, discard or unsure (stored as ``accept``, ``reject``, ``skip``) under the words
and keys the config gives, the next item shown at once (``auto_advance``); a choice a trainer learns
as a radio question's. Upstream's export names it ``decision``, and reads back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from potato.cli import cli
from potato.config import load_config, validate
from potato.db import Database
from potato.labels import LabelStore
from tests.conftest import ADMIN_KEY
from tests.harness.labelstore import annotator
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
SAFETY = {"annotation_type": "triage", "name": "safety_triage", "description": "Safe to deploy, or escalate?",
          "accept_label": "Safe", "reject_label": "Escalate", "skip_label": "Unsure"}


def _run(*args: Any) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_triage_is_three_answers_with_their_words_and_keys() -> None:
    report = validate(upstream(annotation_schemes=[SAFETY]), CONFIG)
    assert report.errors == []
    triage = report.config.annotation_schemes[0]
    assert [(o.name, o.shown, o.key) for o in triage.options] == [("accept", "Safe", "1"), ("reject", "Escalate", "2"),
                                                                  ("skip", "Unsure", "3")]
    assert triage.auto_advance and triage.training_type == "radio"
    keyed = validate(upstream(annotation_schemes=[{**SAFETY, "accept_key": "a", "auto_advance": False}]),
                     CONFIG).config.annotation_schemes[0]
    assert [o.key for o in keyed.options] == ["a", "2", "3"] and not keyed.auto_advance
    assert [i.message for i in validate(upstream(annotation_schemes=[{**SAFETY, "reject_key": "ab"}]), CONFIG).errors] == [
        "annotation_schemes[0].reject_key: must be one key (a letter, digit or sign), got 'ab'"]


def test_a_verdict_is_stored_and_exported_as_upstreams_decision(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "data" / "items.jsonl").write_text(json.dumps({"id": "x1", "text": "rm -rf /"}) + "\n")
    config = {"annotation_task_name": "Triage", "task_dir": ".", "data_files": ["data/items.jsonl"],
              "item_properties": {"id_key": "id", "text_key": "text"}, "output_annotation_dir": "out",
              "admin_api_key": ADMIN_KEY, "annotation_schemes": [SAFETY]}
    path = root / "config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    path.chmod(0o600)
    with annotator(path) as client:
        assert 'data-auto-advance="1"' in client.get("/annotate").get_data(as_text=True)
        assert client.post("/api/label", json={"id": "x1", "go": "stay", "labels": {"safety_triage": "reject"}}
                           ).status_code == 200
    assert _run("export", path, "--upstream-format", "jsonl", "-o", tmp_path / "up").exit_code == 0
    row = json.loads((tmp_path / "up" / "annotations.jsonl").read_text())
    assert row["labels"] == {"safety_triage": {"decision": "reject"}}
    fresh = tmp_path / "fresh"
    (fresh / "data").mkdir(parents=True)
    (fresh / "data" / "items.jsonl").write_text((root / "data" / "items.jsonl").read_text())
    (fresh / "config.yaml").write_text(path.read_text())
    (fresh / "config.yaml").chmod(0o600)
    assert _run("import-labels", fresh / "config.yaml", tmp_path / "up" / "annotations.jsonl", "--user", "ann").exit_code == 0
    store = LabelStore(Database(load_config(fresh / "config.yaml").database_path))
    assert [(lab.item_id, lab.schema, lab.value) for lab in store.iter_labels()] == [("x1", "safety_triage", "reject")]
