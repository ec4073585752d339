"""The pages as the browser tests drive them: signing in on the annotation page (at a width, or as it
opens), the stored answers an annotator's saves reach, a span label's key, a suggestion written back
without training, and the training page opened with the admin key."""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import ADMIN_KEY
from tests.harness.adminapi import labels_of, stored_labels
from tests.harness.servers import ServerProcess

SPANS = "fieldset[data-schema=entities]"


def sign_in(page: Any, srv: ServerProcess, name: str, width: int, first: str = "r000") -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(srv.url + "/")
    page.fill("#name", name)
    page.press("#name", "Enter")
    page.wait_for_selector(f"#item-id:text('{first}')")
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing sticks out sideways


def spans_become(srv: ServerProcess, user: str, item: str, expected: Any, within: float = 15.0) -> None:
    """The stored spans of ``item`` reach ``expected`` (None: no answer): saves are sent as marked."""
    deadline = time.monotonic() + within
    while labels_of(srv, user).get((item, "entities")) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert labels_of(srv, user).get((item, "entities")) == expected


def key_of(page: Any, label: str) -> str:
    return str(page.inner_text(f"{SPANS} .span-label[data-label={label}] kbd"))


def _sign_in(page: Any, server: ServerProcess, name: str) -> None:
    page.goto(server.url + "/")
    page.fill("#name", name)
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")


def _labels(server: ServerProcess, user: str) -> list[tuple[str, Any]]:
    rows = stored_labels(server.url, user)
    return sorted((r["id"], r["label"]) for r in rows if r["schema"] == "sentiment")


def label_and_suggest(srv: ServerProcess) -> None:
    """A suggestion on r000 without training: a run's predictions written back through the API."""
    from tests.harness.runs import label_all, start, wait

    label_all(srv, 20)
    run = start(srv, trainer="noop", schemas=["sentiment"])
    wait(srv, run["id"], {"succeeded"}, timeout=60)


def open_page(page: Any, url: str) -> None:
    page.goto("about:blank")  # a full load, even where only the #run= part differs
    page.goto(url)
    if page.locator("#key").count():  # redirected to the key form first
        page.fill("#key", ADMIN_KEY)
        page.press("#key", "Enter")
    page.wait_for_selector("#start")


def focused(page: Any) -> str:
    """What the keyboard is on, as a screen reader names it (its aria-label; "" for none)."""
    return str(page.evaluate("document.activeElement.getAttribute('aria-label') || ''"))


def becomes(element: Any, predicate: str, within: float = 15.0) -> None:
    """``predicate`` (a JavaScript function of the element) holds of ``element`` within ``within``
    seconds, polled from here: the page's policy forbids the evaluated predicates Playwright's own
    wait_for_function polls with, once they have to be polled at all."""
    deadline = time.monotonic() + within
    while not element.evaluate(predicate):
        assert time.monotonic() < deadline, f"{predicate} did not hold within {within} s"
        time.sleep(0.05)
