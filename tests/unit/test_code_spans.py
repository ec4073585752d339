"""Issue 45 (moving upstream's projects over): spans marked on a code field (``span_target: true`` on a
``type: code`` field), as upstream's code-annotation example marks them: the code as it is written is
the text the spans' offsets count in, and each span is stored with the code it covers."""

from __future__ import annotations

from pathlib import Path

from potato.config import validate
from tests.harness.labelstore import annotator, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
CODE = "def add(a, b):\n    return a - b  # <script>x()</script>\n"
FIELDS = [{"key": "code", "type": "code", "label": "Source Code", "span_target": True,
           "display_options": {"language": "python", "show_line_numbers": True}},
          {"key": "text", "type": "text", "label": "Description"}]
ISSUES = {"annotation_type": "span", "name": "code_issues", "description": "Mark the bugs", "labels": ["bug", "style"]}


def test_spans_on_a_code_field_count_in_the_code_as_written(tmp_path: Path) -> None:
    report = validate(upstream(annotation_schemes=[ISSUES], instance_display={"fields": FIELDS}), CONFIG)
    assert report.errors == []
    path = write_project(tmp_path / "project", "Code", [{"id": "k1", "text": "Adds two numbers", "code": CODE}], [ISSUES],
                         instance_display={"fields": FIELDS})
    at = CODE.index("a - b")
    with annotator(path) as client:
        field = client.get("/api/item/1").get_json()["item"]["fields"][0]
        assert field["span_target"] and field["text"] == CODE and field["span_field"] == "code"
        sent = [{"start": at, "end": at + 5, "label": "bug", "field": "code"}]
        assert client.post("/api/label", json={"id": "k1", "go": "stay", "labels": {"code_issues": sent}}).status_code == 200
        past = [{"start": 0, "end": len(CODE) + 1, "label": "bug", "field": "code"}]
        assert client.post("/api/label", json={"id": "k1", "go": "stay", "labels": {"code_issues": past}}).status_code == 400
    assert stored_answers(path) == {("k1", "code_issues"): [{**sent[0], "text": "a - b"}]}
