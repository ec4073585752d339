"""Issue 45 (item 3): upstream's ``card_sort`` in its closed mode, as its classification/card-sort example
configures it: each of the item's cards (its list under ``items_field``) put in one of ``groups`` (or
several, with ``allow_multiple``); with ``allow_empty_groups: false`` the item is not done until every
group has a card. Stored as upstream stores it, ``{group: [card, ...]}``; a card the item lacks, or
one put in two groups, is refused; open mode is refused by name; both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.card_sort import cards_of
from potato.config import validate
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
HOSTILE = '<img src=x onerror="window.__pwned=1">'
SORT = {"annotation_type": "card_sort", "name": "topic_groups", "description": "Put each headline in its topic",
        "mode": "closed", "groups": ["Science", "Technology", "Health"], "items_field": "items",
        "allow_empty_groups": True, "allow_multiple": False}
ITEMS = [{"id": "c1", "text": "Sort these headlines", "items": ["Water ice found on Mars", f"New headset {HOSTILE}",
                                                                  "Flu vaccine trial", "Water ice found on Mars"]},
         {"id": "c2", "text": "Nothing to sort", "items": []}]


def _project(root: Path, **scheme: Any) -> Path:
    return write_project(root, "Cards", ITEMS, [{**SORT, **scheme}])


def _label(client: Any, value: Any, go: str = "stay") -> Any:
    return client.post("/api/label", json={"id": "c1", "go": go, "labels": {"topic_groups": value}})


def test_the_keys_are_upstreams_and_open_mode_is_refused_by_name() -> None:
    report = validate(upstream(annotation_schemes=[SORT]), CONFIG)
    assert report.errors == []
    sort = report.config.annotation_schemes[0]
    assert (sort.labels, sort.sort_cards, sort.cards_anywhere, sort.groups_filled) == (
        ("Science", "Technology", "Health"), "items", False, False)
    bad = validate(upstream(annotation_schemes=[{**SORT, "mode": "open"}, {**SORT, "name": "b", "groups": ["Only"]}]), CONFIG)
    assert [e.message for e in bad.errors] == [
        "annotation_schemes[0].mode: 'card_sort mode: open' is a Potato feature this server does not support: groups "
        "annotators make themselves; list the groups under groups and use mode: closed; remove it or run that project "
        "on upstream Potato",
        "annotation_schemes[1].groups: list at least two groups to sort the cards into, such as [Science, Politics]"]
    assert cards_of(["a", {"text": "b"}, {"label": "c"}, 3, "a"]) == ["a", "b", "c", "3"]


def test_a_sorting_is_stored_by_group_and_what_does_not_fit_is_refused(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert client.get("/api/item/1").get_json()["item"]["cards"]["topic_groups"] == [
            "Water ice found on Mars", f"New headset {HOSTILE}", "Flu vaccine trial"]
        assert _label(client, {"Health": ["Flu vaccine trial"], "Science": ["Water ice found on Mars"],
                               "Technology": []}).status_code == 200
        twice = _label(client, {"Science": ["Flu vaccine trial"], "Health": ["Flu vaccine trial"]})
        assert twice.get_json()["error"] == (
            "'topic_groups': 'Flu vaccine trial' is in 'Science' and 'Health'; a card goes in one group")
        stranger = _label(client, {"Science": ["Fusion breakthrough"]})
        assert stranger.get_json()["error"].startswith("'topic_groups': this item's cards are 'Water ice found on Mars'")
    assert stored_answers(path) == {("c1", "topic_groups"): {"Science": ["Water ice found on Mars"],
                                                             "Health": ["Flu vaccine trial"]}}
    several = _project(tmp_path / "several", allow_multiple=True, allow_empty_groups=False)
    with annotator(several) as client:
        both = {"Science": ["Flu vaccine trial"], "Health": ["Flu vaccine trial"]}
        left = _label(client, both, go="next")
        assert left.status_code == 400 and left.get_json()["error"] == (
            "'topic_groups' needs a card in every group (Technology still empty)")
        assert _label(client, {**both, "Technology": [f"New headset {HOSTILE}"]}, go="next").status_code == 200


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, {"Technology": [f"New headset {HOSTILE}"]}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":
        labels = json.loads(source.read_text().splitlines()[0])["labels"]
        assert json.loads(labels["topic_groups"]["topic_groups"]) == {"Technology": [f"New headset {HOSTILE}"]}
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path)
