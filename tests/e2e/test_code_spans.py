"""Issue 45 (moving upstream's projects over) in a real browser, under gunicorn: a span marked on a
code field (its words selected, its label's key pressed) at 390 and 1280 px; the code keeps its lines
and indentation while marked, and nothing in it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess, serving_items
from tests.unit.test_code_spans import CODE, FIELDS, ISSUES

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    with serving_items(make_project, [{"id": "k1", "text": "Adds two numbers", "code": CODE}], annotation_schemes=[ISSUES],
                       instance_display={"fields": FIELDS}) as srv:
        yield srv


@pytest.mark.parametrize("width", [390, 1280])
def test_a_bug_is_marked_in_code_by_its_labels_key(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="k1")
    code = page.locator("#item-text .field-code [role=textbox]")
    assert code.inner_text().rstrip("\n") == CODE.rstrip("\n")  # its lines and indentation as written
    code.focus()
    page.evaluate("""() => {  // the words selected, as a drag over them selects them
        const box = document.querySelector("#item-text .field-code [role=textbox]");
        const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT), range = document.createRange();
        let node, seen = 0;
        while ((node = walker.nextNode())) {
            const at = node.textContent.indexOf("a - b");
            if (at >= 0) { range.setStart(node, at); range.setEnd(node, at + 5); break; }
            seen += node.textContent.length;
        }
        window.getSelection().removeAllRanges();
        window.getSelection().addRange(range);
    }""")
    page.keyboard.press(page.inner_text("fieldset[data-schema=code_issues] .span-label[data-label=bug] kbd"))
    at = CODE.index("a - b")
    answers_become(server.url, "ana", {("k1", "code_issues"): [
        {"start": at, "end": at + 5, "label": "bug", "text": "a - b", "field": "code"}]})
    assert page.inner_text("#item-text .field-code mark.hl") .startswith("a - b")
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
