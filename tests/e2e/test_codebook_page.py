"""Issue 45 (moving upstream's projects over) in a real browser, under gunicorn: a codebook that is an
HTML file of media_directory opens from the Codebook link as a page of this server, its headings and
emphasis drawn, its scripts and styles not run, at 390 and 1280 px."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from tests.harness.pages import sign_in
from tests.harness.servers import serving_items
from tests.unit.test_codebook_page import CODEBOOK, RADIO

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.mark.parametrize("width", [390, 1280])
def test_the_codebook_opens_as_a_page_that_runs_nothing(make_project: Callable[..., Path], page: Any, width: int) -> None:
    original = make_project

    def with_codebook(**config: Any) -> Path:
        path = original(**config)
        (path.parent / "media").mkdir(exist_ok=True)
        (path.parent / "media" / "codebook.html").write_text(CODEBOOK, encoding="utf-8")
        return path

    with serving_items(with_codebook, [{"id": "c1", "text": "Could you pass the salt?"}], annotation_schemes=[RADIO],
                       annotation_codebook_url="/media/codebook.html", media_directory="media") as server:
        sign_in(page, server, "ana", width, first="c1")
        with page.context.expect_page() as opened:
            page.click("a.codebook")
        book = opened.value
        book.wait_for_load_state()
        assert book.inner_text("h1") == "Politeness codebook" and book.inner_text("strong") == "polite"
        assert book.evaluate("window.__pwned") is None and book.locator("img").count() == 0
        assert book.evaluate("getComputedStyle(document.body).color") != "rgb(255, 0, 0)"
        book.set_viewport_size({"width": width, "height": 900})
        assert book.evaluate("document.documentElement.scrollWidth") <= width
