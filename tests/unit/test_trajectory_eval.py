"""Issue 45 (item 3): upstream's ``trajectory_eval`` scheme, as its trajectory-evaluation and
mast-step-tagging examples configure it: each step of the item's list under ``steps_key`` judged with
one of ``correctness_options`` and, where it is not right, an error type and subtype of
``error_types``, a severity and a rationale. Stored per step with the step's place and text;
upstream's export holds ``{"steps": [{"step_index", ...}], "score"}`` and reads back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from potato.config import validate
from tests.harness.labelstore import (annotator, exported, invoke as _run, stored_answers as _stored,
                                     write_project)
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
STEPS = [{"action": "search_web('San Francisco weather')", "thought": "Find the weather."},
         {"action": "click_result(0)", "thought": "Open the first result."},
         {"action": "write_file('weather.txt', text)", "thought": "Save it."}]
EVAL = {"annotation_type": "trajectory_eval", "name": "step_evaluation", "description": "Evaluate each step",
        "steps_key": "steps", "step_text_key": "action", "correctness_options": ["correct", "incorrect", "partially_correct"],
        "error_types": [{"name": "reasoning", "subtypes": ["logical_error", "planning_error"]},
                        {"name": "execution", "subtypes": ["wrong_tool", "wrong_args"]}, "other"],
        "severities": [{"name": "minor", "weight": -1}, {"name": "major", "weight": -5}],
        "show_score": True, "max_score": 100}


def _project(root: Path) -> Path:
    return write_project(root, "Trajectories", [{"id": "tr1", "text": "Weather to a file", "steps": STEPS}], [EVAL])


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        yield path, client


def _label(client: Any, value: Any) -> Any:
    return client.post("/api/label", json={"id": "tr1", "go": "stay", "labels": {"step_evaluation": value}})


WRONG = {"correctness": "incorrect", "error_type": "execution", "error_subtype": "wrong_tool", "severity": "major",
         "rationale": "It should have used the weather API."}


def test_each_step_is_judged_and_its_error_named_from_the_taxonomy() -> None:
    report = validate(upstream(annotation_schemes=[EVAL]), CONFIG)
    assert report.errors == []
    scheme = report.config.annotation_schemes[0]
    assert scheme.labels == ("correct", "incorrect", "partially_correct")
    assert scheme.error_types == (("reasoning", ("logical_error", "planning_error")),
                                  ("execution", ("wrong_tool", "wrong_args")), ("other", ()))
    assert scheme.severities == (("minor", -1.0), ("major", -5.0)) and scheme.max_score == 100
    assert (scheme.turns.field, scheme.turns.steps_text, scheme.turns.placement) == ("steps", "action", "list")
    defaults = validate(upstream(annotation_schemes=[{"annotation_type": "trajectory_eval", "name": "t",
                                                      "show_score": False}]), CONFIG).config.annotation_schemes[0]
    assert [s for s, _ in defaults.severities] == ["minor", "major", "critical"] and defaults.max_score is None
    assert [i.message for i in validate(upstream(annotation_schemes=[{**EVAL, "severities": [{"weight": 1}]}]),
                                        CONFIG).errors] == [
        "annotation_schemes[0].severities[0].name: missing; name the severity, e.g. name: major"]


def test_a_verdict_is_stored_per_step_and_a_wrong_taxonomy_is_refused(project: tuple[Path, Any]) -> None:
    path, client = project
    page = client.get("/annotate").get_data(as_text=True)
    assert 'data-max-score="100"' in page and '<option value="execution::wrong_tool">wrong_tool</option>' in page
    assert _label(client, {"t0": {"correctness": "correct"}, "t2": WRONG}).status_code == 200
    stored = _stored(path)[("tr1", "step_evaluation")]
    assert stored["t2"] == {"value": WRONG, "index": 2, "text": "write_file('weather.txt', text)"}
    mixed = _label(client, {"t1": {"correctness": "incorrect", "error_type": "reasoning", "error_subtype": "wrong_tool"}})
    assert mixed.status_code == 400 and "is not an answer for turn 't1'" in mixed.get_json()["error"]
    assert _stored(path)[("tr1", "step_evaluation")] == stored


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_upstreams_layout_and_ours_import_back(project: tuple[Path, Any], tmp_path: Path, fmt: str) -> None:
    path, client = project
    assert _label(client, {"t0": {"correctness": "correct"}, "t1": {"correctness": "partially_correct",
                                                                   "severity": "minor"}, "t2": WRONG}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":
        data = json.loads(json.loads(source.read_text().splitlines()[0])["labels"]["step_evaluation"]["step_evaluation"])
        assert data["score"] == 94  # 100, less a minor (1) and a major (5) error
        assert data["steps"][2] == {"step_index": 2, **WRONG}
    fresh = _project(tmp_path / "fresh")
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)


def test_a_verdict_of_the_wrong_shape_is_refused_not_a_server_error(project: tuple[Path, Any]) -> None:
    _, client = project
    for verdict in ({"correctness": "incorrect", "error_type": ["execution"]}, {"correctness": "incorrect", "severity": {}},
                    {"correctness": ["correct"]}, {"correctness": "correct", "note": "x"}, "correct"):
        assert _label(client, {"t0": verdict}).status_code == 400, verdict
