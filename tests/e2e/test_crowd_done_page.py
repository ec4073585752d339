"""Issue 36 (crowdsourcing) in a real browser, under gunicorn: a Prolific participant arrives by the
study link, labels with the keyboard, finishes, copies the completion code with Enter and finds the
way back; a panel's participant is taken back by itself, their ids filled into the return link."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.servers import ServerProcess, free_port

pytestmark = [pytest.mark.browser, pytest.mark.integration]

KEYED = [{"annotation_type": "radio", "name": "sentiment", "description": "Is this review positive or negative?",
          "labels": [{"name": "positive", "key_value": "p"}, {"name": "negative", "key_value": "n"}]}]


@pytest.fixture
def serve(make_project: Callable[..., Path]) -> Iterator[Callable[..., ServerProcess]]:
    servers: list[ServerProcess] = []

    def _serve(**overrides: Any) -> ServerProcess:
        srv = ServerProcess(make_project(n_items=2, annotation_schemes=KEYED, **overrides)).start()
        servers.append(srv)
        return srv

    yield _serve
    for srv in servers:
        srv.stop()


def label_both_by_keyboard(page: Any) -> None:
    page.wait_for_selector("#item-meta[data-item='r000']")
    page.keyboard.press("p")
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-meta[data-item='r001']")
    page.keyboard.press("n")
    page.wait_for_selector("#done:not([hidden])")


@pytest.mark.parametrize("width", [390, 1280])
def test_a_prolific_participant_finishes_and_copies_the_code(serve: Callable[..., ServerProcess], page: Any,
                                                             width: int) -> None:
    srv = serve(crowdsourcing={"provider": "prolific", "prolific": {"completion": {"code": "C1ABCDEF"}}})
    page.set_viewport_size({"width": width, "height": 800})
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=srv.url)
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(srv.url + "/?PROLIFIC_PID=60a1b2c3&STUDY_ID=st1&SESSION_ID=se1")
    label_both_by_keyboard(page)
    finish = page.locator("a.finish")
    assert finish.inner_text() == "Finish and return to Prolific →"
    finish.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("h1:text('Thank You!')")
    assert page.inner_text("#completion-code") == "C1ABCDEF"
    page.focus("#completion-code")
    page.keyboard.press("Enter")  # a button: Enter (or a click) copies
    page.wait_for_selector("#code-hint:text('Copied!')")
    assert page.evaluate("navigator.clipboard.readText()") == "C1ABCDEF"
    back = page.locator("#return-link")
    assert back.inner_text() == "Return to Prolific"
    assert back.get_attribute("href") == "https://app.prolific.com/submissions/complete?cc=C1ABCDEF"
    page.keyboard.press("Tab")  # from the code, the next stop is the way back
    assert page.evaluate("document.activeElement.id") == "return-link"
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing runs off a phone's screen
    box = page.locator("#completion-code").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    assert errors == []


@pytest.fixture
def panel() -> Iterator[str]:
    """The panel's own site, to come back to: any page answers 200."""

    class Panel(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            body = b"<!doctype html><title>Panel</title><p>Welcome back</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Panel)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_panel_participant_is_taken_back_by_themselves(serve: Callable[..., ServerProcess], page: Any,
                                                         panel: str) -> None:
    srv = serve(crowdsourcing={"provider": "generic", "generic": {
        "id_param": "response_id", "capture_params": ["batch"], "platform_label": "Example Panel",
        "completion": {"code": "PANEL-1", "auto_redirect": True,
                       "redirect_url": panel + "/complete?rid={worker_id}&batch={batch}&code={code}"}}},
        auto_redirect_delay=1500)
    page.goto(srv.url + "/?response_id=r%209&batch=b%261")
    label_both_by_keyboard(page)
    page.click("a.finish")
    page.wait_for_selector("#auto-redirect")
    assert "You will be taken back to Example Panel in" in page.inner_text("#auto-redirect")
    page.wait_for_url(panel + "/complete?rid=r%209&batch=b%261&code=PANEL-1", timeout=15_000)
    assert page.inner_text("p") == "Welcome back"


@pytest.mark.parametrize("width", [390, 1280])
def test_an_mturk_preview_shows_the_task_and_starts_nothing(serve: Callable[..., ServerProcess], page: Any,
                                                            width: int) -> None:
    srv = serve(crowdsourcing={"provider": "mturk", "mturk": {"completion": {"code": "MT-1"}}},
                task_description="Say whether each review is positive.")
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(srv.url + "/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1")
    assert page.inner_text("h1") == "Preview: Review Sentiment"
    assert "Say whether each review is positive." in page.inner_text("main")
    assert "Accept the HIT to start" in page.inner_text("main")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.keyboard.press("Tab")  # the first stop is the page's own control, not a form to fill
    assert page.evaluate("document.activeElement.id") == "theme-toggle"
    page.goto(srv.url + "/annotate")  # the preview signed nobody in: the items say where to come from
    assert ("Missing required URL parameter: workerId. Please access this page through your crowdsourcing "
            "platform.") in page.inner_text("p.error")
