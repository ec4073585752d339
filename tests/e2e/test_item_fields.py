"""Issue 36 (instance_display) in a real browser, under gunicorn: an item shown as an image, a
dialogue, code, a table, a document and a PDF, every field full of hostile markup; nothing in an
item runs, the CSP is never even tested, and the page fits a phone and is used by keyboard."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.mediafiles import two_page_pdf
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
TEXT_HOSTILE = '<script>window.__pwned=1</script><svg onload="window.__pwned=1"></svg>'
"""(An item text with an <img> tag is refused at load: upstream's media projects put media there.)"""
FIELDS = [{"key": "text", "type": "text", "label": "Review"},
          {"key": "photo", "type": "image", "label": "Photo", "display_options": {"zoomable": True}},
          {"key": "turns", "type": "dialogue", "label": "Chat"},
          {"key": "src", "type": "code", "label": "Code", "display_options": {"language": "python"}},
          {"key": "rows", "type": "spreadsheet", "label": "Table"},
          {"key": "doc", "type": "document", "label": "Guide"},
          {"key": "paper", "type": "pdf", "label": "Paper"}]


def png_1x1() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    path = make_project(n_items=2, instance_display={"fields": FIELDS, "layout": {"direction": "vertical"}},
                        media_directory="media")
    media = path.parent / "media"
    media.mkdir()
    (media / "cat.png").write_bytes(png_1x1())
    (media / "paper.pdf").write_bytes(two_page_pdf())
    items = [{"id": f"r00{i}", "text": f"Review {i} {TEXT_HOSTILE}", "photo": "cat.png",
              "turns": [f"Alice: hello {HOSTILE}", {"speaker": "Bob", "text": HOSTILE}, "Alice: bye"],
              "src": f"def f(x):\n    # {HOSTILE}\n    return 'x' + 1  </code>{HOSTILE}",
              "rows": [{"name": HOSTILE, "score": 3}, {"name": "Ada", "score": 5}],
              "doc": f"<h2>Guide</h2><p>Read <strong>this</strong> <a href=\"javascript:window.__pwned=1\">x</a>"
                     f"</p>{HOSTILE}<ul><li>one</li></ul><iframe srcdoc=\"{HOSTILE}\"></iframe>",
              "paper": "paper.pdf"} for i in range(2)]
    (path.parent / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_every_field_type_shows_and_nothing_in_an_item_runs(server: ServerProcess, page: Any, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text))
    page.goto(server.url + "/")
    page.fill("#name", "ana")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")
    page.wait_for_selector(".field-image img")
    page.wait_for_function("document.querySelector('.field-image img').naturalWidth > 0")

    for shown in ("r000", "r001"):
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.querySelectorAll('#item-text script, #item-text iframe[srcdoc]').length") == 0
        assert page.evaluate("""[...document.querySelectorAll('#item-text *')].some(
            e => [...e.attributes].some(a => a.name.startsWith('on')))""") is False
        assert page.evaluate("document.querySelectorAll('#item-text a[href^=javascript]').length") == 0
        assert TEXT_HOSTILE in page.inner_text(".field-text")  # the item's text is shown as the text it is
        assert page.inner_text(".document h2") == "Guide" and page.inner_text(".document strong") == "this"
        assert page.inner_text(".document li") == "one"
        assert page.eval_on_selector_all(".dialogue .turn .speaker", "els => els.map(e => e.textContent)") == [
            "Alice", "Bob", "Alice"]
        classes = page.eval_on_selector_all(".dialogue .turn", "els => els.map(e => e.className)")
        assert classes[0] == classes[2] != classes[1]  # each speaker shaded their own way
        assert page.eval_on_selector_all(".tok-keyword", "els => els.map(e => e.textContent)")[:2] == ["def", "return"]
        assert page.eval_on_selector_all("table.spreadsheet th", "els => els.map(e => e.textContent)") == ["name", "score"]
        assert page.inner_text("table.spreadsheet tbody tr:first-child td") == HOSTILE
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        if shown == "r000":  # on to the second item, as hostile as the first (and the last: the PDF is read there)
            page.keyboard.press("ArrowRight")
            page.wait_for_selector("#item-id:text('r001')")

    # The PDF: a paged viewer over the media file.
    assert page.inner_text(".pdf-where") == "Page 1 of 2"
    page.focus(".pdf-next")
    page.keyboard.press("Enter")
    assert page.inner_text(".pdf-where") == "Page 2 of 2"
    assert page.get_attribute("iframe.pdf-page", "src") == "/media/paper.pdf#page=2"
    assert page.is_disabled(".pdf-next")
    # The image zooms from the keyboard.
    page.focus(".field-image .zoom")
    page.keyboard.press("Enter")
    assert page.get_attribute(".field-image .zoom", "aria-pressed") == "true"
    assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console


def test_upstreams_data_forms_show_what_they_hold(make_project: Callable[..., Path], page: Any) -> None:
    """Issue 42 (item 15): upstream's `/media/sample-paper.pdf` and `{"headers", "rows"}` validated and
    then showed a note and an empty table; `show_turn_numbers` did nothing."""
    fields = [{"key": "text", "type": "text", "label": "Review"},
              {"key": "turns", "type": "dialogue", "label": "Chat", "span_target": True,
               "display_options": {"show_turn_numbers": True, "speaker_key": "role", "text_key": "content"}},
              {"key": "rows", "type": "spreadsheet", "label": "Table"},
              {"key": "paper", "type": "pdf", "label": "Paper"}]
    spans = [{"annotation_type": "span", "name": "claims", "description": "Mark the claims", "labels": ["claim"]}]
    path = make_project(n_items=1, instance_display={"fields": fields}, media_directory="media",
                        annotation_schemes=spans)
    (path.parent / "media").mkdir()
    (path.parent / "media" / "sample-paper.pdf").write_bytes(two_page_pdf())
    items = [{"id": "r000", "text": "A review.", "paper": "/media/sample-paper.pdf",
              "turns": [{"role": "user", "content": "Is it safe?"}, {"role": "assistant", "content": "Yes."}],
              "rows": {"headers": ["model", "score"], "rows": [["a", 0.9], ["b", 0.7]]}}]
    (path.parent / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    srv = ServerProcess(path).start()
    try:
        page.goto(srv.url + "/")
        page.fill("#name", "ana")
        page.press("#name", "Enter")
        page.wait_for_selector(".pdf-where")
        assert page.inner_text(".pdf-where") == "Page 1 of 2"
        assert page.get_attribute("iframe.pdf-page", "src") == "/media/sample-paper.pdf#page=1"
        assert page.eval_on_selector_all("table.spreadsheet th", "els => els.map(e => e.textContent)") == [
            "model", "score"]
        assert page.eval_on_selector_all("table.spreadsheet td", "els => els.map(e => e.textContent)") == [
            "a", "0.9", "b", "0.7"]
        numbered = page.eval_on_selector("ol.dialogue", "ol => [ol.classList.contains('numbered'), "
                                                        "getComputedStyle(ol.querySelector('li')).listStyleType]")
        assert numbered == [True, "decimal"]
        # The numbers are the list's markers: the text a span marks is the turns alone.
        lines = [line for line in page.inner_text("ol.dialogue").splitlines() if line.strip()]
        assert lines == ["user: Is it safe?", "assistant: Yes."]
    finally:
        srv.stop()
