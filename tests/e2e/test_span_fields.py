"""Issue 36 in a real browser, under gunicorn: spans marked on several fields of an item (upstream's
multi-span example: a premise and a hypothesis, both ``span_target``), and on a dialogue's lines.

Each span is stored with its field (none on the item's own text, ``item_properties.text_key``), at
390 and 1280 px, with the keyboard alone (Tab reaches each text in turn) and with the mouse; the same
offsets in two fields are two spans, and a reload draws each span in its own field again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.pages import key_of, sign_in, spans_become
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

ALIGN = {"annotation_type": "span", "name": "entities", "description": "Highlight aligned phrases",
         "labels": [{"name": "MATCH", "key_value": "m"}, {"name": "MISMATCH", "key_value": "x"}]}
FIELDS = [{"key": "premise", "type": "text", "label": "Premise", "span_target": True},
          {"key": "hypothesis", "type": "text", "label": "Hypothesis", "span_target": True},
          {"key": "chat", "type": "dialogue", "label": "Chat", "span_target": True}]
ITEMS = [{"id": "p1", "premise": "A man plays a guitar on stage.", "hypothesis": "A man plays music.",
          "chat": ["Ann: is it loud?", "Bo: very loud"]},
         {"id": "p2", "premise": "Two dogs run in a park.", "hypothesis": "Animals are outside.",
          "chat": ["Ann: sunny?", "Bo: yes"]}]
PREMISE, HYPOTHESIS, CHAT = (f"#item-text section:nth-of-type({n}) .span-target" for n in (1, 2, 3))


@pytest.fixture(params=[390, 1280], ids=["phone", "laptop"])
def width(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    path = make_project(annotation_schemes=[ALIGN], item_properties={"id_key": "id", "text_key": "premise"},
                        instance_display={"fields": FIELDS, "layout": {"direction": "vertical"}})
    (path.parent / "data" / "reviews.json").write_text(json.dumps(ITEMS), encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


def tab_to(page: Any, name: str) -> None:
    """Tab on until the text to mark that is called ``name`` has the focus."""
    for _ in range(30):
        page.keyboard.press("Tab")
        label = page.evaluate("document.activeElement.getAttribute('aria-label') || ''")
        if label.startswith(name + ", text to mark"):
            return
    pytest.fail(f"Tab never reached the {name} text")


def select_word(page: Any, selector: str, word: str) -> None:
    """Select ``word`` in the text at ``selector`` with a double click, as a mouse user does."""
    box = page.evaluate("""([sel, word]) => {
        const root = document.querySelector(sel), walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        let node;
        while ((node = walk.nextNode())) {
            const at = node.data.indexOf(word);
            if (at >= 0) {
                const r = document.createRange();
                r.setStart(node, at); r.setEnd(node, at + word.length);
                const b = r.getClientRects()[0];
                return {x: (b.left + b.right) / 2, y: (b.top + b.bottom) / 2};
            }
        }
        return null;
    }""", [selector, word])
    assert box is not None, f"{word!r} is not in {selector}"
    page.mouse.dblclick(box["x"], box["y"])


def test_spans_in_each_field_are_stored_with_their_field(server: ServerProcess, page: Any, errors: list[str],
                                                         width: int) -> None:
    sign_in(page, server, "ivy", width, first="p1")
    assert [page.get_attribute(sel, "role") for sel in (PREMISE, HYPOTHESIS, CHAT)] == ["textbox"] * 3
    # A dialogue to mark is its lines, "Speaker: text", each still a turn shaded by its speaker.
    assert [t.strip() for t in page.locator(f"{CHAT} li.turn").all_inner_texts()] == ["Ann: is it loud?", "Bo: very loud"]
    assert page.eval_on_selector_all(f"{CHAT} li.turn", "els => els.map(e => e.className)") == [
        "turn speaker-0", "turn speaker-1"]
    assert page.locator(f"{CHAT} b.speaker").all_inner_texts() == ["Ann:", "Bo:"]

    # The keyboard alone: "A man" in the premise, then "A man" in the hypothesis (the same offsets).
    page.click("body", position={"x": 1, "y": 1})
    tab_to(page, "Premise")
    page.keyboard.press("Shift+Control+ArrowRight")
    page.keyboard.press("Shift+Control+ArrowRight")
    page.keyboard.press(key_of(page, "MATCH"))
    spans_become(server, "ivy", "p1", [{"start": 0, "end": 5, "label": "MATCH", "text": "A man"}])
    tab_to(page, "Hypothesis")
    page.keyboard.press("Shift+Control+ArrowRight")
    page.keyboard.press("Shift+Control+ArrowRight")
    page.keyboard.press(key_of(page, "MATCH"))
    spans_become(server, "ivy", "p1", [{"start": 0, "end": 5, "label": "MATCH", "text": "A man"},
                                       {"start": 0, "end": 5, "label": "MATCH", "text": "A man", "field": "hypothesis"}])
    assert page.inner_text(f"{PREMISE} mark.hl") == "A man" and page.inner_text(f"{HYPOTHESIS} mark.hl") == "A man"

    # The mouse: "music" in the hypothesis and "loud" on the dialogue's second line.
    select_word(page, HYPOTHESIS, "music")
    page.click("fieldset[data-schema=entities] .span-label[data-label=MISMATCH]")
    select_word(page, CHAT, "very")
    page.click("fieldset[data-schema=entities] .span-label[data-label=MATCH]")
    expected = [{"start": 0, "end": 5, "label": "MATCH", "text": "A man"},
                {"start": 21, "end": 25, "label": "MATCH", "text": "very", "field": "chat"},
                {"start": 0, "end": 5, "label": "MATCH", "text": "A man", "field": "hypothesis"},
                {"start": 12, "end": 17, "label": "MISMATCH", "text": "music", "field": "hypothesis"}]
    spans_become(server, "ivy", "p1", expected)

    # A click on a highlight removes that span only, in its own field.
    page.click(f"{HYPOTHESIS} mark.hl >> text=music")
    spans_become(server, "ivy", "p1", [s for s in expected if s["text"] != "music"])

    # A reload draws each span in its own field again.
    page.reload()
    page.wait_for_selector(f"{CHAT} mark.hl")
    assert page.inner_text(f"{CHAT} mark.hl") == "very"
    assert [page.locator(f"{sel} mark.hl").count() for sel in (PREMISE, HYPOTHESIS, CHAT)] == [1, 1, 1]
    assert errors == [], errors


def test_a_question_that_marks_one_field_refuses_a_selection_in_another(
        make_project: Callable[..., Path], page: Any, errors: list[str]) -> None:
    narrowed = {**ALIGN, "target_field": "hypothesis"}
    path = make_project(annotation_schemes=[narrowed], item_properties={"id_key": "id", "text_key": "premise"},
                        instance_display={"fields": FIELDS[:2]})
    (path.parent / "data" / "reviews.json").write_text(json.dumps(ITEMS), encoding="utf-8")
    srv = ServerProcess(path).start()
    try:
        sign_in(page, srv, "leo", 1280, first="p1")
        select_word(page, PREMISE, "guitar")
        page.click("fieldset[data-schema=entities] .span-label[data-label=MATCH]")
        page.wait_for_selector("#status.error")
        assert page.inner_text("#status") == "This question marks Hypothesis, not Premise: select the text there."
        select_word(page, HYPOTHESIS, "music")
        page.click("fieldset[data-schema=entities] .span-label[data-label=MATCH]")
        spans_become(srv, "leo", "p1", [{"start": 12, "end": 17, "label": "MATCH", "text": "music",
                                         "field": "hypothesis"}])
    finally:
        srv.stop()
    assert errors == [], errors


def test_the_models_spans_come_back_in_their_field_and_are_accepted_there(
        make_project: Callable[..., Path], page: Any, errors: list[str]) -> None:
    """A real sklearn-token-classification run on spans in a premise and a hypothesis: its spans are
    drawn in the field each belongs to; one rejected there by a click, the rest accepted with a."""
    from tests.harness.spanfields import FIELDS as PAIR_FIELDS, pairs, truth
    from tests.harness.annotating import signed_in
    from tests.harness.spans import NER, mark, stored
    from tests.harness.runs import TERMINAL, start, wait

    config = make_project(annotation_schemes=[NER], item_properties={"id_key": "id", "text_key": "premise"},
                          instance_display={"fields": PAIR_FIELDS}, model_training={
                              "enabled": True, "grace_seconds": 2,
                              "writeback": {"schemas": ["entities"], "include_unlabeled": True, "min_confidence": 0.5}})
    (config.parent / "data" / "reviews.json").write_text(json.dumps(pairs()), encoding="utf-8")
    srv = ServerProcess(config).start()
    try:
        items = pairs()
        gold = signed_in(srv, "gold")
        for item in items[:30]:
            mark(gold, srv, item["id"], [{k: v for k, v in s.items() if k != "text"} for s in truth(item)])
        run = start(srv, trainer="sklearn-token-classification", schemas=["entities"])
        assert wait(srv, run["id"], TERMINAL, timeout=180)["state"] == "succeeded", srv.output()[-3000:]

        page.set_viewport_size({"width": 390, "height": 900})
        page.goto(srv.url + "/")
        page.fill("#name", "kim")
        page.press("#name", "Enter")
        page.wait_for_selector("#item-id:text('p000')")
        page.fill("#goto-number", "33")
        page.press("#goto-number", "Enter")
        page.wait_for_selector("#item-id:text('p032')")
        page.wait_for_selector(f"{HYPOTHESIS} mark.hl.model")
        premise, hypothesis = (f"{sel} mark.hl.model" for sel in (PREMISE, HYPOTHESIS))
        want = truth(items[32])
        assert page.locator(premise).all_inner_texts() == [s["text"] for s in want[:2]]
        assert page.locator(hypothesis).all_inner_texts() == [s["text"] for s in want[2:]]
        page.locator(hypothesis).first.click()  # the hypothesis' place: rejected there
        page.wait_for_function("() => document.querySelectorAll('#item-text mark.hl.model').length === 3")
        page.keyboard.press("a")
        page.wait_for_function("() => document.querySelectorAll('#item-text mark.hl.own').length === 3")
        kept = [s for s in want if s is not want[2]]
        deadline = time.monotonic() + 15
        while stored(srv, "kim").get("p032", {}).get("label") is None and time.monotonic() < deadline:
            time.sleep(0.1)
        row = stored(srv, "kim")["p032"]
        assert row["source"] == "human"  # one suggested span left out: the answer is kim's
        assert [(s["text"], s.get("field"), s.get("run_id")) for s in row["label"]] == [
            (s["text"], s.get("field"), run["id"]) for s in kept]
    finally:
        srv.stop()
    assert errors == [], errors


def test_spans_in_a_field_no_longer_marked_give_way_to_new_ones(
        make_project: Callable[..., Path], page: Any, errors: list[str]) -> None:
    """The admin takes span_target off the hypothesis after spans were marked there: the page opens
    without them, and a span marked in the premise is stored (the server would refuse the stale ones)."""
    from tests.harness.annotating import signed_in

    def serve(fields: list[dict[str, Any]]) -> ServerProcess:
        path = make_project(annotation_schemes=[ALIGN], item_properties={"id_key": "id", "text_key": "premise"},
                            instance_display={"fields": fields})
        (path.parent / "data" / "reviews.json").write_text(json.dumps(ITEMS), encoding="utf-8")
        return ServerProcess(path).start()

    before = serve(FIELDS[:2])
    try:
        r = signed_in(before, "ada").post(before.url + "/api/label", json={"id": "p1", "go": "stay", "labels": {
            "entities": [{"start": 12, "end": 17, "label": "MATCH", "field": "hypothesis"}]}})
        assert r.status_code == 200, r.text
    finally:
        before.stop()
    after = serve([FIELDS[0], {**FIELDS[1], "span_target": False}])
    try:
        sign_in(page, after, "ada", 1280, first="p2")  # p1 is labelled: she resumes after it
        page.fill("#goto-number", "1")
        page.press("#goto-number", "Enter")
        page.wait_for_selector("#item-id:text('p1')")
        assert page.locator("#item-text mark.hl").count() == 0
        select_word(page, PREMISE, "guitar")
        page.click("fieldset[data-schema=entities] .span-label[data-label=MATCH]")
        spans_become(after, "ada", "p1", [{"start": 14, "end": 20, "label": "MATCH", "text": "guitar"}])
    finally:
        after.stop()
    assert errors == [], errors
