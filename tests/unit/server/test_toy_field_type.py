"""Issue 43: a new display field type is a registration of its own, as a backend and a platform are.
This test registers a toy type from here alone: a config names it and its display options are
checked by what the type says of them, and the item API hands the page what the type draws."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import pytest

from potato.config import load_report
from potato.display import fields
from potato.display.fields import FieldType, register_field_type


def stars(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    return {"stars": int(value or 0), "of": int(options.get("max", 5))}


STARS = FieldType("stars", stars, honoured=frozenset({"max"}), looks=frozenset({"color"}),
                  refused={"per_star_notes": "a note on each star"})


@pytest.fixture
def toy_type() -> Iterator[None]:
    register_field_type(STARS)
    yield
    fields.FIELD_KINDS.pop("stars")


def shown(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"fields": [{"key": "text", "type": "text"},
                       {"key": "rating", "type": "stars", "label": "Rating", "display_options": dict(options)}]}


def with_ratings(root: Path) -> None:
    data = root / "data" / "reviews.json"
    data.write_text(json.dumps([{**item, "rating": 3} for item in json.loads(data.read_text())]))


def test_a_config_names_the_toy_type_and_its_options_are_checked(toy_type: None,
                                                                 make_project: Callable[..., Path]) -> None:
    report = load_report(make_project(instance_display=shown({"max": 10, "color": "gold"})))
    assert report.errors == []
    assert [w.message for w in report.warnings if "color" in w.message], report.warnings  # look-only: named
    refused = load_report(make_project(instance_display=shown({"per_star_notes": True})))
    assert any("a note on each star" in e.message for e in refused.errors), refused.errors
    marked = load_report(make_project(instance_display={"fields": [{"key": "text", "type": "text"}, {
        "key": "rating", "type": "stars", "span_target": True}]}))
    assert any("cannot be their target" in e.message for e in marked.errors), marked.errors


def test_the_page_gets_what_the_toy_type_draws(toy_type: None, make_client: Callable[..., Any]) -> None:
    client = make_client(with_ratings, instance_display=shown({"max": 10}))
    assert client.post("/login", data={"name": "alice"}).status_code == 302
    field = client.get("/api/item/1").get_json()["item"]["fields"][1]
    assert field == {"label": "Rating", "type": "stars", "stars": 3, "of": 10}


def test_a_type_name_is_registered_once(toy_type: None) -> None:
    with pytest.raises(ValueError, match="exists already"):
        register_field_type(FieldType("stars", lambda value, options, label, media_url: {}))
