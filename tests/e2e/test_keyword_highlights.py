"""Upstream's keyword highlights (issue 44, item 4), in a real browser under gunicorn: the words of
the admin's TSV boxed in the item's text in their label's colour, on a plain question page and on
upstream's ``ai-assisted/keyword-highlights`` shape (a span question beside a radio one), where
they sit under the annotator's spans and a click on one removes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from tests.e2e.test_spans import drag_over
from tests.harness.adminapi import stored_labels
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

TSV = ("Word\tLabel\tSchema\nperfect*\tpositive\tsentiment\ngreat\tpositive\tsentiment\n"
       "broke\tnegative\tsentiment\nwaste of money\tnegative\tsentiment\n")


def _project(make_project: Callable[..., Path], **overrides: Any) -> Path:
    config = make_project(keyword_highlights_file="data/keywords.tsv", **overrides)
    (config.parent / "data" / "keywords.tsv").write_text(TSV, encoding="utf-8")
    return config


def _sign_in(page: Any, srv: ServerProcess) -> None:
    page.goto(srv.url + "/")
    page.fill("#name", "ana")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")


def _keywords(page: Any) -> list[tuple[str, str]]:
    found = page.eval_on_selector_all("#item-text mark.hl.keyword", "l => l.map(m => [m.textContent, m.title])")
    return [(text, title) for text, title in found]


def test_keywords_are_boxed_in_a_plain_text(make_project: Callable[..., Path], page: Any, errors: list[str]) -> None:
    srv = ServerProcess(_project(make_project)).start()
    try:
        _sign_in(page, srv)
        assert _keywords(page) == [("perfectly", "Keyword: perfect* \u2192 positive")]  # "The item 0 works perfectly."
        assert page.inner_text("#item-text") == "The item 0 works perfectly."  # the text itself is unchanged
        page.click("label.option:has(input[value=positive])")
        page.click("#save-next")
        page.wait_for_selector("#item-id:text('r001')")
        assert _keywords(page) == [("waste of money", "Keyword: waste of money \u2192 negative")]  # "was a waste of money"
        assert errors == []
    finally:
        srv.stop()


def test_keywords_sit_under_spans_and_a_click_removes_only_a_span(make_project: Callable[..., Path], page: Any,
                                                                   errors: list[str]) -> None:
    schemes = [{"annotation_type": "span", "name": "sentiment", "description": "Mark the words that carry sentiment",
                "labels": [{"name": "positive", "color": "#22c55e"}, {"name": "negative", "color": "#ef4444"}]},
               {"annotation_type": "radio", "name": "overall_sentiment", "description": "Overall?",
                "labels": ["positive", "negative", "mixed", "neutral"]}]
    srv = ServerProcess(_project(make_project, annotation_schemes=schemes)).start()
    try:
        _sign_in(page, srv)
        assert _keywords(page) == [("perfectly", "Keyword: perfect* \u2192 positive")]
        colour = page.eval_on_selector("#item-text mark.hl.keyword", "m => getComputedStyle(m).outlineColor")
        assert colour == "rgb(34, 197, 94)"  # the span label's own colour, #22c55e
        page.click("#item-text mark.hl.keyword")  # a keyword is no span of the annotator's: nothing to remove
        drag_over(page, "perfectly")  # the keyword's own word, marked as a span
        page.click("fieldset[data-schema=sentiment] .span-label[data-label=positive]")
        page.wait_for_selector("#item-text mark.hl.own")
        assert _keywords(page) == []  # under the annotator's span now, drawn as that span
        assert [(r["label"][0]["text"]) for r in stored_labels(srv.url, "ana", "sentiment")] == ["perfectly"]
        page.click("#item-text mark.hl.own")  # a click on the span removes the span, and the keyword shows again
        page.wait_for_function("document.querySelectorAll('#item-text mark.hl.own').length === 0")
        assert _keywords(page) == [("perfectly", "Keyword: perfect* \u2192 positive")]
        assert errors == []
    finally:
        srv.stop()
