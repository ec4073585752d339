"""Issue 12 in a real browser, under gunicorn: projects configured the way upstream Potato writes them.

A likert scale and a multiselect whose labels are mappings (tooltips, their own keys) are labelled
with the keyboard; a password project registers and signs in; an allow-list refuses a stranger; a
crowdsourcing link signs its worker in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import labels_of
from tests.harness.servers import ServerProcess
from tests.harness.upstream import UPSTREAM_SCHEMES

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def serve(make_project: Callable[..., Path]) -> Iterator[Callable[..., ServerProcess]]:
    servers: list[ServerProcess] = []

    def _serve(**overrides: Any) -> ServerProcess:
        srv = ServerProcess(make_project(**overrides)).start()
        servers.append(srv)
        return srv

    yield _serve
    for srv in servers:
        srv.stop()


def test_likert_and_mapped_multiselect_by_keyboard(serve: Callable[..., ServerProcess], page: Any) -> None:
    srv = serve(annotation_schemes=UPSTREAM_SCHEMES, user_config={"allow_all_users": True, "users": []},
                output_annotation_format="json", site_dir="default")
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(srv.url + "/")
    page.fill("#name", "kim")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")
    assert page.get_attribute("label.option:has(input[value=price])", "title") == "Cost, value for money"
    assert page.inner_text("label.option:has(input[value=quality]) kbd") == "w"

    # The likert scale is required: Enter without it says so and stays.
    page.keyboard.press("q")
    page.keyboard.press("Enter")
    page.wait_for_selector("#status:text('Answer \u201cHow helpful is the review?\u201d first: it is required.')")
    assert page.inner_text("#item-id") == "r000"

    page.keyboard.press("4")
    page.keyboard.press("e")
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r001')")
    page.keyboard.press("2")
    page.keyboard.press("w")
    page.keyboard.press("w")  # a second press takes quality off again
    page.focus("input[name=stars]")
    page.keyboard.press("ArrowRight")  # 5 -> 6: the slider moved, so it is an answer
    page.click("#save-next")
    page.wait_for_selector("#item-id:text('r002')")

    assert labels_of(srv, "kim") == {
        ("r000", "helpful"): "4", ("r000", "topics"): ["price", "delivery"],
        ("r001", "helpful"): "2", ("r001", "stars"): 6,
    }
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r001')")
    assert page.inner_text(".slider-value") == "6" and page.is_checked("input[name=helpful][value='2']")
    assert errors == [], errors


def test_instance_display_fields_are_shown_under_their_labels(serve: Callable[..., ServerProcess], page: Any) -> None:
    srv = serve(instance_display={"layout": {"direction": "horizontal"}, "fields": [
        {"key": "text", "type": "text", "label": "Review"}, {"key": "id", "type": "text", "label": "Reference"}]})
    page.goto(srv.url + "/")
    page.fill("#name", "lee")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-text .field h3")
    assert page.locator("#item-text .field h3").all_inner_texts() == ["REVIEW", "REFERENCE"]  # CSS upper-cases
    assert page.locator("#item-text .field div").all_inner_texts() == ["The item 0 works perfectly.", "r000"]


def test_display_logic_shows_follow_up_questions(serve: Callable[..., ServerProcess], page: Any) -> None:
    from tests.harness.upstream import PII

    srv = serve(annotation_schemes=PII)
    page.goto(srv.url + "/")
    page.fill("#name", "ivy")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")
    assert page.is_hidden("fieldset[data-schema=pii_types]") and page.is_hidden("fieldset[data-schema=other]")
    page.keyboard.press("1")  # Yes
    assert page.is_visible("fieldset[data-schema=pii_types]") and page.is_hidden("fieldset[data-schema=other]")
    page.keyboard.press("6")  # Other (keys 4-6 belong to pii_types)
    page.fill("textarea[name=other]", "a phone number")
    page.click("#save-next")
    page.wait_for_selector("#item-id:text('r001')")
    assert labels_of(srv, "ivy") == {("r000", "contains_pii"): "Yes", ("r000", "pii_types"): ["Other"],
                                     ("r000", "other"): "a phone number"}
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r000')")
    assert page.is_visible("fieldset[data-schema=other]")
    page.keyboard.press("2")  # No: the follow-ups are not asked any more
    assert page.is_hidden("fieldset[data-schema=pii_types]") and page.is_hidden("fieldset[data-schema=other]")
    page.keyboard.press("6")  # a hidden question's key does nothing
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-id:text('r001')")
    assert labels_of(srv, "ivy") == {("r000", "contains_pii"): "No"}


def test_a_free_response_box_is_typed_into_and_asked_with_its_scheme(serve: Callable[..., ServerProcess],
                                                                   page: Any) -> None:
    from tests.harness.upstream import FREE

    srv = serve(annotation_schemes=FREE[:2])  # one one-line box: Enter in it would submit the form
    page.goto(srv.url + "/")
    page.fill("#name", "joe")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")
    box = "fieldset[data-schema='pii_types:free_response']"
    assert page.is_hidden(box)
    page.keyboard.press("1")  # Yes: the types question and its box are asked
    assert page.is_visible(box) and page.inner_text(box + " legend") == "Something else:"
    page.click(box + " input")
    page.keyboard.type("a phone number 1")  # keys typed into the box are text, not label picks
    page.keyboard.press("Enter")  # Enter in the box neither reloads the page nor loses the text
    assert page.input_value(box + " input") == "a phone number 1" and page.inner_text("#item-id") == "r000"
    page.click("#save-next")
    page.wait_for_selector("#item-id:text('r001')")
    assert labels_of(srv, "joe") == {("r000", "contains_pii"): "Yes",
                                     ("r000", "pii_types:free_response"): "a phone number 1"}
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#item-id:text('r000')")
    assert page.input_value(box + " input") == "a phone number 1"


def test_the_new_widgets_fit_a_phone_and_text_boxes_save(serve: Callable[..., ServerProcess], page: Any) -> None:
    schemes = [*UPSTREAM_SCHEMES, {"annotation_type": "text", "name": "qa", "labels": ["question", "answer"]},
               {"annotation_type": "select", "name": "topic", "labels": ["price", "quality"]}]
    srv = serve(annotation_schemes=schemes, instance_display={"layout": {"direction": "horizontal"}, "fields": [
        {"key": "text", "type": "text", "label": "Review"}, {"key": "id", "type": "text", "label": "Reference"}]})
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(srv.url + "/")
    page.fill("#name", "mo")
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing sticks out sideways
    page.keyboard.press("3")
    page.fill("textarea[data-label=question]", "Is it loud?")
    page.fill("textarea[data-label=answer]", "Very.")
    page.select_option("select[name=topic]", "quality")
    page.click("#save-next")
    page.wait_for_selector("#item-id:text('r001')")
    assert labels_of(srv, "mo") == {("r000", "helpful"): "3", ("r000", "qa"): {"question": "Is it loud?", "answer": "Very."},
                                    ("r000", "topic"): "quality"}


def test_a_password_project_registers_and_signs_in(serve: Callable[..., ServerProcess], page: Any) -> None:
    srv = serve(require_password=True, user_config={"allow_all_users": False, "users": ["ana", "ben"]})
    page.goto(srv.url + "/")
    page.fill("#name", "mallory")
    page.fill("#password", "long enough pass")
    page.click("button[value=register]")
    page.wait_for_selector("p.error[role=alert]")
    assert "'mallory' is not on this study's list of annotators" in page.inner_text("p.error")

    page.fill("#name", "ana")
    page.fill("#password", "long enough pass")
    page.click("button[value=register]")
    page.wait_for_selector("#item-id:text('r000')")
    page.click("text=Sign out")
    page.wait_for_selector("#password")
    page.fill("#name", "ana")
    page.fill("#password", "not her password")
    page.press("#password", "Enter")
    page.wait_for_selector("p.error[role=alert]")
    assert page.inner_text("p.error").startswith("Wrong name or password.")
    page.fill("#password", "long enough pass")
    page.press("#password", "Enter")
    page.wait_for_selector("#item-id:text('r000')")
    assert page.inner_text(".who strong") == "ana"


def test_a_crowdsourcing_link_signs_its_worker_in(serve: Callable[..., ServerProcess], page: Any) -> None:
    srv = serve(login={"type": "url_direct", "url_argument": "PROLIFIC_PID"}, completion_code="C0MPLETE",
                data_files=["data/reviews.json"])
    page.goto(srv.url + "/?PROLIFIC_PID=60a1b2c3d4")
    page.wait_for_selector("#item-meta[data-item='r000']")
    assert page.inner_text(".who strong") == "60a1b2c3d4"
    assert page.locator("#item-id").count() == 0  # issue 42: a participant is not shown the item's id
    page.goto(srv.url + "/")
    page.wait_for_selector("#item-meta[data-item]")  # already signed in: straight back to the items
    assert "C0MPLETE" not in page.content()  # issue 42: the code is on the done page only, once done
