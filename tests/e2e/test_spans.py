"""Issue 23 in a real browser, under gunicorn: spans marked on the annotation page and stored.

Each test runs at a phone's width (390 px) and a laptop's (1280 px): spans marked with the keyboard
alone (caret, Shift to select, a label's key, Delete), with the mouse alone (a drag or a double click,
a label button, a click on the highlight), "Nothing to mark", an emoji before a span (offsets count
code points, as the server does), and a 5,000-character item with 50 spans. Model suggestions for
span questions, from a real run, are in test_span_suggestions.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.conftest import review_items
from tests.harness.adminapi import labels_of
from tests.harness.pages import SPANS, key_of, sign_in, spans_become
from tests.harness.schemes import NER, RADIO
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

TEXT = "#item-text"


@pytest.fixture(params=[390, 1280], ids=["phone", "laptop"])
def width(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def serve(make_project: Callable[..., Path]) -> Iterator[Callable[..., ServerProcess]]:
    """A server on a project with a radio and a span question; ``items`` replaces the reviews."""
    servers: list[ServerProcess] = []

    def _serve(items: list[dict[str, str]] | None = None, **overrides: Any) -> ServerProcess:
        overrides.setdefault("annotation_schemes", [RADIO, NER])
        path = make_project(n_items=5, **overrides)
        if items is not None:
            (path.parent / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
        srv = ServerProcess(path).start()
        servers.append(srv)
        return srv

    yield _serve
    for srv in servers:
        srv.stop()


def tab_to_text(page: Any) -> None:
    """Reach the text to mark with Tab alone, as a keyboard user does."""
    page.click("body", position={"x": 1, "y": 1})
    for _ in range(25):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('role')") == "textbox":
            return
    pytest.fail("Tab never reached the item's text")


def text_box(page: Any, part: str) -> dict[str, float]:
    """Where ``part`` of the item's text is on screen (its first line box)."""
    return page.evaluate("""(part) => {
        const root = document.getElementById("item-text"), walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        const at = root.textContent.indexOf(part);
        let node, seen = 0, range = document.createRange(), started = false;
        while ((node = walk.nextNode())) {
            const len = node.data.length;
            if (!started && at < seen + len) { range.setStart(node, at - seen); started = true; }
            if (started && at + part.length <= seen + len) { range.setEnd(node, at + part.length - seen); break; }
            seen += len;
        }
        const r = range.getClientRects()[0];
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, y: (r.top + r.bottom) / 2};
    }""", part)


def drag_over(page: Any, part: str) -> None:
    box = text_box(page, part)
    page.mouse.move(box["left"] + 1, box["y"])
    page.mouse.down()
    page.mouse.move(box["right"] - 1, box["y"], steps=8)
    page.mouse.up()


def test_keyboard_alone_marks_and_removes_spans(serve: Callable[..., ServerProcess], page: Any, errors: list[str],
                                                width: int) -> None:
    """Issue 23: caret, Ctrl+arrows by word, Shift to select, a label's key, Backspace and Delete."""
    srv = serve()
    sign_in(page, srv, "kai", width)
    assert page.get_attribute(TEXT, "role") == "textbox" and "Shift" in page.get_attribute(TEXT, "aria-label")
    tab_to_text(page)
    assert page.is_visible(f"{TEXT} .caret")

    # "The item 0 works perfectly.": to the end of "0" by word, one more character, then "works".
    for _ in range(3):
        page.keyboard.press("Control+ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("p")  # a label's key with nothing selected marks nothing
    page.keyboard.press("Shift+Control+ArrowRight")
    assert page.inner_text(f"{TEXT} .ksel") == "works"
    page.keyboard.press(key_of(page, "PER"))
    spans_become(srv, "kai", "r000", [{"start": 11, "end": 16, "label": "PER", "text": "works"}])
    assert page.inner_text(f"{TEXT} mark.hl") == "works"
    assert page.inner_text(f"{SPANS} .span-state").startswith("1 span marked")

    # This question marks each stretch once: "0 works" over "works" is refused, and says why.
    page.keyboard.press("Shift+Control+ArrowLeft")
    page.keyboard.press("Shift+Control+ArrowLeft")
    page.keyboard.press(key_of(page, "ORG"))
    page.wait_for_selector("#status.error")
    assert "\u201c0 works\u201d overlaps PER \u201cworks\u201d" in page.inner_text("#status")

    # Shift+arrows by character, from the start; the span list stays sorted by position.
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press(key_of(page, "ORG"))
    spans_become(srv, "kai", "r000", [{"start": 0, "end": 3, "label": "ORG", "text": "The"},
                                      {"start": 11, "end": 16, "label": "PER", "text": "works"}])
    page.keyboard.press("1")  # the radio question's key still picks its label while the text has the focus
    page.keyboard.press("Backspace")  # the caret is at the end of "The": that span goes
    spans_become(srv, "kai", "r000", [{"start": 11, "end": 16, "label": "PER", "text": "works"}])
    for _ in range(9):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Delete")  # the caret inside "works"
    spans_become(srv, "kai", "r000", None)
    assert labels_of(srv, "kai") == {("r000", "sentiment"): "positive"}
    assert page.locator(f"{TEXT} mark").count() == 0 and page.inner_text(TEXT) == "The item 0 works perfectly."

    # Escape drops a selection: the key after it marks nothing; arrows never left the item.
    page.keyboard.press("Shift+End")
    page.keyboard.press("Escape")
    page.keyboard.press(key_of(page, "PER"))
    assert page.locator(f"{TEXT} mark").count() == 0 and page.inner_text("#item-id") == "r000"
    assert errors == [], errors


def test_the_mouse_alone_marks_and_removes_spans(serve: Callable[..., ServerProcess], page: Any, errors: list[str],
                                                 width: int) -> None:
    """Issue 23: a drag then a label button; a label clicked first marks the next double-clicked word;
    one click on a highlight removes it."""
    srv = serve()
    sign_in(page, srv, "mia", width)
    org = f"{SPANS} .span-label[data-label=ORG]"
    assert page.get_attribute(org, "title") == "An organisation"
    assert page.eval_on_selector(org, "b => getComputedStyle(b).borderLeftColor") == "rgb(60, 180, 75)"  # #3cb44b

    drag_over(page, "item")
    page.click(org)
    spans_become(srv, "mia", "r000", [{"start": 4, "end": 8, "label": "ORG", "text": "item"}])

    loc = f"{SPANS} .span-label[data-label=LOC]"
    page.click(loc)  # nothing selected: LOC stays on for what is selected next
    assert page.get_attribute(loc, "aria-pressed") == "true"
    box = text_box(page, "perfectly")
    page.mouse.dblclick((box["left"] + box["right"]) / 2, box["y"])
    spans_become(srv, "mia", "r000", [{"start": 4, "end": 8, "label": "ORG", "text": "item"},
                                      {"start": 17, "end": 26, "label": "LOC", "text": "perfectly"}])
    page.click(loc)
    assert page.get_attribute(loc, "aria-pressed") == "false"

    # A drag that starts before the text (on the item's number above it) keeps only the text's part.
    meta = page.eval_on_selector(".item-meta", "e => e.getBoundingClientRect().toJSON()")
    page.mouse.move(meta["left"] + 2, meta["top"] + meta["height"] / 2)
    page.mouse.down()
    start = text_box(page, "The")
    page.mouse.move(start["right"] - 1, start["y"], steps=8)
    page.mouse.up()
    page.click(f"{SPANS} .span-label[data-label=PER]")
    spans_become(srv, "mia", "r000", [{"start": 0, "end": 3, "label": "PER", "text": "The"},
                                      {"start": 4, "end": 8, "label": "ORG", "text": "item"},
                                      {"start": 17, "end": 26, "label": "LOC", "text": "perfectly"}])

    item = page.locator(f"{TEXT} mark.hl", has_text="item")
    assert item.get_attribute("title").startswith("Remove")
    assert page.get_attribute(f"{TEXT} .hl-end.own >> nth=1", "data-tag") == "ORG \u00d7"
    item.click()
    spans_become(srv, "mia", "r000", [{"start": 0, "end": 3, "label": "PER", "text": "The"},
                                      {"start": 17, "end": 26, "label": "LOC", "text": "perfectly"}])
    page.click(f"{TEXT} .hl-end.own >> nth=0")  # the × after a span removes it too
    spans_become(srv, "mia", "r000", [{"start": 17, "end": 26, "label": "LOC", "text": "perfectly"}])
    assert page.inner_text(f"{TEXT} mark.hl") == "perfectly"
    assert errors == [], errors


def test_overlapping_spans_in_a_shown_field_are_all_drawn_and_each_removable(
        serve: Callable[..., ServerProcess], page: Any, errors: list[str], width: int) -> None:
    """Issue 23: with allow_overlapping, nested spans each keep an underline and a × of their own;
    with instance_display, the field that is the item's text is the one marked."""
    srv = serve(annotation_schemes=[RADIO, {**NER, "allow_overlapping": True, "show_span_labels": False}],
                instance_display={"fields": [{"key": "id", "type": "text", "label": "Reference"},
                                             {"key": "text", "type": "text", "label": "Review"}]})
    sign_in(page, srv, "ola", width)
    assert page.get_attribute(SPANS, "data-allow-overlapping") == "true"
    assert page.get_attribute(SPANS, "data-show-labels") == "false"
    target = f"{TEXT} .field >> nth=1 >> div"
    assert page.get_attribute(target, "role") == "textbox"
    assert page.get_attribute(f"{TEXT} .field >> nth=0 >> div", "role") is None
    tab_to_text(page)
    assert page.evaluate("document.activeElement.textContent") == "The item 0 works perfectly."

    def mark(words_before: int, words: int, label: str) -> None:
        page.keyboard.press("Home")
        for _ in range(words_before):
            page.keyboard.press("Control+ArrowRight")
        page.keyboard.press("ArrowRight")
        for _ in range(words):
            page.keyboard.press("Shift+Control+ArrowRight")
        page.keyboard.press(key_of(page, label))

    mark(1, 3, "PER")  # "item 0 works"
    mark(3, 1, "ORG")  # "works"
    mark(2, 3, "LOC")  # "0 works perfectly"
    per = {"start": 4, "end": 16, "label": "PER", "text": "item 0 works"}
    loc = {"start": 9, "end": 26, "label": "LOC", "text": "0 works perfectly"}
    org = {"start": 11, "end": 16, "label": "ORG", "text": "works"}
    spans_become(srv, "ola", "r000", [per, loc, org])
    works = page.locator(f"{TEXT} mark.hl", has_text="works")
    assert works.inner_text() == "works" and len(works.get_attribute("data-ids").split()) == 3
    assert works.evaluate("m => getComputedStyle(m).boxShadow").count("inset") == 3  # one underline per span
    assert page.locator(f"{TEXT} .hl-end.own").evaluate_all("ts => ts.map(t => t.dataset.tag)") == ["\u00d7"] * 3

    page.click(f"{TEXT} .hl-end[title^='Remove: LOC']")  # the outer span's own ×
    spans_become(srv, "ola", "r000", [per, org])
    works.click()  # a click on a stretch several spans cover removes the innermost
    spans_become(srv, "ola", "r000", [per])
    page.locator(f"{TEXT} mark.hl", has_text="item").click()
    spans_become(srv, "ola", "r000", None)
    assert page.locator(f"{TEXT} mark").count() == 0
    assert errors == [], errors


def test_nothing_to_mark_is_an_answer_that_a_span_replaces(serve: Callable[..., ServerProcess], page: Any,
                                                           errors: list[str], width: int) -> None:
    """Issue 23: "Nothing to mark" stores [] and labels the item; marking a span later replaces it."""
    srv = serve()
    sign_in(page, srv, "noa", width)
    none = f"{SPANS} .span-none"
    page.click(none)
    spans_become(srv, "noa", "r000", [])
    page.wait_for_selector("#badge:text('Labelled')")
    assert page.get_attribute(none, "aria-pressed") == "true"

    page.keyboard.press("d")  # dark mode: the highlight and its tag still show
    drag_over(page, "works")
    page.keyboard.press(key_of(page, "PER"))
    spans_become(srv, "noa", "r000", [{"start": 11, "end": 16, "label": "PER", "text": "works"}])
    assert page.get_attribute(none, "aria-pressed") == "false" and page.is_disabled(none)
    background = page.eval_on_selector(f"{TEXT} mark.hl", "m => getComputedStyle(m).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent"), background
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    page.keyboard.press("Enter")  # on to the next item, and back: the span is drawn from what is stored
    page.wait_for_selector("#item-id:text('r001')")
    assert page.locator(f"{TEXT} mark").count() == 0 and page.get_attribute(none, "aria-pressed") == "false"
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r000')")
    page.wait_for_selector(f"{TEXT} mark.hl:text('works')")
    assert errors == [], errors


def test_offsets_count_code_points_after_an_emoji(serve: Callable[..., ServerProcess], page: Any,
                                                  errors: list[str], width: int) -> None:
    """Issue 23: JavaScript counts an emoji as two; the server, as one. The stored offsets are the server's."""
    text = "Wow \U0001F600 the item 7 is great \U0002000B ok."
    srv = serve(items=[{"id": "e0", "text": text}, *review_items(3)])
    sign_in(page, srv, "emi", width, first="e0")
    tab_to_text(page)
    for _ in range(2):
        page.keyboard.press("Control+ArrowRight")  # past "Wow", then the emoji and "the"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+Control+ArrowRight")
    page.keyboard.press(key_of(page, "PER"))
    item = {"start": 10, "end": 14, "label": "PER", "text": "item"}
    assert text[10:14] == "item"
    spans_become(srv, "emi", "e0", [item])

    drag_over(page, "great \U0002000B")  # the mouse's selection, across a character outside the BMP
    page.click(f"{SPANS} .span-label[data-label=LOC]")
    spans_become(srv, "emi", "e0", [item, {"start": 20, "end": 27, "label": "LOC", "text": "great \U0002000B"}])
    assert page.locator(f"{TEXT} mark.hl").all_inner_texts() == ["item", "great \U0002000B"]
    assert page.evaluate("document.getElementById('item-text').textContent") == text  # tags add no text
    assert errors == [], errors


def test_a_long_item_with_fifty_spans_draws_them_all_and_saves_the_next(serve: Callable[..., ServerProcess],
                                                                        page: Any, errors: list[str],
                                                                        width: int) -> None:
    """Issue 23: 5,000 characters, 50 spans stored, one more marked by key; the time it took is printed."""
    words = [f"e{i:04d}" for i in range(833)]
    text = " ".join(words) + " xy"
    assert len(text) == 5000
    srv = serve(items=[{"id": "big", "text": text}, *review_items(3)])
    sign_in(page, srv, "lee", width, first="big")
    fifty = [{"start": 6 * i, "end": 6 * i + 5, "label": "LOC"} for i in range(0, 800, 16)]
    assert len(fifty) == 50
    stored = page.evaluate("""(spans) => fetch("/api/label", {method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({id: "big", labels: {entities: spans}, go: "stay", partial: true})}).then(r => r.status)""", fifty)
    assert stored == 200
    page.fill("#goto-number", "1")
    page.press("#goto-number", "Enter")
    page.wait_for_function("() => document.querySelectorAll('#item-text .hl-end.own').length === 50")
    assert page.locator(f"{TEXT} mark.hl").count() == 50

    tab_to_text(page)
    page.keyboard.press("End")
    page.keyboard.press("Shift+Control+ArrowLeft")
    page.evaluate("""() => {
        window.spanDrawn = null;
        const box = document.getElementById("item-text");
        document.addEventListener("keydown", () => {
            const t0 = performance.now();
            new MutationObserver((changes, seen) => {
                if (box.querySelectorAll(".hl-end.own").length !== 51) return;
                seen.disconnect();
                const inDom = performance.now() - t0;
                requestAnimationFrame(() => { window.spanDrawn = [inDom, performance.now() - t0]; });
            }).observe(box, {childList: true});
        }, {capture: true, once: true});
    }""")
    page.keyboard.press(key_of(page, "ORG"))
    page.wait_for_function("() => window.spanDrawn !== null")
    in_dom, painted = page.evaluate("window.spanDrawn")
    print(f"\n{width} px: 51st span in the page {in_dom:.1f} ms after its key, next frame at {painted:.1f} ms")
    spans_become(srv, "lee", "big", [*({**s, "text": text[s["start"]:s["end"]]} for s in fifty),
                                     {"start": 4998, "end": 5000, "label": "ORG", "text": "xy"}])
    assert page.locator(f"{TEXT} mark.hl").count() == 51
    assert errors == [], errors
