"""Issue 45 (item 3): upstream's ``span_link``, as its span-linking, dependency-tree and threaded-forum
examples configure it: links between the spans of another question (``span_schema``), each of one of
``link_types`` (``directed``; the labels its first and last span may have). Spans are named by position
and checked against the item's text; a link is kept only while its spans are marked; both exports
import back; a span_schema naming no span scheme, or a label that scheme lacks, is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
TEXT = "John Smith works at Google with Ada."
ENTITIES = {"annotation_type": "span", "name": "entities", "description": "Mark the entities",
            "labels": ["PERSON", "ORGANIZATION"]}
RELATIONS = {"annotation_type": "span_link", "name": "relations", "description": "Link the entities",
             "span_schema": "entities",
             "link_types": [{"name": "WORKS_FOR", "directed": True, "allowed_source_labels": ["PERSON"],
                             "allowed_target_labels": ["ORGANIZATION"], "color": "#dc2626"},
                            {"name": "COLLABORATES_WITH", "directed": False}],
             "visual_display": {"enabled": True, "arc_position": "above"}}
JOHN = {"start": 0, "end": 10, "label": "PERSON"}
GOOGLE = {"start": 20, "end": 26, "label": "ORGANIZATION"}
ADA = {"start": 32, "end": 35, "label": "PERSON"}


def _project(root: Path) -> Path:
    return write_project(root, "Relations", [{"id": "r1", "text": TEXT}], [ENTITIES, RELATIONS])


def _label(client: Any, labels: dict[str, Any]) -> Any:
    return client.post("/api/label", json={"id": "r1", "go": "stay", "labels": labels})


def test_the_keys_are_upstreams_and_the_span_scheme_must_be_one() -> None:
    report = validate(upstream(annotation_schemes=[ENTITIES, RELATIONS]), CONFIG)
    assert report.errors == []
    links = report.config.annotation_schemes[1]
    assert links.link_spans == "entities"
    assert [(t.name, t.directed, t.sources, t.targets) for t in links.link_types] == [
        ("WORKS_FOR", True, ("PERSON",), ("ORGANIZATION",)), ("COLLABORATES_WITH", False, (), ())]
    bad = validate(upstream(annotation_schemes=[ENTITIES, {**RELATIONS, "span_schema": "entity"},
                                                {**RELATIONS, "name": "r2", "link_types": [
                                                    {"name": "X", "allowed_source_labels": ["PLACE"]}]}]), CONFIG)
    assert [e.message for e in bad.errors] == [
        "annotation_schemes[1].span_schema: names 'entity', which is not a span scheme of this config (its span "
        "schemes: entities); name the span scheme whose spans the links join",
        "annotation_schemes[2].link_types[0]: names the label 'PLACE', which 'entities' does not have (its labels: "
        "PERSON, ORGANIZATION)"]


def test_links_are_stored_by_their_spans_and_go_when_a_span_goes(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        links = [{"link_type": "WORKS_FOR", "spans": [JOHN, GOOGLE]}, {"link_type": "COLLABORATES_WITH", "spans": [JOHN, ADA]}]
        assert _label(client, {"entities": [JOHN, GOOGLE, ADA], "relations": links}).status_code == 200
        backwards = _label(client, {"relations": [{"link_type": "WORKS_FOR", "spans": [GOOGLE, JOHN]}]})
        assert backwards.get_json()["error"] == (
            "'relations': a WORKS_FOR link starts at a span labelled PERSON, not ORGANIZATION")
        nowhere = _label(client, {"relations": [{"link_type": "WORKS_FOR", "spans": [JOHN, {**GOOGLE, "end": 99}]}]})
        assert nowhere.get_json()["error"].startswith("'relations': a WORKS_FOR link joins a span that is not one here:")
        alone = _label(client, {"relations": [{"link_type": "COLLABORATES_WITH", "spans": [ADA, ADA]}]})
        assert alone.get_json()["error"] == "'relations': a COLLABORATES_WITH link joins at least two different spans"
        assert stored_answers(path)[("r1", "relations")] == [
            {"link_type": "WORKS_FOR", "spans": [{**JOHN, "text": "John Smith"}, {**GOOGLE, "text": "Google"}],
             "direction": "directed"},
            {"link_type": "COLLABORATES_WITH", "spans": [{**JOHN, "text": "John Smith"}, {**ADA, "text": "Ada"}],
             "direction": "undirected"}]
        # Ada unmarked: her link goes with her; then Google too, and no link is left.
        assert _label(client, {"entities": [JOHN, GOOGLE]}).status_code == 200
        assert [link["link_type"] for link in stored_answers(path)[("r1", "relations")]] == ["WORKS_FOR"]
        assert _label(client, {"entities": [JOHN]}).status_code == 200
        assert ("r1", "relations") not in stored_answers(path)


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, {"entities": [JOHN, GOOGLE], "relations": [
            {"link_type": "WORKS_FOR", "spans": [JOHN, GOOGLE]}]}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":
        labels = json.loads(source.read_text().splitlines()[0])["labels"]
        assert json.loads(labels["relations"]["relations"])[0]["link_type"] == "WORKS_FOR"
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path)
