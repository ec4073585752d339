"""Issue 45 (item 3): upstream's step-by-step reviews of an item's parts besides tool calls and
handoffs, as its agent-traces examples configure them: each block of a multimodal reasoning trace
(``multimodal_reasoning``: its ``type_key``, a verdict of ``verdict_options`` and notes), each step of a
GUI agent on its screenshot (``gui_trajectory``: ``screenshot_key``, ``action_key``, ``coord_space``)
and each segment of a timed transcript (``speech_transcript``: ``segments_key``, ``error_types`` and a
correction with ``allow_correction``). Stored as upstream stores them, a list of the parts given an
answer by their number (a segment with its times, from the item); both exports import back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.reviews import gui_steps, reasoning, segments
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
CHART = "data:image/svg+xml;utf8,<svg xmlns='http://www.w3.org/2000/svg' width='30' height='16'/>"
REASONING = {"annotation_type": "multimodal_reasoning", "name": "reasoning_review",
             "description": "Judge each step", "steps_key": "steps", "type_key": "type",
             "verdict_options": ["coherent", "incoherent", "visual_hallucination", "uncertain"]}
GUI = {"annotation_type": "gui_trajectory", "name": "gui_review", "description": "Was each action right?",
       "steps_key": "clicks", "screenshot_key": "screenshot", "action_key": "action", "coord_space": "normalized"}
SPEECH = {"annotation_type": "speech_transcript", "name": "speech_errors", "description": "Tag speech errors",
          "segments_key": "segments", "error_types": ["asr_error", "tts_artifact", "mispronunciation", "disfluency"],
          "allow_correction": True}
ITEM = {"id": "v1", "text": "Which quarter had the highest revenue?",
        "steps": [{"type": "text", "text": "Let me look at the chart."},
                  {"type": "image", "caption": "Bar chart: Q3 tallest", "image": CHART},
                  {"type": "tool", "tool": "zoom", "args": {"region": "Q3"}},
                  {"type": "action", "action": "Answer: Q3"}],
        "clicks": [{"action": "click Settings", "x": 0.18, "y": 0.82, "screenshot": CHART},
                   {"action": "type 'dark'", "click": {"x": 120, "y": 40}}],
        "segments": [{"speaker": "user", "start": 0.0, "end": 1.6, "text": "what's the whether like today"},
                     {"speaker": "agent", "start": 1.9, "end": 4.2, "text": "It is sunny."}]}


def _project(root: Path, schemes: list[dict[str, Any]] | None = None) -> Path:
    return write_project(root, "Reviews", [ITEM, {"id": "v2", "text": "nothing to review"}],
                         schemes or [REASONING, GUI, SPEECH])


def _label(client: Any, item_id: str, labels: dict[str, Any]) -> Any:
    return client.post("/api/label", json={"id": item_id, "go": "stay", "partial": True, "labels": labels})


def test_each_block_step_and_segment_is_read_as_upstreams_pages_read_them() -> None:
    blocks = reasoning(ITEM["steps"], "type")
    assert [(b.place, b.detail, b.image, b.caption) for b in blocks] == [
        ("text", "Let me look at the chart.", "", ""), ("image", "", CHART, "Bar chart: Q3 tallest"),
        ("tool", 'zoom\n{\n  "region": "Q3"\n}', "", ""), ("action", "Answer: Q3", "", "")]
    # Without a type, a block is what it holds.
    assert [b.place for b in reasoning([{"image_url": CHART}, {"tool_call": {"name": "f"}}, "plain"], "kind")] == [
        "image", "tool", "text"]
    shots = gui_steps(ITEM["clicks"], "screenshot", "action", "normalized")
    assert [(s.detail, s.marker, s.caption) for s in shots] == [
        ("click Settings\nclick at 0.18, 0.82", (0.18, 0.82), ""), ("type 'dark'\nclick at 120, 40", None, "no screenshot")]
    # Pixels are written out but not placed: the page does not know the screenshot's size in them.
    assert gui_steps(ITEM["clicks"], "screenshot", "action", "pixels")[0].marker is None
    said = segments(ITEM["segments"] + ["plain words"])
    assert [(s.name, s.place, dict(s.names), s.detail) for s in said] == [
        ("0.0–1.6 s", "user", {"start": 0.0, "end": 1.6}, "what's the whether like today"),
        ("1.9–4.2 s", "agent", {"start": 1.9, "end": 4.2}, "It is sunny."),
        ("0.0–0.0 s", "", {"start": 0.0, "end": 0.0}, "plain words")]


def test_the_keys_are_upstreams_and_their_words_are_the_answers() -> None:
    report = validate(upstream(annotation_schemes=[REASONING, GUI, SPEECH]), CONFIG)
    assert report.errors == []
    mmr, gui, speech = report.config.annotation_schemes
    assert (mmr.review_steps, mmr.review_answers, dict(mmr.review_reads)) == ("steps", ("verdict", "notes"), {"type": "type"})
    assert gui.labels == ("correct", "wrong_element", "wrong_action", "hallucinated")  # upstream's, when not given
    assert dict(gui.review_reads) == {"screenshot": "screenshot", "action": "action", "coord_space": "normalized"}
    assert (speech.review_steps, speech.review_answers) == ("segments", ("errors", "correction"))
    no_fix = validate(upstream(annotation_schemes=[{**SPEECH, "allow_correction": False}]), CONFIG)
    assert no_fix.config.annotation_schemes[0].review_answers == ("errors",)
    bad = validate(upstream(annotation_schemes=[{**SPEECH, "error_types": "asr_error"},
                                                {**GUI, "coord_space": "inches"}, {**REASONING, "labels": ["a"]}]), CONFIG)
    assert [e.message for e in bad.errors] == [
        "annotation_schemes[0].error_types: must be a list of different words, such as [asr_error, disfluency], got "
        "'asr_error'",
        "annotation_schemes[1].coord_space: 'inches' is not a valid coord_space; valid choices: normalized, pixels",
        "annotation_schemes[2].labels: a multimodal_reasoning scheme's answers are its verdict_options; remove labels, and "
        "list them under verdict_options"]


def test_each_part_is_stored_by_its_number_and_a_part_the_item_lacks_is_refused(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-part="errors" value="asr_error"' in page and 'data-part="correction"' in page
        parts = client.get("/api/item/1").get_json()["item"]["review_parts"]
        assert parts["gui_review"][0]["marker"] == [0.18, 0.82] and parts["reasoning_review"][1]["image"] == CHART
        sent = {"reasoning_review": [{"index": 3, "verdict": "visual_hallucination", "notes": "Q4 is taller"},
                                     {"index": 0, "verdict": ""}],
                "gui_review": [{"index": 1, "verdict": "wrong_action"}],
                "speech_errors": [{"index": 0, "start": 9, "errors": ["asr_error"], "correction": "what's the weather like today"}]}
        assert _label(client, "v1", sent).status_code == 200
        refused = _label(client, "v1", {"speech_errors": [{"index": 2, "errors": ["disfluency"]}]})
        assert refused.get_json()["error"] == "'speech_errors': this item has 2 to review, numbered 0 to 1; there is no 2"
        wrong = _label(client, "v1", {"gui_review": [{"index": 0, "verdict": "fine"}]})
        assert wrong.get_json()["error"] == (
            "[{'index': 0, 'verdict': 'fine'}] is not an answer to 'gui_review' (valid: a list of {\"index\": a step's "
            "number (0 for the first), \"verdict\": one of correct, wrong_element, wrong_action, hallucinated, \"notes\": "
            "text of at most 5000 characters})")
        empty = _label(client, "v2", {"reasoning_review": [{"index": 0, "verdict": "coherent"}]})
        assert empty.get_json()["error"] == "'reasoning_review': this item has nothing to review here; leave the answer out"
    assert stored_answers(path) == {
        ("v1", "reasoning_review"): [{"index": 3, "verdict": "visual_hallucination", "notes": "Q4 is taller"}],
        ("v1", "gui_review"): [{"index": 1, "verdict": "wrong_action"}],
        ("v1", "speech_errors"): [{"index": 0, "start": 0.0, "end": 1.6, "errors": ["asr_error"],
                                   "correction": "what's the weather like today"}]}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert _label(client, "v1", {"reasoning_review": [{"index": 1, "verdict": "coherent"}],
                                     "gui_review": [{"index": 0, "verdict": "correct", "notes": "landed"}],
                                     "speech_errors": [{"index": 1, "errors": ["tts_artifact", "disfluency"]}]}).status_code == 200
    source = exported(path, tmp_path, fmt)
    if fmt == "jsonl":  # upstream's: each review one JSON text under the scheme's name
        labels = json.loads(source.read_text().splitlines()[0])["labels"]
        assert json.loads(labels["speech_errors"]["speech_errors"]) == [
            {"index": 1, "start": 1.9, "end": 4.2, "errors": ["tts_artifact", "disfluency"]}]
    fresh = _project(tmp_path / "fresh")
    result = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) and len(stored_answers(fresh)) == 3


def test_an_image_is_loaded_only_from_the_item_an_https_address_or_media_directory() -> None:
    from potato.server.annotate import _with_image

    part = {"image": CHART, "caption": "chart"}
    assert _with_image(part, "/media/") == part
    assert _with_image({"image": "shots/1.png", "caption": ""}, "/media/") == {"image": "/media/shots/1.png", "caption": ""}
    assert _with_image({"image": "javascript:alert(1)", "caption": "x"}, "/media/") == {
        "image": "", "caption": "image not shown: javascript: addresses are not shown; use https:// or a file"}
    assert _with_image({"image": "data:text/html,<script>1</script>", "caption": ""}, "/media/")["image"] == ""
