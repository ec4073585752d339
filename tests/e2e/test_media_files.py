"""Issue 42 items 9 in a real browser, under gunicorn, the way the probe found it: an item whose ``pdf``
was an HTML page loading a script from the media folder ran that script as the signed-in annotator,
in the page's PDF frame and when opened on its own. Media files are inert now, and Chromium's PDF
viewer still shows a PDF, in the frame and in a tab of its own."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.mediafiles import two_page_pdf
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

PDF_VIEWER = "chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/"
"""Chromium's PDF viewer: a frame of this extension opens inside a frame that shows a PDF."""
EVIL_JS = "window.top.__pwned = 1; localStorage.setItem('pwned', '1');"
EVIL_PAGE = "<html><body><p>a paper</p><script src='evil.js'></script></body></html>"


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    fields = [{"key": "text", "type": "text", "label": "Review"}, {"key": "paper", "type": "pdf", "label": "Paper"}]
    path = make_project(n_items=2, instance_display={"fields": fields}, media_directory="media")
    media = path.parent / "media"
    media.mkdir()
    (media / "paper.pdf").write_bytes(two_page_pdf())
    (media / "evil.html").write_text(EVIL_PAGE)
    (media / "evil.js").write_text(EVIL_JS)
    data = path.parent / "data" / "reviews.json"
    items = json.loads(data.read_text())
    data.write_text(json.dumps([{**items[0], "paper": "paper.pdf"}, {**items[1], "paper": "evil.html"}]))
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


def _viewer_opened(page: Any, within_s: float = 15.0) -> bool:
    """Whether Chromium's PDF viewer is among the page's frames (polled: it opens after the frame loads)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if any(frame.url.startswith(PDF_VIEWER) for frame in page.frames):
            return True
        page.wait_for_timeout(200)
    return False


def _sign_in(page: Any, url: str) -> None:
    page.goto(url + "/")
    page.fill("#name", "ana")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")


def test_a_pdf_is_shown_in_chromium_s_viewer_and_a_page_in_a_pdf_field_never_runs(
        server: ServerProcess, page: Any) -> None:
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text))
    _sign_in(page, server.url)
    page.wait_for_selector("iframe.pdf-page")
    assert _viewer_opened(page), [frame.url for frame in page.frames]
    assert page.inner_text(".pdf-where") == "Page 1 of 2"

    page.keyboard.press("ArrowRight")  # the item whose pdf is an HTML page with a script beside it
    page.wait_for_selector("#item-id:text('r001')")
    page.wait_for_timeout(1000)  # time for a frame and its script, had there been one
    assert page.evaluate("window.__pwned") is None
    assert page.query_selector("iframe.pdf-page") is None
    assert "[pdf not shown: the file is not a PDF]" in page.inner_text("body")

    # Nothing in the media folder is a script of the page: one loaded by the page itself is refused.
    loaded = page.evaluate("""() => new Promise(done => {
        const s = document.createElement('script');
        s.src = '/media/evil.js';
        s.onload = () => done('ran'); s.onerror = () => done('refused');
        document.body.appendChild(s);
    })""")
    assert loaded == "refused" and page.evaluate("window.__pwned") is None
    assert not [m for m in console if "pwned" in m]


def test_media_files_opened_on_their_own_stay_inert_and_a_pdf_still_shows(server: ServerProcess, page: Any) -> None:
    _sign_in(page, server.url)
    try:  # the probe opened the page directly: it ran evil.js as the signed-in annotator
        page.goto(server.url + "/media/evil.html")
    except Exception as exc:  # noqa: BLE001  # a download: Chromium aborts the navigation
        assert "ERR_ABORTED" in str(exc) or "Download" in str(exc), exc
    page.wait_for_timeout(1000)
    page.goto(server.url + "/media/paper.pdf")  # "Open the PDF": a tab of its own, sandboxed
    assert _viewer_opened(page), [frame.url for frame in page.frames]
    page.goto(server.url + "/annotate")
    page.wait_for_selector("#item-id")
    assert page.evaluate("localStorage.getItem('pwned')") is None
    assert page.evaluate("window.__pwned") is None
