"""Issue 45 (item 3): upstream's ``conjoint``, as its classification/conjoint example configures it:
``profiles_per_set`` profiles, each a level of every one of ``attributes`` (or the item's own under
``profiles_field``), one chosen, or none of them with ``show_none_option``. The set is the same for
every annotator and visit of an item, and the stored choice holds the profiles it was made among,
written from the item; both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.conjoint import made_profiles
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
ATTRIBUTES = [{"name": "Response Speed", "levels": ["Instant", "Fast", "Moderate"]},
              {"name": "Accuracy", "levels": ["Mostly accurate", "Highly accurate", "Near-perfect"]},
              {"name": "Privacy Level", "levels": ["Stores history", "No data retention"]}]
CHOICE = {"annotation_type": "conjoint", "name": "assistant_preference", "description": "Which assistant would you use?",
          "profiles_per_set": 3, "attributes": ATTRIBUTES, "show_none_option": True}
OWN = [{"Tone": "Formal", "Length": "Brief"}, {"Tone": "Casual", "Length": "Long"}]
ITEMS = [{"id": "j1", "text": "Everyday tasks"}, {"id": "j2", "text": "Work tasks", "offers": OWN}]


def _label(client: Any, item_id: str, value: Any) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "labels": {"assistant_preference": value}})


def test_a_set_is_made_from_the_attributes_the_same_each_time() -> None:
    report = validate(upstream(annotation_schemes=[CHOICE]), CONFIG)
    assert report.errors == []
    scheme = report.config.annotation_schemes[0]
    assert scheme.conjoint_attributes[0] == ("Response Speed", ("Instant", "Fast", "Moderate"))
    attributes = scheme.conjoint_attributes
    first = made_profiles(attributes, 3, "s\x1fj1")
    assert first == made_profiles(attributes, 3, "s\x1fj1") and len({json.dumps(p) for p in first}) == 3
    assert all(p[name] in levels for p in first for name, levels in attributes)
    assert len(made_profiles((("Only", ("one",)),), 3, "x")) == 3  # fewer kinds than profiles: repeats, no hang
    bad = validate(upstream(annotation_schemes=[{**CHOICE, "attributes": [{"name": "Speed"}]},
                                                {**CHOICE, "name": "b", "attributes": None, "profiles_per_set": 5}]), CONFIG)
    assert [e.message for e in bad.errors] == [
        "annotation_schemes[0].attributes[0]: needs a name and levels, such as {name: Speed, levels: [Fast, Slow]}",
        "annotation_schemes[1].profiles_per_set: must be a whole number from 2 to 4, got 5",
        "annotation_schemes[1].attributes: missing; list the attributes and their levels, such as [{name: Speed, "
        "levels: [Fast, Slow]}], or name the item's profiles with profiles_field"]


def test_a_choice_is_stored_with_the_profiles_it_was_made_among(tmp_path: Path) -> None:
    path = write_project(tmp_path / "project", "Conjoint", ITEMS, [CHOICE])
    with annotator(path) as client:
        shown = client.get("/api/item/1").get_json()["item"]["profiles"]["assistant_preference"]
        assert len(shown) == 3 and shown == client.get("/api/item/1").get_json()["item"]["profiles"]["assistant_preference"]
        sent = {"chosen_profile": 2, "profiles": [{"Response Speed": "made up"}]}  # the sent profiles are not kept
        assert _label(client, "j1", sent).status_code == 200
        assert _label(client, "j1", {"chosen_profile": 4}).get_json()["error"] == (
            "'assistant_preference': this set has 3 profiles, numbered 1 to 3; there is no 4")
        assert _label(client, "j1", {"chosen_profile": 0}).status_code == 400
    assert stored_answers(path) == {("j1", "assistant_preference"): {"chosen_profile": 2, "profiles": shown}}
    own = write_project(tmp_path / "own", "Conjoint", ITEMS, [{**CHOICE, "profiles_field": "offers", "attributes": None,
                                                               "show_none_option": False}])
    with annotator(own) as client:
        assert client.get("/api/item/2").get_json()["item"]["profiles"]["assistant_preference"] == OWN
        assert _label(client, "j2", {"chosen_profile": "none"}).status_code == 400
        assert _label(client, "j2", {"chosen_profile": 1}).status_code == 200
    assert stored_answers(own) == {("j2", "assistant_preference"): {"chosen_profile": 1, "profiles": OWN}}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = write_project(tmp_path / "project", "Conjoint", ITEMS, [CHOICE])
    with annotator(path) as client:
        assert _label(client, "j1", {"chosen_profile": "none"}).status_code == 200
    source = exported(path, tmp_path, fmt)
    fresh = write_project(tmp_path / "fresh", "Conjoint", ITEMS, [CHOICE])
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path)
