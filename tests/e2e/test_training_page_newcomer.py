"""Issue 21 (R9, C6) in a real browser, as a newcomer reads the training page: the label summary counts
distinct items and states which label a run trains on, a finished run of a trainer without a loss shows
no empty loss box, and the runs table fits a phone's width with its State column in view; a trainer this
machine lacks the packages for is named before a local run is started, not after it failed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY, truth
from tests.harness.hiding import HF_PACKAGES, hiding_path
from tests.harness.pages import open_page
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HEADERS = {"X-API-Key": ADMIN_KEY}


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    """A project whose labels come from three annotators: 32 distinct items, 2 of them disagreed on."""
    srv = ServerProcess(make_project(model_training={"enabled": True, "trainer": "noop", "grace_seconds": 2})).start()
    gold = [{"id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}")} for i in range(30)]
    second = [{"id": "r000", "schema": "sentiment", "label": "negative"},
              {"id": "r001", "schema": "sentiment", "label": "positive"},
              {"id": "r030", "schema": "sentiment", "label": "positive"},
              {"id": "r031", "schema": "sentiment", "label": "negative"}]
    third = [{"id": "r000", "schema": "sentiment", "label": "positive"}]
    for user, labels in (("gold", gold), ("second", second), ("third", third)):
        requests.post(srv.url + "/admin/api/labels", json={"user": user, "labels": labels},
                      headers=HEADERS).raise_for_status()
    yield srv
    srv.stop()


def start_run(srv: ServerProcess, **params: Any) -> str:
    resp = requests.post(srv.url + "/admin/training/api/runs", headers=HEADERS,
                         json={"trainer": "noop", "schemas": ["sentiment"], "params": params})
    resp.raise_for_status()
    run_id: str = resp.json()["id"]
    return run_id


def test_the_summary_counts_distinct_items_and_says_which_label_trains(server: ServerProcess, page: Any) -> None:
    """Issue 21: "Labelled items: negative 17, positive 17" for 32 labelled items (an item with two
    annotators' different labels counted in both classes), and no word on which label a run uses."""
    open_page(page, server.url + "/admin/training/")
    assert page.inner_text("#label-summary") == (
        "sentiment: 32 labelled items: positive 16 · negative 16 (2 of them with disagreeing labels)")
    assert page.is_visible("#label-rule")
    rule = page.inner_text("#label-rule")
    assert "the label a run trains on" in rule and "a tie goes to the label that sorts first" in rule


def test_a_finished_run_without_a_loss_shows_no_loss_box(server: ServerProcess, page: Any) -> None:
    """Issue 21: a finished run whose trainer reports no loss showed a large "No loss reported yet."
    box for good, when followed live and when opened later."""
    run_id = start_run(server, sleep_s=1.5)
    open_page(page, server.url + "/admin/training/")
    page.click(f"#runs tr[data-run-id='{run_id}'] button.linklike")
    page.wait_for_selector("#run-detail[data-state=succeeded]", timeout=60_000)
    page.wait_for_timeout(1500)  # a few more polls of the finished run
    assert not page.is_visible("#loss") and not page.is_visible("text=No loss reported yet.")

    open_page(page, server.url + "/admin/training/#run=" + run_id)  # opened after it finished
    page.wait_for_selector("#run-detail[data-state=succeeded]")
    page.wait_for_timeout(1500)
    assert not page.is_visible("#loss") and not page.is_visible("text=No loss reported yet.")


@pytest.mark.parametrize("width", [390, 1280])
def test_the_runs_table_fits_the_screen_with_its_state_in_view(
        server: ServerProcess, page: Any, width: int, tmp_path: Path) -> None:
    """Issue 21: at 390 px the runs table scrolled sideways and its State column was off screen; at
    1280 px it stays a table with its header row."""
    done = start_run(server)
    page.set_viewport_size({"width": width, "height": 900})
    open_page(page, server.url + "/admin/training/")
    page.wait_for_selector(f"#runs tr[data-run-id='{done}'][data-state=succeeded]", timeout=60_000)
    running = start_run(server, sleep_s=120)
    page.wait_for_selector(f"#runs tr[data-run-id='{running}'][data-state=running]", timeout=60_000)
    page.screenshot(path=str(tmp_path / f"runs-{width}.png"), full_page=True)
    for run_id in (done, running):
        box = page.eval_on_selector(f"#runs tr[data-run-id='{run_id}'] td.state",
                                    "el => { const r = el.getBoundingClientRect(); return [r.left, r.right, r.width]; }")
        assert box[2] > 0 and 0 <= box[0] and box[1] <= width, f"State cell of {run_id} at {box}, screen {width} px"
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    assert page.eval_on_selector("#runs", "el => el.parentElement.scrollWidth <= el.parentElement.clientWidth")
    assert page.is_visible(f"#runs tr[data-run-id='{running}'] button.cancel")
    assert page.is_visible("#runs thead") == (width == 1280)
    page.click(f"#runs tr[data-run-id='{running}'] button.linklike")  # its details open below: still no scrolling
    page.wait_for_selector(f"#run-detail[data-run-id='{running}']")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    requests.post(server.url + f"/admin/training/api/runs/{running}/cancel", headers=HEADERS).raise_for_status()
    page.wait_for_selector(f"#runs tr[data-run-id='{running}'][data-state=cancelled]", timeout=60_000)


def test_a_trainer_this_machine_cannot_import_is_named_before_start_and_refused_on_local(
        make_project: Callable[..., Path], tmp_path: Path, page: Any) -> None:
    """A setup without the train-text extra: hf-text-classification was offered for 'local' as for any
    backend, and a click on Start queued a run bound to fail. Now the form says what is missing and the
    command that installs it while 'local' is picked, Start is refused with the same words and no run
    is queued; on another backend (whose machine may have the packages) the run starts. Issue 33 item 14:
    said once, its command as code, with Start off while it holds (the server refuses the run with the same
    words)."""
    hide = hiding_path(tmp_path, *HF_PACKAGES)
    srv = ServerProcess(make_project(model_training={"enabled": True, "trainer": "noop",
                                                     "backends": {"lab": {"type": "agent"}}}),
                        env={"PYTHONPATH": str(hide)}).start()
    try:
        requests.post(srv.url + "/admin/api/labels", headers=HEADERS, json={"user": "gold", "labels": [
            {"id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}")} for i in range(20)]})
        open_page(page, srv.url + "/admin/training/")
        assert not page.is_visible("#trainer-problem")  # noop needs nothing
        page.select_option("#trainer", "hf-text-classification")
        python = sys.executable
        command = f"{python} -m pip install 'potato-annotation[train-text]'"
        said = (f"Trainer 'hf-text-classification' could not be imported on this machine: {python} lacks torch, "
                f"transformers, peft (`{command}`)")
        assert page.is_visible("#trainer-problem") and page.inner_text("#trainer-problem") == said.replace("`", "")
        assert page.inner_text("#trainer-problem code") == command
        assert page.is_disabled("#start")
        refused = requests.post(srv.url + "/admin/training/api/runs", headers=HEADERS,
                                json={"trainer": "hf-text-classification", "schemas": ["sentiment"], "backend": "local"})
        assert refused.status_code == 409 and refused.json()["error"] == said
        assert requests.get(srv.url + "/admin/training/api/runs", headers=HEADERS).json()["runs"] == []

        page.select_option("#backend", "lab")
        assert not page.is_visible("#trainer-problem") and not page.is_disabled("#start")
        page.click("#start")
        page.wait_for_selector("#runs tr[data-run-id]")
        runs = requests.get(srv.url + "/admin/training/api/runs", headers=HEADERS).json()["runs"]
        assert [(r["trainer"], r["backend"], r["state"]) for r in runs] == [("hf-text-classification", "lab", "queued")]
    finally:
        srv.stop()


def trainer_menu(page: Any) -> dict[str, tuple[str, bool]]:
    """The trainer menu as a person sees it: each option's value -> (its text, whether it is disabled)."""
    rows: list[list[Any]] = page.eval_on_selector(
        "#trainer", "s => Array.from(s.options, o => [o.value, o.textContent.trim(), o.disabled])")
    return {value: (text, disabled) for value, text, disabled in rows}


def test_the_trainer_menu_marks_what_this_server_cannot_import_while_local_is_picked(
        make_project: Callable[..., Path], tmp_path: Path, page: Any) -> None:
    """Issue 42 A: without torch and transformers, the menu offered hf-text-classification like noop,
    and only a pick (or Check) told. Now each such trainer says in the menu what it needs while the local
    backend is picked, and stays selectable; on a remote backend (whose machine may have them) the menu
    shows the plain names, as it does where the server has everything."""
    hide = hiding_path(tmp_path, *HF_PACKAGES)
    srv = ServerProcess(make_project(model_training={"enabled": True, "trainer": "noop",
                                                     "backends": {"lab": {"type": "agent"}}}),
                        env={"PYTHONPATH": str(hide)}).start()
    try:
        marked = {
            "hf-text-classification": "hf-text-classification (needs torch, transformers, peft: not installed here)",
            "hf-llm-classification": "hf-llm-classification (needs torch, transformers, peft: not installed here)",
            "llm-zero-shot": "llm-zero-shot (needs torch, transformers: not installed here)",
        }
        open_page(page, srv.url + "/admin/training/")
        assert page.input_value("#backend") == "local"
        menu = trainer_menu(page)
        assert {value: text for value, (text, _) in menu.items() if text != value} == marked
        assert not any(disabled for _, disabled in menu.values())
        assert menu["noop"] == ("noop", False) and menu["sklearn-text-classification"][0] == "sklearn-text-classification"

        page.select_option("#backend", "lab")
        assert all(text == value for value, (text, _) in trainer_menu(page).items())
        page.select_option("#trainer", "hf-text-classification")
        assert page.input_value("#trainer") == "hf-text-classification" and not page.is_disabled("#start")

        page.select_option("#backend", "local")
        assert {value: text for value, (text, _) in trainer_menu(page).items() if text != value} == marked
        assert page.input_value("#trainer") == "hf-text-classification" and page.is_visible("#trainer-problem")
    finally:
        srv.stop()


def test_a_page_opened_on_a_remote_backend_shows_the_plain_trainer_names(
        make_project: Callable[..., Path], tmp_path: Path, page: Any) -> None:
    """Issue 42 A, the other way round: a config whose default backend is remote draws the menu with no
    mark (the server's own Python is not the one that trains), and picking local adds them."""
    hide = hiding_path(tmp_path, *HF_PACKAGES)
    srv = ServerProcess(make_project(model_training={"enabled": True, "trainer": "noop", "backend": "lab",
                                                     "backends": {"lab": {"type": "agent"}}}),
                        env={"PYTHONPATH": str(hide)}).start()
    try:
        open_page(page, srv.url + "/admin/training/")
        assert page.input_value("#backend") == "lab"
        assert all(text == value for value, (text, _) in trainer_menu(page).items())
        page.select_option("#backend", "local")
        assert trainer_menu(page)["llm-zero-shot"] == ("llm-zero-shot (needs torch, transformers: not installed here)",
                                                       False)
    finally:
        srv.stop()
