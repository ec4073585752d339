"""Issue 23 in a real browser: the model's spans on the annotation page, from a real
sklearn-token-classification run. Accepted whole with ``a``, they are stored as the suggestion's;
one rejected with a click, the rest accepted, the answer is the annotator's and each accepted span
still names its run."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from tests.e2e.test_span_scores import trained  # noqa: F401  (the fixture: a server after a real span run)
from tests.integration.test_spans_local import H, span_items, true_spans
from tests.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]
MODEL = "#item-text mark.hl.model"
OWN = "#item-text mark.hl.own"


def stored(srv: ServerProcess, user: str, item_id: str, within: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        rows = requests.get(f"{srv.url}/admin/api/labels?user={user}", headers=H).json()["labels"]
        found = {r["id"]: r for r in rows if r["schema"] == "entities"}
        if item_id in found or time.monotonic() > deadline:
            return found.get(item_id, {})
        time.sleep(0.1)


def go_to(page: Any, number: int, item_id: str) -> None:
    page.fill("#goto-number", str(number))
    page.press("#goto-number", "Enter")
    page.wait_for_selector(f"#item-id:text('{item_id}')")


@pytest.mark.parametrize("width", [390, 1280])
def test_the_models_spans_are_accepted_whole_or_after_a_rejection(
        trained: tuple[ServerProcess, dict[str, Any]], page: Any, width: int) -> None:  # noqa: F811
    srv, run = trained
    run_id = run["id"]
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(srv.url + "/")
    page.fill("#name", "kim")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('s000')")
    items = span_items()

    go_to(page, 31, "s030")
    page.wait_for_function(f"() => document.querySelectorAll('{MODEL}').length === 2")
    assert page.locator(OWN).count() == 0  # shown as the model's, not as kim's answer
    tags = page.eval_on_selector_all("#item-text .hl-end.model", "els => els.map(e => e.dataset.tag)")
    assert len(tags) == 2 and all(t.startswith("model") for t in tags), tags  # "model · PER 97%"
    page.keyboard.press("a")
    page.wait_for_function(f"() => document.querySelectorAll('{OWN}').length === 2")
    assert page.locator(MODEL).count() == 0
    row = stored(srv, "kim", "s030")
    assert (row["source"], row["run_id"]) == ("suggestion", run_id)
    assert [(s["start"], s["end"], s["label"], s["run_id"]) for s in row["label"]] == [
        (s["start"], s["end"], s["label"], run_id) for s in true_spans(items[30])]

    go_to(page, 32, "s031")
    page.wait_for_function(f"() => document.querySelectorAll('{MODEL}').length === 2")
    page.locator(MODEL).first.click()  # the person: rejected
    page.wait_for_function(f"() => document.querySelectorAll('{MODEL}').length === 1")
    assert stored(srv, "kim", "s031", within=0.5) == {}  # a rejection alone stores nothing
    page.keyboard.press("a")
    page.wait_for_function(f"() => document.querySelectorAll('{OWN}').length === 1")
    row = stored(srv, "kim", "s031")
    assert row["source"] == "human" and row.get("run_id") is None
    place = true_spans(items[31])[1]
    assert [(s["start"], s["end"], s["label"], s["run_id"]) for s in row["label"]] == [
        (place["start"], place["end"], "LOC", run_id)]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert errors == []
