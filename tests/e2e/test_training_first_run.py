"""Issue 33 in a real browser, as a first-time admin meets the training page: item 7 (a first run's card
says how many unlabelled items got no suggestion and names the key that changes it) and item 14 (on a pip
install without the trainers' packages, what is missing is said once, its command set as code)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import requests

from tests.conftest import ADMIN_KEY, truth
from tests.harness.pages import open_page
from tests.harness.servers import ServerProcess
from tests.harness.hiding import HF_PACKAGES, hiding_path

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HEADERS = {"X-API-Key": ADMIN_KEY}


def label(srv: ServerProcess, count: int) -> None:
    labels = [{"id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}")} for i in range(count)]
    requests.post(srv.url + "/admin/api/labels", headers=HEADERS,
                  json={"user": "gold", "labels": labels}).raise_for_status()


def test_the_card_counts_the_unlabelled_items_left_without_a_suggestion_and_names_the_key(
        make_project: Callable[..., Path], page: Any, tmp_path: Path) -> None:
    """Issue 33 item 7: with the guide's first-run config (no include_unlabeled) the card said "20
    suggestions written" and the 20 unlabelled items skipped were in run.log alone."""
    srv = ServerProcess(make_project(n_items=40, model_training={
        "enabled": True, "trainer": "noop", "writeback": {"schemas": ["sentiment"]}})).start()
    try:
        label(srv, 20)
        resp = requests.post(srv.url + "/admin/training/api/runs", headers=HEADERS,
                             json={"trainer": "noop", "schemas": ["sentiment"]})
        resp.raise_for_status()
        run_id = resp.json()["id"]
        page.set_viewport_size({"width": 390, "height": 900})
        open_page(page, f"{srv.url}/admin/training/#run={run_id}")
        page.wait_for_selector("#run-detail[data-state=succeeded]", timeout=60_000)
        page.wait_for_selector("#run-suggestion-count:has-text('written')")
        said = page.inner_text("#run-suggestion-count")
        assert said.startswith("20 suggestions written; 20 unlabelled items got none because "
                               "writeback.include_unlabeled is off"), said
        assert "set it to true" in said
        page.screenshot(path=str(tmp_path / "unlabelled-390.png"), full_page=True)
        log = requests.get(f"{srv.url}/admin/training/api/runs/{run_id}/log", headers=HEADERS).text
        assert "20 unlabelled skipped" in log  # the same count as the log's
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    finally:
        srv.stop()


def test_on_a_pip_install_the_missing_packages_are_said_once_as_code(
        make_project: Callable[..., Path], page: Any, tmp_path: Path) -> None:
    """Issue 33 item 14: `pip install potato-annotation` (no trainer extras), the default trainer: the
    message stood under the trainer, in the Check output and again under Start after a click, each time
    with the command between literal backticks."""
    hide = hiding_path(tmp_path, "sklearn", *HF_PACKAGES)
    srv = ServerProcess(make_project(model_training={"enabled": True}), env={"PYTHONPATH": str(hide)}).start()
    try:
        label(srv, 20)
        page.set_viewport_size({"width": 390, "height": 900})
        open_page(page, srv.url + "/admin/training/")
        command = f"{sys.executable} -m pip install 'potato-annotation[train-sklearn]'"
        head = "Trainer 'sklearn-text-classification' could not be imported on this machine"
        assert page.input_value("#trainer") == "sklearn-text-classification"
        assert page.inner_text("#trainer-problem") == f"{head}: {sys.executable} lacks scikit-learn ({command})"
        assert page.inner_text("#trainer-problem code") == command
        assert page.is_disabled("#start") and page.is_visible("#start-blocked")

        page.click("#check")
        page.wait_for_selector("#check-result.ok, #check-result.error")
        page.eval_on_selector("#start-form", "f => f.requestSubmit()")  # a submit while Start is off: no copy below
        page.wait_for_timeout(500)
        page.screenshot(path=str(tmp_path / "pip-install-390.png"), full_page=True)
        text = page.inner_text("#training")
        assert text.count(head) == 2, text  # the message, and Check's line pointing to it
        assert text.count(command) == 1, text
        assert "`" not in text, text
        assert "Trainer 'sklearn-text-classification' could not be imported on this machine: as said under " \
               "Trainer, above." in page.inner_text("#check-result")
        hf = page.inner_text("#check-result code")  # another trainer's line keeps its command, as code
        assert hf == f"{sys.executable} -m pip install 'potato-annotation[train-text]'"
        assert page.inner_text("#form-error") == ""
        assert requests.get(srv.url + "/admin/training/api/runs", headers=HEADERS).json()["runs"] == []

        page.select_option("#trainer", "noop")  # a trainer that needs nothing: Start is on again
        assert not page.is_visible("#trainer-problem") and not page.is_disabled("#start")
        assert not page.is_visible("#start-blocked")
    finally:
        srv.stop()


def test_a_trainer_that_learns_nothing_from_labels_is_not_warned_of_few_labels(
        make_project: Callable[..., Path], page: Any) -> None:
    """Issue 34: llm-zero-shot suggests before the first label, so on a project nobody has labelled the
    form says which schemas have no labels but does not tell the admin to label more first; a trainer
    that learns from the labels still gets the warning."""
    srv = ServerProcess(make_project(n_items=20, model_training={
        "enabled": True, "trainer": "noop", "writeback": {"schemas": ["sentiment"]}})).start()
    try:
        open_page(page, f"{srv.url}/admin/training/")
        page.wait_for_selector("#label-warning:not([hidden])")
        assert page.inner_text("#label-warning").startswith("Few labels: sentiment has no labels")
        page.select_option("#trainer", "llm-zero-shot")
        page.wait_for_selector("#label-warning", state="hidden")
        assert "sentiment: no labelled items yet" in page.inner_text("#label-summary")
        page.select_option("#trainer", "noop")
        page.wait_for_selector("#label-warning:not([hidden])")
    finally:
        srv.stop()
