"""Issue 45 (moving upstream's projects over): upstream's ``pure_display``, as its all-annotation-types
example uses it: a block between the questions that shows its description and labels (Markdown, or
harmless HTML with ``allow_html``) and takes no answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

from potato.config import validate
from tests.harness.labelstore import annotator, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
HEADER = {"annotation_type": "pure_display", "name": "scale_header", "description": "## Scale & Rating Types",
          "labels": ["Rate **each** item.", "<script>window.__pwned=1</script>"]}
TRUSTED = {"annotation_type": "pure_display", "name": "note", "description": "<b>Careful</b><img src=x onerror=alert(1)>",
           "allow_html": True}
RADIO = {"annotation_type": "radio", "name": "sentiment", "description": "Sentiment", "labels": ["positive", "negative"]}


def test_a_display_block_shows_its_text_and_takes_no_answer(tmp_path: Path) -> None:
    report = validate(upstream(annotation_schemes=[HEADER, RADIO, TRUSTED]), CONFIG)
    assert report.errors == []
    header, _, trusted = report.config.annotation_schemes
    assert header.display_text == "## Scale & Rating Types\n\nRate **each** item.\n\n<script>window.__pwned=1</script>"
    assert trusted.display_html and not header.display_html
    bad = validate(upstream(annotation_schemes=[{**HEADER, "labels": [{"name": "x"}]}]), CONFIG)
    assert [e.message for e in bad.errors] == [
        "annotation_schemes[0].labels: a pure_display scheme's labels are the lines it shows, as a list of text; got "
        "a list of 1 item(s)"]
    path = write_project(tmp_path / "project", "Blocks", [{"id": "b1", "text": "An item"}], [HEADER, RADIO, TRUSTED])
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        blocks = {name: json.loads(raw.replace("&#39;", "'").replace("&#34;", '"').replace("&amp;", "&"))
                  for name, raw in re.findall(r'data-schema="(\w+)" data-blocks=\'([^\']*)\'', page)}
        assert blocks["scale_header"][0] == ["h2", {}, ["Scale & Rating Types"]]
        assert "script" not in json.dumps(blocks["note"]) and "onerror" not in json.dumps(blocks["note"])
        assert page.count('<fieldset class="scheme') == 1  # the blocks are no questions
        refused = client.post("/api/label", json={"id": "b1", "go": "stay", "labels": {"scale_header": "x"}})
        assert refused.status_code == 400 and "(valid: nothing: it is shown, not answered)" in refused.get_json()["error"]
        assert client.post("/api/label", json={"id": "b1", "go": "next", "labels": {"sentiment": "positive"}}).status_code == 200
    assert stored_answers(path) == {("b1", "sentiment"): "positive"}
