"""Issue 42 (item 15): upstream's data forms show what they hold, and every display option upstream
documents is drawn or named: none passes silently while it changes what the study is."""

from __future__ import annotations

from pathlib import Path

import pytest

from potato.config import validate
from potato.display.fields import field_payload, media_path, option_verdict, span_text, table
from tests.harness.upstream import upstream

UPSTREAM_DISPLAY_OPTIONS = {
    "text": ["collapsible", "max_height", "preserve_whitespace"],
    "image": ["max_width", "max_height", "zoomable", "alt_text", "object_fit"],
    "dialogue": ["alternating_shading", "speaker_extraction", "speaker_key", "text_key", "show_turn_numbers",
                 "per_turn_ratings", "indent_replies", "max_indent_depth", "show_reply_lines", "show_timestamps",
                 "timestamp_format", "turn_meta_fields", "meta_key", "depth_key", "reply_to_key"],
    "code": ["language", "show_line_numbers", "max_height", "max_width", "wrap_lines", "highlight_lines", "start_line",
             "theme", "copy_button"],
    "document": ["collapsible", "max_height", "show_outline", "preserve_structure", "style_theme", "annotation_mode",
                 "bbox_min_size", "show_bbox_labels"],
    "pdf": ["view_mode", "max_height", "max_width", "text_layer", "show_page_controls", "initial_page", "zoom",
            "extracted_content", "annotation_mode", "bbox_min_size", "bbox_colors", "show_bbox_labels",
            "anchor_labels", "link_types", "enable_text_anchors", "enable_region_anchors", "thumbnail_sidebar",
            "anchor_schema", "link_schema", "ocr"],
    "spreadsheet": ["annotation_mode", "show_headers", "max_height", "max_width", "striped", "hoverable", "sortable",
                    "filterable", "selectable", "compact", "border_style", "header_style", "custom_class",
                    "custom_css"],
    "agent_trace": ["speaker_key", "text_key", "show_step_numbers", "show_summary", "show_timestamps",
                    "collapse_observations", "step_type_colors", "show_screenshots", "compact", "show_run_tree"],
    "eval_trace": ["pane_labels", "show_step_numbers", "collapse_long_outputs", "max_output_lines", "link_steps",
                   "compact", "speaker_key", "text_key"],
    "coding_trace": ["show_file_tree", "collapse_long_outputs", "max_output_lines", "show_step_numbers",
                     "show_reasoning", "diff_view", "terminal_theme", "show_tool_badges", "compact"],
    "multi_agent_discussion": ["speaker_key", "text_key", "show_turn_numbers", "show_legend", "show_addressees",
                               "thread_replies", "collapse_environment"],
    "cot_trace": ["show_step_numbers", "show_types", "show_rail", "collapse_long_steps", "clamp_lines", "compact",
                  "step_type_colors", "speaker_key", "text_key"],
}
"""Upstream Potato's documented display options per field type (the names are facts of its
interface: each display's optional_fields), as a study moving over may carry them."""
VALUES = {"annotation_mode": "link", "anchor_labels": ["claim"], "link_types": [{"name": "supports"}],
          "per_turn_ratings": {"speakers": ["Agent"], "schema_name": "turn_quality", "scheme": {"type": "likert", "size": 5}}, "speaker_key": "who", "text_key": "said", "max_width": 600,
          "timestamp_format": "absolute", "view_mode": "paginated", "turn_meta_fields": ["tokens"],
          "pane_labels": ["Thinking", "Tools", "Answer"], "max_output_lines": 10, "diff_view": "side_by_side",
          "terminal_theme": "light", "step_type_colors": {"thought": "#eef"}, "clamp_lines": 4}


def findings_for(kind: str, option: str, tmp_path: Path) -> tuple[list[str], list[str]]:
    (tmp_path / "media").mkdir(exist_ok=True)
    field = {"key": "value", "type": kind, "display_options": {option: VALUES.get(option, True)}}
    report = validate(upstream(instance_display={"fields": [{"key": "text", "type": "text"}, field]},
                           media_directory="media"), tmp_path / "c.yaml")
    return [e.message for e in report.errors], [w.message for w in report.warnings]


@pytest.mark.parametrize("kind, option", [(kind, option) for kind, options in UPSTREAM_DISPLAY_OPTIONS.items()
                                          for option in options])
def test_every_display_option_upstream_documents_is_drawn_or_named(kind: str, option: str, tmp_path: Path) -> None:
    errors, warnings = findings_for(kind, option, tmp_path)
    at = f"instance_display.fields[1].display_options.{option}: "
    verdict, _ = option_verdict(kind, option)
    if verdict == "use":
        assert not any(at in text for text in errors + warnings), (errors, warnings)
    elif verdict == "refuse":
        assert any(text.startswith(at) and "is a Potato feature this server does not support" in text
                   for text in errors), errors
    else:  # a look-only option: named, and the study runs
        assert errors == [] and any(text.startswith(at) for text in warnings), warnings


def test_options_that_change_what_a_study_is_are_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "media").mkdir()
    pdf = {"key": "paper", "type": "pdf", "display_options": {"annotation_mode": "link", "anchor_schema": "anchors",
                                                              "link_schema": "links", "link_types": [{"name": "cites"}]}}
    sheet = {"key": "rows", "type": "spreadsheet", "display_options": {"annotation_mode": "row"}}
    report = validate(upstream(instance_display={"fields": [{"key": "text", "type": "text"}, pdf, sheet]},
                               media_directory="media"), tmp_path / "c.yaml")
    found = [e.message for e in report.errors]
    assert ("instance_display.fields[1].display_options.annotation_mode: 'annotation_mode' is a Potato feature this "
            "server does not support: spans, bounding boxes or links on a PDF; remove it or run that project on "
            "upstream Potato") in found
    assert any(m.startswith("instance_display.fields[1].display_options.link_schema: ") for m in found)
    assert any(m.startswith("instance_display.fields[2].display_options.annotation_mode: ") and
               "annotating a table's rows, cells or ranges" in m for m in found)
    typo = findings_for("dialogue", "show_turn_number", tmp_path)[1]
    assert any(w.startswith("instance_display.fields[1].display_options.show_turn_number: is not a display option of "
                            "dialogue fields") and "show_turn_numbers" in w for w in typo)


def test_upstreams_data_forms_show_what_they_hold() -> None:
    assert media_path("/media/sample-paper.pdf") == "sample-paper.pdf"  # upstream's address of a media file
    assert field_payload("pdf", "Paper", "/media/sample-paper.pdf", {}, "/media/")["src"] == "/media/sample-paper.pdf"
    assert media_path("/media/../secret_key") is None and media_path("/etc/passwd") is None
    assert table({"headers": ["name", "score"], "rows": [["Ada", 3], ["Bo", 1]]}) == (
        ["name", "score"], [["Ada", "3"], ["Bo", "1"]], 0)
    assert table({"headers": ["name"], "rows": [{"name": "Ada", "extra": 1}]}) == (["name"], [["Ada"]], 0)
    assert table({"rows": [{"a": 1}, {"b": 2}]}) == (["a", "b"], [["1", ""], ["", "2"]], 0)


def test_a_dialogue_numbers_its_turns_and_reads_upstreams_turn_keys() -> None:
    turns = [{"who": "Agent", "said": "Hello"}, {"who": "User", "said": "Hi"}]
    options = {"show_turn_numbers": True, "speaker_key": "who", "text_key": "said"}
    shown = field_payload("dialogue", "Chat", turns, options, "/media/")
    assert shown["numbered"] is True
    assert shown["turns"] == [{"speaker": "Agent", "text": "Hello"}, {"speaker": "User", "text": "Hi"}]
    # The numbers are drawn beside the turns, never in the text that spans count offsets in.
    assert span_text("dialogue", turns, options) == "Agent: Hello\nUser: Hi"
    assert field_payload("dialogue", "Chat", turns, {}, "/media/")["numbered"] is False


def test_a_validating_config_with_every_documented_key_leaves_none_unread(tmp_path: Path) -> None:
    """What scripts/upstream-census counts over upstream's examples, held here over a config of ours:
    every key upstream documents for the fields, their layout and their options, where the study
    still validates, is read by the validator or named by a finding; none passes in silence."""
    from potato.config.unread import unread_keys

    (tmp_path / "media").mkdir()
    fields = [{"key": "text", "type": "text", "label": "Review", "span_target": True}]
    for kind, options in UPSTREAM_DISPLAY_OPTIONS.items():
        kept = {o: VALUES.get(o, True) for o in options if option_verdict(kind, o)[0] != "refuse"}
        fields.append({"key": kind, "type": kind, "label": kind.title(), "display_options": kept})
    schemes = upstream()["annotation_schemes"]
    schemes[0]["layout"] = {"columns": 2}
    raw = upstream(instance_display={"fields": fields, "layout": {"direction": "horizontal", "gap": "20px"},
                                     "resizable": True},
                   media_directory="media", annotation_schemes=schemes,
                   data_files=[{"path": "data/reviews.json", "encoding": "utf-8", "format": "json"}])
    report, unread = unread_keys(raw, tmp_path / "c.yaml")
    assert report.errors == [] and unread == []
    warned = [w.path for w in report.warnings]
    assert "instance_display.layout.gap" in warned and "instance_display.resizable" in warned
    assert "annotation_schemes[0].layout" in warned


def test_the_unread_key_census_finds_a_key_nothing_asked_for() -> None:
    from potato.config.unread import key_paths, noted

    reads: set[str] = set()
    config = noted({"a": {"b": 1, "c": [{"d": 2}]}, "e": 3}, "", reads)
    assert config["a"].get("b") == 1 and config["a"]["c"][0]["d"] == 2
    assert list(key_paths({"a": {"b": 1, "c": [{"d": 2}]}, "e": 3})) == ["a", "a.b", "a.c", "a.c[0].d", "e"]
    assert reads == {"a", "a.b", "a.c", "a.c[0].d"}  # "e" was never asked for: the census lists it


def test_a_data_file_whose_format_disagrees_with_its_extension_is_named(tmp_path: Path) -> None:
    raw = upstream(data_files=[{"path": "data/reviews.json", "format": "csv"}])
    found = [e.message for e in validate(raw, tmp_path / "c.yaml").errors]
    assert found == ["data_files[0].format: is 'csv', but this server reads a file by its extension (.json); give "
                     "the file the extension of its format (.json, .jsonl, .csv or .tsv) and remove format"]
