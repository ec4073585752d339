"""Issue 45 (moving upstream's projects over): a codebook named as a file of media_directory, as
upstream's long-guidelines example names it (``annotation_codebook_url: /media/codebook.html``). An
HTML or Markdown codebook is shown as a page of this server, read into harmless elements as a document
field is (a whole HTML page never runs in the server's origin); another file (a PDF) is linked as the
media route sends it; a file that is not there, or a path that leaves the folder, is refused at
validation."""

from __future__ import annotations

import json
import re
from pathlib import Path

from potato.config import load_report
from tests.harness.labelstore import annotator, write_project

RADIO = {"annotation_type": "radio", "name": "polite", "description": "Polite?", "labels": ["yes", "no"]}
CODEBOOK = ('<!DOCTYPE html><html><head><style>body{color:red}</style><script>window.__pwned=1</script></head>'
            '<body><h1>Politeness codebook</h1><p>A <strong>polite</strong> request <a href="javascript:x()">x</a></p>'
            '<img src=x onerror="window.__pwned=1"></body></html>')


def _project(root: Path, url: str, files: dict[str, str]) -> Path:
    path = write_project(root, "Codebook", [{"id": "c1", "text": "Could you pass the salt?"}], [RADIO],
                         annotation_codebook_url=url, media_directory="media")
    (root / "media").mkdir()
    for name, text in files.items():
        (root / "media" / name).write_text(text, encoding="utf-8")
    return path


def test_an_html_codebook_is_a_page_of_harmless_elements(tmp_path: Path) -> None:
    path = _project(tmp_path / "html", "/media/codebook.html", {"codebook.html": CODEBOOK})
    assert load_report(path).errors == []
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert '<a class="codebook" href="/codebook"' in page
        shown = client.get("/codebook")
        assert shown.status_code == 200
        raw = re.search(r"data-blocks='([^']*)'", shown.get_data(as_text=True)).group(1)  # type: ignore[union-attr]
        blocks = json.loads(raw.replace("&#39;", "'").replace("&#34;", '"').replace("&amp;", "&").replace("&lt;", "<")
                            .replace("&gt;", ">"))
        text = json.dumps(blocks)
        assert "Politeness codebook" in text and "polite" in text
        assert "script" not in text and "onerror" not in text and "javascript" not in text and "color:red" not in text


def test_a_markdown_codebook_and_a_pdf_codebook(tmp_path: Path) -> None:
    path = _project(tmp_path / "md", "/media/guide.md", {"guide.md": "# Guide\n\nBe **kind**."})
    with annotator(path) as client:
        assert '["h1", {}, ["Guide"]]' in client.get("/codebook").get_data(as_text=True).replace("&#34;", '"')
    pdf = _project(tmp_path / "pdf", "/media/guide.pdf", {"guide.pdf": "%PDF-1.4 not much of one"})
    with annotator(pdf) as client:
        assert '<a class="codebook" href="/media/guide.pdf"' in client.get("/annotate").get_data(as_text=True)
        assert client.get("/codebook").status_code == 404  # a PDF is no codebook page: the media route sends it


def test_a_codebook_that_is_not_there_or_leaves_the_folder_is_refused(tmp_path: Path) -> None:
    missing = _project(tmp_path / "missing", "/media/codebook.html", {})
    assert [e.message for e in load_report(missing).errors] == [
        f"annotation_codebook_url: /media/codebook.html: there is no 'codebook.html' in media_directory "
        f"{tmp_path / 'missing' / 'media'}; put the codebook there, or fix the address"]
    leaving = _project(tmp_path / "leaving", "/media/../config.yaml", {})
    assert load_report(leaving).errors[0].message == (
        "annotation_codebook_url: /media/../config.yaml names a file of media_directory, which a path cannot leave; "
        "name a file inside it")
    nothing = write_project(tmp_path / "none", "Codebook", [{"id": "c1", "text": "x"}], [RADIO],
                            annotation_codebook_url="/media/codebook.html")
    assert load_report(nothing).errors[0].message == (
        "annotation_codebook_url: /media/codebook.html names a file of media_directory, which this config does not "
        "set; set media_directory to the folder that holds it")
