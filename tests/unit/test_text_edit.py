"""Issue 45 (item 3): upstream's post-editing (``text_edit``), as its classification/text-edit example
configures it: the item's field ``source_field`` (a machine translation) shown and rewritten in a box
that starts with it. Stored as upstream stores it, ``{"edited_text", "original_text",
"edit_distance_chars", "edit_distance_words"}``, the distances counted by the server (never taken
from what was sent); an edit of another original is refused; both exports import back."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Sequence

import pytest

from potato.config import validate
from potato.edits import edit_distance, edit_record
from potato.errors import LabelImportError
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
POST_EDIT = {"annotation_type": "text_edit", "name": "post_edit",
             "description": "Edit the machine translation output to produce a fluent, accurate translation",
             "source_field": "mt_output", "show_diff": True, "show_edit_distance": True, "allow_reset": True}
MT = "The government has yesterday a new law for the regulation of the internet corporations passed."
FIXED = "Yesterday the government passed a new law regulating internet corporations."
ITEMS = [{"id": "te001", "text": "Source (German): Die Regierung hat gestern ein neues Gesetz verabschiedet.",
          "mt_output": MT},
         {"id": "te002", "text": "Source (French): Les chercheurs ont découvert.", "mt_output": "The researchers <b>have</b> discovered."}]


def _table(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Levenshtein distance by the textbook table, to check the fast one against."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def test_the_edit_distance_is_levenshteins_for_characters_and_words() -> None:
    rng = random.Random(7)
    for _ in range(400):
        a = "".join(rng.choice("abc ") for _ in range(rng.randint(0, 70)))
        b = "".join(rng.choice("abcd ") for _ in range(rng.randint(0, 70)))
        assert edit_distance(a, b) == _table(a, b), (a, b)
        assert edit_distance(a.split(), b.split()) == _table(a.split(), b.split())
    assert edit_distance("kitten", "sitting") == 3 and edit_distance("", "abc") == 3 and edit_distance("same", "same") == 0
    long = "word " * 4000
    assert edit_distance(long, long.replace("word", "ward", 3)) == 3  # a page of text, counted at once
    assert edit_record(MT, FIXED) == {"edited_text": FIXED, "original_text": MT,
                                      "edit_distance_chars": _table(MT, FIXED),
                                      "edit_distance_words": _table(MT.split(), FIXED.split())}


def _project(root: Path, scheme: dict[str, Any] = POST_EDIT) -> Path:
    return write_project(root, "Post-editing", ITEMS, [scheme])


def _label(client: Any, item_id: str, value: Any) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": True, "labels": {"post_edit": value}})


def test_upstreams_text_edit_validates_as_a_rewrite_of_a_field() -> None:
    report = validate(upstream(annotation_schemes=[POST_EDIT]), CONFIG)
    assert report.errors == []
    scheme = report.config.annotation_schemes[0]
    assert (scheme.edit_source, scheme.show_diff, scheme.show_edit_distance, scheme.allow_reset) == ("mt_output", True, True, True)
    assert scheme.training_type is None
    plain = validate(upstream(annotation_schemes=[{"annotation_type": "text_edit", "name": "fix", "show_diff": False}]),
                     CONFIG).config.annotation_schemes[0]
    assert plain.edit_source == "" and not plain.show_diff  # no source_field: the item's own text
    assert scheme.accepts({"edited_text": FIXED}) and scheme.accepts(edit_record(MT, FIXED))
    for bad in ({}, {"edited_text": 3}, {"text": FIXED}, FIXED, {"edited_text": "x" * (scheme.max_length + 1)}):
        assert not scheme.accepts(bad)
    errors = [i.message for i in validate(upstream(annotation_schemes=[{**POST_EDIT, "labels": ["a"]}]), CONFIG).errors]
    assert errors == ["annotation_schemes[0].labels: a text_edit scheme's answer is the rewritten text; remove labels"]


def test_the_server_counts_the_distances_and_refuses_an_edit_of_another_text(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-type="edit"' in page and "Reset to Original" in page and 'class="edit-stats' in page
        assert client.get("/api/item/1").get_json()["item"]["edit_sources"] == {"post_edit": {"text": MT}}
        # What the page counted is not taken: the server counts again.
        sent = {"edited_text": FIXED, "original_text": MT, "edit_distance_chars": 0, "edit_distance_words": 0}
        assert _label(client, "te001", sent).status_code == 200
        refused = _label(client, "te002", {"edited_text": "x", "original_text": "Another text."})
        assert refused.status_code == 400 and refused.get_json()["error"] == (
            "'post_edit': it edits 'Another text.', but this item's text to edit is 'The researchers <b>have</b> "
            "discovered.'; edit the item's text as it is now")
        # No change needed: the original kept as it is (the page's Reset) is an answer, distance 0.
        assert _label(client, "te002", {"edited_text": ITEMS[1]["mt_output"]}).status_code == 200
    assert stored_answers(path) == {("te001", "post_edit"): edit_record(MT, FIXED),
                                    ("te002", "post_edit"): edit_record(ITEMS[1]["mt_output"], ITEMS[1]["mt_output"])}
    assert stored_answers(path)[("te002", "post_edit")]["edit_distance_chars"] == 0


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, "te001", {"edited_text": FIXED}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":  # upstream's layout: the record as JSON text, named by the scheme
        row = json.loads(source.read_text().splitlines()[0])
        assert json.loads(row["labels"]["post_edit"]["post_edit"]) == edit_record(MT, FIXED)
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) == {("te001", "post_edit"): edit_record(MT, FIXED)}


def test_an_import_of_an_edit_of_another_text_is_refused(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    source = tmp_path / "labels.jsonl"
    source.write_text(json.dumps({"id": "te001", "schema": "post_edit",
                                  "label": {"edited_text": "x", "original_text": "An older translation."}}) + "\n",
                      encoding="utf-8")
    with pytest.raises(LabelImportError) as refused:
        invoke("import-labels", path, source, "--user", "ann")
    assert "'post_edit' on item 'te001': it edits 'An older translation.'" in str(refused.value)
    assert stored_answers(path) == {}
