"""Issue 36 (instance_display): each field type as the page draws it, and nothing in an item can
become markup (pure), plus the config, the media files and the validator's check of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from potato.cli import cli
from potato.config import load_config, validate
from potato.display.fields import (dialogue_turns, display_problems, field_payload, markdown, media_path, media_problem,
                                   pdf_pages, sanitise_html, table)
from potato.server import close_app, create_app
from tests.harness.upstream import upstream


def tags(tree: Any) -> list[str]:
    """Every tag in a document tree, depth first."""
    out: list[str] = []
    for node in tree:
        if isinstance(node, list):
            out.append(node[0])
            out += tags(node[2])
    return out


def text_of(tree: Any) -> str:
    return "".join(n if isinstance(n, str) else text_of(n[2]) for n in tree)


def test_html_documents_keep_their_structure_and_lose_their_code() -> None:
    tree = sanitise_html('<h2 onclick="x()">Title</h2><p>Some <b>bold</b> and <a href="https://e.example/a">a link</a>'
                         ' and <a href="javascript:alert(1)">a trap</a>.</p><script>steal()</script>'
                         '<style>body{}</style><img src=x onerror="steal()"><iframe srcdoc="<script>x</script>">'
                         '</iframe><ul><li>one<li>two</ul><svg><script>x()</script></svg>')
    assert tags(tree) == ["h2", "p", "b", "a", "a", "ul", "li", "li"]
    assert tree[0] == ["h2", {}, ["Title"]]  # no onclick: only an http(s) link's href is kept, ever
    links = [n for n in tree[1][2] if isinstance(n, list) and n[0] == "a"]
    assert links[0][1] == {"href": "https://e.example/a"} and links[1][1] == {}
    assert "steal" not in json.dumps(tree) and "body{}" not in json.dumps(tree)


def test_markdown_documents() -> None:
    tree = markdown("# Guide\n\nRead **this** and `that`, then [go](https://e.example/x).\n\n- one\n- two\n\n"
                    "1. first\n2. second\n\n> quoted\n\n```\n<script>x</script>\n```\n\n[bad](javascript:alert(1))"
                    "\n\n<b>raw</b>")
    assert tags(tree) == ["h1", "p", "strong", "code", "a", "ul", "li", "li", "ol", "li", "li", "blockquote", "p",
                          "pre", "code", "p", "p"]
    assert tree[-3] == ["pre", {}, [["code", {}, ["<script>x</script>"]]]]  # code is text, shown as written
    assert tags([tree[-2]]) == ["p"] and text_of([tree[-2]]).startswith("bad")  # a javascript: link loses its link
    assert tree[-1] == ["p", {}, ["<b>raw</b>"]]  # HTML inside Markdown is shown as text


def test_dialogue_turns_from_strings_and_objects() -> None:
    assert dialogue_turns(["Alice: Hi there", "Bob: Hello: again", "no speaker here"]) == [
        {"speaker": "Alice", "text": "Hi there"}, {"speaker": "Bob", "text": "Hello: again"},
        {"speaker": "", "text": "no speaker here"}]
    assert dialogue_turns([{"speaker": "A", "text": "x"}]) == [{"speaker": "A", "text": "x"}]
    assert dialogue_turns(["Alice: Hi"], extract=False) == [{"speaker": "", "text": "Alice: Hi"}]


def test_tables_from_objects_rows_and_csv() -> None:
    assert table([{"a": 1, "b": "x"}, {"b": "y", "c": True}]) == (["a", "b", "c"], [["1", "x", ""], ["", "y", "True"]], 0)
    assert table([["h1", "h2"], [1, 2]]) == (["h1", "h2"], [["1", "2"]], 0)
    assert table('name,score\n"Ada, L.",3\n') == (["name", "score"], [["Ada, L.", "3"]], 0)
    big = table([["n"]] + [[i] for i in range(1005)])
    assert len(big[1]) == 1000 and big[2] == 5


@pytest.mark.parametrize("value, path, problem", [
    ("img/cat.png", "img/cat.png", None),
    ("https://e.example/cat.png", None, None),
    ("../secret.png", None, "the path leaves media_directory; name a file inside it"),
    ("/etc/passwd", None, "the path leaves media_directory; name a file inside it"),
    ("javascript:alert(1)", None, "javascript: addresses are not shown; use https:// or a file"),
    ("data:image/svg+xml,<svg onload=x>", None, "data: addresses are not shown; use https:// or a file"),
    ("", None, "this item has no file or address here"),
])
def test_media_values(value: str, path: str | None, problem: str | None) -> None:
    assert media_path(value) == path and media_problem(value) == problem


def test_field_payloads() -> None:
    image = field_payload("image", "Photo", "img/a b.png", {"max_width": 600, "alt_text": "A cat"}, "/media/")
    assert image == {"label": "Photo", "type": "image", "src": "/media/img/a%20b.png", "alt": "A cat", "zoomable": True,
                     "max_width": "600px"}
    assert field_payload("image", "Photo", "javascript:alert(1)", {}, "/media/") == {
        "label": "Photo", "type": "text", "text": "[image not shown: javascript: addresses are not shown; use https:// "
                                                  "or a file]"}
    assert field_payload("code", "Code", "x = 1", {"language": "python"}, "/media/")["language"] == "python"
    doc = field_payload("document", "Doc", "<p>hi</p>", {}, "/media/")
    assert doc["blocks"] == [["p", {}, ["hi"]]]


def test_pdf_page_count() -> None:
    assert pdf_pages(b"%PDF-1.4 1 0 obj << /Type /Pages /Count 2 >> 2 0 obj << /Type /Page >> 3 0 obj "
                     b"<</Type/Page>>") == 2
    assert pdf_pages(b"not a pdf") is None


def test_display_problems_name_missing_files(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"x")
    items = [("i1", {"img": "a.png"}), ("i2", {"img": "b.png"}), ("i3", {"img": "https://e.example/c.png"})]
    assert display_problems([(0, "img", "image")], items, tmp_path) == [
        ("instance_display.fields[0]", f"item 'i2' names 'b.png', which is not in media_directory {tmp_path}; put the "
                                       "file there or fix the item")]
    assert display_problems([(0, "img", "image")], items, None)[0][1].endswith(
        "but the config has no media_directory; set media_directory: <the folder of the files>")


def test_field_types_validate_and_span_targets_stay_text(tmp_path: Path) -> None:
    fields = [{"key": "text", "type": "text", "span_target": True}, {"key": "img", "type": "image"},
              {"key": "turns", "type": "dialogue"}, {"key": "src", "type": "code"}, {"key": "rows", "type": "spreadsheet"},
              {"key": "doc", "type": "document"}, {"key": "paper", "type": "pdf"}]
    (tmp_path / "media").mkdir()
    report = validate(upstream(instance_display={"fields": fields}, media_directory="media"), tmp_path / "c.yaml")
    assert report.errors == [] and report.config is not None
    assert [f.type for f in report.config.page.display_fields] == ["text", "image", "dialogue", "code", "spreadsheet",
                                                                   "document", "pdf"]
    assert report.config.media_directory == tmp_path / "media"
    bad = validate(upstream(instance_display={"fields": [{"key": "img", "type": "image", "span_target": True}]}),
                   tmp_path / "c.yaml")
    assert [e.message for e in bad.errors] == [
        "instance_display.fields[0].span_target: spans mark text; a image field cannot be their target (mark a text, "
        "dialogue or code field instead)"]
    depth = validate(upstream(instance_display={"fields": [{"key": "v", "type": "depth_map"}]}), tmp_path / "c.yaml")
    assert depth.errors[0].message.startswith("instance_display.fields[0].type: 'type: depth_map' is a Potato feature")
    missing = validate(upstream(media_directory="nope"), tmp_path / "c.yaml")
    assert [e.message for e in missing.errors] == [
        f"media_directory: {tmp_path / 'nope'} is not a folder; make it and put the items' image and PDF files there, "
        "or fix the path (it is relative to task_dir)"]


def test_validate_names_a_missing_media_file(make_project: Callable[..., Path]) -> None:
    path = make_project(instance_display={"fields": [{"key": "text", "type": "text"},
                                                     {"key": "photo", "type": "image"}]}, media_directory="media")
    (path.parent / "media").mkdir()
    data = path.parent / "data" / "reviews.json"
    items = json.loads(data.read_text())
    for i, item in enumerate(items):
        item["photo"] = f"p{i}.png"
        (path.parent / "media" / f"p{i}.png").write_bytes(b"png")
    (path.parent / "media" / "p3.png").unlink()
    data.write_text(json.dumps(items))
    out = CliRunner().invoke(cli, ["validate", str(path)])
    assert out.exit_code == 1
    assert (f"instance_display.fields[1]: item 'r003' names 'p3.png', which is not in media_directory "
            f"{path.parent / 'media'}; put the file there or fix the item") in out.output


def test_media_files_are_served_to_annotators_only(make_project: Callable[..., Path]) -> None:
    path = make_project(instance_display={"fields": [{"key": "text", "type": "text"}, {"key": "photo", "type": "image"}]},
                        media_directory="media")
    (path.parent / "media").mkdir()
    (path.parent / "media" / "cat.png").write_bytes(b"\x89PNG fake")
    (path.parent / "secret.txt").write_text("not for annotators")
    data = path.parent / "data" / "reviews.json"
    data.write_text(json.dumps([{**item, "photo": "cat.png"} for item in json.loads(data.read_text())]))
    app = create_app(load_config(path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        client = app.test_client()
        assert client.get("/media/cat.png").status_code == 302  # sign in first
        client.post("/login", data={"name": "ana"})
        with client.get("/media/cat.png") as served:
            assert served.data == b"\x89PNG fake"
        assert client.get("/media/../secret.txt").status_code == 404
        assert client.get("/media/%2E%2E/secret.txt").status_code == 404
        assert client.get("/media/nope.png").status_code == 404
        item = client.get("/api/move?go=stay&from=0").get_json()["item"]
        assert item["fields"][1] == {"label": "photo", "type": "image", "src": "/media/cat.png", "alt": "photo",
                                     "zoomable": True}
        policy = client.get("/annotate").headers["Content-Security-Policy"]
        assert "img-src 'self' data: https:" in policy and "script-src localhost/static/;" in policy
    finally:
        close_app(app)


def test_validate_names_an_item_whose_file_is_a_link_and_the_fix(make_project: Callable[..., Path],
                                                                tmp_path: Path) -> None:
    """Issue 42 item 10: an item naming a link to annotation_output/secret_key (or /etc/passwd) passed
    validate, and the server then handed the key to annotators."""
    fields = [{"key": "text", "type": "text"}, {"key": "photo", "type": "image"}, {"key": "paper", "type": "pdf"}]
    path = make_project(n_items=4, instance_display={"fields": fields}, media_directory="media")
    media = path.parent / "media"
    media.mkdir()
    (media / "cat.png").write_bytes(b"png")
    (media / "paper.pdf").write_bytes(b"%PDF-1.4 ...")
    (media / "key.png").symlink_to(path.parent / "annotation_output" / "secret_key")
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "dog.png").write_bytes(b"png")
    (media / "pics").symlink_to(tmp_path / "pics", target_is_directory=True)
    (media / "page.pdf").write_text("<html><script src=evil.js></script></html>")
    data = path.parent / "data" / "reviews.json"
    items = json.loads(data.read_text())
    rows = [("cat.png", "paper.pdf"), ("key.png", "paper.pdf"), ("pics/dog.png", "paper.pdf"), ("cat.png", "page.pdf")]
    data.write_text(json.dumps([{**item, "photo": photo, "paper": paper} for item, (photo, paper) in zip(items, rows)]))
    out = CliRunner().invoke(cli, ["validate", str(path)])
    assert out.exit_code == 1
    text = " ".join(out.output.split())
    assert (f"instance_display.fields[1]: item 'r001' names 'key.png', which is reached through a link in "
            f"media_directory {media}: key.png -> {path.parent / 'annotation_output' / 'secret_key'}. Links there are "
            "not followed (one could hand any file of the server to annotators), so annotators would not see it: put "
            "the file itself in place of the link (a copy: cp -L), or set media_directory to the folder the link leads "
            "to") in text
    assert (f"instance_display.fields[1]: item 'r002' names 'pics/dog.png', which is reached through a link in "
            f"media_directory {media}: pics -> {tmp_path / 'pics'}.") in text
    assert ("instance_display.fields[2]: item 'r003' names 'page.pdf', which is not a PDF (it does not begin with "
            "%PDF-), and a pdf field shows PDF files only: convert it to PDF, or show it with a field of its own type "
            "(image, document)") in text
    assert "'r000'" not in text


def test_validate_refuses_a_file_of_the_output_folder(make_project: Callable[..., Path]) -> None:
    path = make_project(n_items=2, instance_display={"fields": [{"key": "text", "type": "text"},
                                                                {"key": "photo", "type": "image"}]}, media_directory=".")
    (path.parent / "annotation_output").mkdir()
    (path.parent / "annotation_output" / "secret_key").write_bytes(b"k" * 32)
    data = path.parent / "data" / "reviews.json"
    data.write_text(json.dumps([{**item, "photo": "annotation_output/secret_key"} for item in json.loads(data.read_text())]))
    out = CliRunner().invoke(cli, ["validate", str(path)])
    assert out.exit_code == 1
    assert (f"item 'r000' names 'annotation_output/secret_key', which lies in output_annotation_dir "
            f"{path.parent / 'annotation_output'}, which holds the server's secret key and database and is never "
            "served; keep media_directory apart from it") in " ".join(out.output.split())
