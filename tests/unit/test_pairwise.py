"""Issue 45 (item 3): upstream's ``pairwise`` scheme, as its llm-preference, pairwise-comparison,
pairwise-scale and multi-dim-comparison examples configure it. The item's text is the list of the
two options (shown lettered A and B); the answer is which is better (``binary``: "A", "B" or "tie"),
by how much (``scale``: a number from A's end to B's), or which on each dimension
(``multi_dimension``: ``{dimension: choice}``). Upstream's export names the answer ``selection``,
``scale_value`` or the dimension; both exports import back as the same stored answers.
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

BINARY = {"annotation_type": "pairwise", "name": "helpfulness", "description": "Which response is more helpful?",
          "mode": "binary", "items_key": "responses", "labels": ["Response A", "Response B"], "allow_tie": True,
          "tie_label": "Equally helpful", "sequential_key_binding": True}
SCALE = {"annotation_type": "pairwise", "name": "overall", "description": "Overall, which is better?",
         "mode": "scale", "items_key": "responses", "labels": ["Response A", "Response B"],
         "scale": {"min": -3, "max": 3, "step": 1, "default": 0,
                   "labels": {"min": "A is much better", "max": "B is much better", "center": "Equal"}},
         "label_requirement": {"required": True}}
DIMENSIONS = {"annotation_type": "pairwise", "name": "dims", "description": "Compare them", "mode": "multi_dimension",
              "items_key": "responses", "labels": ["Response A", "Response B"], "dimensions": [
                  {"name": "helpfulness", "description": "Which better addresses the request?", "allow_tie": True},
                  {"name": "safety", "description": "Which is safer?"}],
              "label_requirement": {"required": True}}
ITEMS = [{"id": "p1", "responses": ["Magic coins, always opposite.", "Correlated quantum states."]},
         {"id": "p2", "responses": ["Code flows like water", "Bugs hide in the shadows"]}]


def _report(schemes: list[dict[str, Any]], **keys: Any) -> Any:
    return validate(upstream(annotation_schemes=schemes, item_properties={"id_key": "id", "text_key": "responses"},
                             **keys), CONFIG)


def _project(root: Path) -> Path:
    return write_project(root, "Pairs", ITEMS, [BINARY, SCALE, DIMENSIONS], text_key="responses", data="pairs.jsonl")


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        yield path, client


def _label(client: Any, item_id: str, labels: dict[str, Any], partial: bool = True) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": partial, "labels": labels})


# -- the config ------------------------------------------------------------------------------------

def test_upstreams_three_modes_validate() -> None:
    report = _report([BINARY, SCALE, DIMENSIONS])
    assert report.errors == []
    binary, scale, dims = report.config.annotation_schemes
    assert binary.labels == ("A", "B", "tie")
    assert [(o.shown, o.key) for o in binary.options] == [("Response A", "1"), ("Response B", "2"),
                                                          ("Equally helpful", "3")]
    assert (scale.min_value, scale.max_value, scale.step, scale.starting_value) == (-3, 3, 1, 0)
    assert (scale.min_label, scale.center_label, scale.max_label) == (
        "Response A: A is much better", "Equal", "Response B: B is much better")
    assert dims.dimension_names == ("helpfulness", "safety") and dims.tie_dimensions == ("helpfulness",)
    # Which of two is better is a preference model's to learn; by how much, or on each dimension, none's.
    assert (binary.training_type, scale.training_type, dims.training_type) == ("pairwise", None, None)
    hidden = _report([{**BINARY, "show_labels": False}]).config.annotation_schemes[0]
    assert [o.shown for o in hidden.options] == ["A", "B", "Equally helpful"]


def test_a_wrong_pairwise_scheme_says_what_is_wrong_and_how_to_fix_it() -> None:
    def errors(scheme: dict[str, Any], **keys: Any) -> list[str]:
        return [issue.message for issue in _report([scheme], **keys).errors]

    assert errors({**BINARY, "mode": "ranking"}) == [
        "annotation_schemes[0].mode: 'ranking' is not a valid mode; valid choices: binary, scale, multi_dimension"]
    assert errors({**BINARY, "labels": ["Only one"]}) == [
        "annotation_schemes[0].labels: names the two options compared, e.g. [Response A, Response B]; got a list of 1 item(s)"]
    assert errors({**SCALE, "scale": {"min": 3, "max": -3}}) == [
        "annotation_schemes[0].scale.max: must be greater than scale.min (3), got -3"]
    assert errors({**SCALE, "allow_tie": True}) == [
        "annotation_schemes[0].allow_tie: applies to binary and multi_dimension comparisons; a scale's middle is its "
        "tie: remove allow_tie"]
    assert errors({**DIMENSIONS, "dimensions": [{"name": "x"}, {"name": "x"}]}) == [
        "annotation_schemes[0].dimensions[1].name: 'x' names two dimensions; give each its own name"]
    assert errors({**DIMENSIONS, "justification": {"required": "yes"}}) == [
        "annotation_schemes[0].justification.required: must be true or false, got 'yes'"]
    assert errors({**BINARY, "items_key": "answers"}) == [
        "annotation_schemes[0].items_key: names 'answers', which the page does not show (it shows responses); name "
        "the key of the item that holds the two options, e.g. items_key: responses"]


# -- answers ---------------------------------------------------------------------------------------

def test_each_mode_stores_its_answer_and_refuses_one_it_does_not_take(project: tuple[Path, Any]) -> None:
    path, client = project
    page = client.get("/annotate").get_data(as_text=True)
    assert 'data-type="radio"' in page and 'data-type="slider"' in page and 'data-type="rows"' in page
    assert "A. Magic coins, always opposite." in client.get("/api/item/1").get_json()["item"]["text"]
    saved = _label(client, "p1", {"helpfulness": "tie", "overall": -2, "dims": {"helpfulness": "tie", "safety": "B"}},
                   partial=False)
    assert saved.status_code == 200, saved.get_json()
    assert _stored(path) == {("p1", "helpfulness"): "tie", ("p1", "overall"): -2,
                             ("p1", "dims"): {"helpfulness": "tie", "safety": "B"}}
    assert _label(client, "p1", {"overall": 5}).get_json()["error"] == (
        "5 is not an answer to 'overall' (valid: a number from -3 to 3 in steps of 1)")
    assert _label(client, "p1", {"dims": {"safety": "tie"}}).get_json()["error"] == (
        "{'safety': 'tie'} is not an answer to 'dims' (valid: an object of choices by dimension (helpfulness, "
        "safety), each A or B (or tie on helpfulness))")
    # Required, a comparison on several dimensions needs a choice on each before the item is done.
    open_one = _label(client, "p2", {"helpfulness": "A", "overall": 1, "dims": {"safety": "A"}}, partial=False)
    assert open_one.get_json()["error"] == (
        "'dims' needs an answer on every row (helpfulness still open): it is required")
    assert _label(client, "p2", {"dims": {"safety": "A"}}).status_code == 200  # as it is picked: kept
    assert _stored(path)[("p2", "dims")] == {"safety": "A"}


# -- export and import -----------------------------------------------------------------------------

def _annotate(client: Any) -> None:
    for item_id, labels in (("p1", {"helpfulness": "A", "overall": -3, "dims": {"helpfulness": "tie", "safety": "B"}}),
                            ("p2", {"helpfulness": "tie", "overall": 2, "dims": {"helpfulness": "B", "safety": "A"}})):
        assert _label(client, item_id, labels, partial=False).status_code == 200


def test_upstreams_layout_names_each_answer_as_upstreams_page_does(project: tuple[Path, Any], tmp_path: Path) -> None:
    path, client = project
    _annotate(client)
    assert _run("export", path, "--upstream-format", "jsonl", "-o", tmp_path / "up").exit_code == 0
    rows = [json.loads(line) for line in (tmp_path / "up" / "annotations.jsonl").read_text().splitlines()]
    labels = {row["instance_id"]: row["labels"] for row in rows}
    assert labels["p1"] == {"helpfulness": {"selection": "A"}, "overall": {"scale_value": "-3"},
                            "dims": {"helpfulness": "tie", "safety": "B"}}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(project: tuple[Path, Any], tmp_path: Path,
                                                             fmt: str) -> None:
    path, client = project
    _annotate(client)
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh")
    result = _run("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)


WHY = {**DIMENSIONS, "name": "agent_comparison", "label_requirement": {"required": False},
       "justification": {"required": True, "reason_categories": ["More accurate", "Safer"], "min_rationale_chars": 12,
                         "rationale_placeholder": "Explain your overall preference..."}}


def test_a_justification_is_asked_with_its_comparison_and_stored_apart(tmp_path: Path) -> None:
    """Upstream's multi-dim-comparison: reasons and a rationale of at least min_rationale_chars, kept
    apart from the choices (the comparison's answer stays the preference models' data), and exported
    as upstream's justification JSON beside them."""
    report = _report([WHY])
    assert report.errors == []
    comparison, why = report.config.annotation_schemes
    assert (why.name, why.free_response_of, why.labels, why.min_length, why.required) == (
        "agent_comparison:justification", "agent_comparison", ("More accurate", "Safer"), 12, True)
    assert [i.message for i in _report([{**WHY, "justification": {"reasons": ["x"]}}]).errors][0].startswith(
        "annotation_schemes[0].justification.reasons: unknown key for justification")
    path = _project(tmp_path / "project")
    config = json.loads(path.read_text())
    path.write_text(json.dumps({**config, "annotation_schemes": [WHY]}), encoding="utf-8")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-type="justification"' in page and 'placeholder="Explain your overall preference..."' in page
        choices = {"helpfulness": "A", "safety": "B"}
        short = _label(client, "p1", {"agent_comparison": choices, "agent_comparison:justification": {
            "reasons": ["Safer"], "rationale": "B is safer"}}, partial=False)
        assert short.get_json()["error"] == ("'agent_comparison:justification' needs a rationale of at least 12 "
                                             "characters: it is required")
        why_given = {"reasons": ["Safer", "More accurate"], "rationale": "B refuses the risky step."}
        assert _label(client, "p1", {"agent_comparison": choices, "agent_comparison:justification": why_given},
                      partial=False).status_code == 200
        assert _label(client, "p1", {"agent_comparison:justification": {"reasons": ["Shorter"]}}).status_code == 400
    assert _stored(path) == {("p1", "agent_comparison"): choices, ("p1", "agent_comparison:justification"): why_given}
    assert _run("export", path, "--upstream-format", "jsonl", "-o", tmp_path / "up").exit_code == 0
    labels = json.loads((tmp_path / "up" / "annotations.jsonl").read_text().splitlines()[0])["labels"]
    assert set(labels) == {"agent_comparison"}
    assert json.loads(labels["agent_comparison"].pop("justification")) == why_given
    assert labels["agent_comparison"] == choices
    fresh = _project(tmp_path / "fresh")
    fresh.write_text(json.dumps({**config, "annotation_schemes": [WHY]}), encoding="utf-8")
    result = _run("import-labels", fresh, tmp_path / "up" / "annotations.jsonl", "--user", "ann")
    assert result.exit_code == 0, result.output
    assert _stored(fresh) == _stored(path)
