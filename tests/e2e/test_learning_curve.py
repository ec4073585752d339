"""Issue 24 (what each label bought) in a real browser: two runs on more and more labels draw one line
of holdout F1 against labelled items, readable at a phone's width."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY, truth
from tests.e2e.test_training_page_newcomer import open_page
from tests.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HEADERS = {"X-API-Key": ADMIN_KEY}


def label(srv: ServerProcess, ids: range) -> None:
    labels = [{"id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}")} for i in ids]
    requests.post(srv.url + "/admin/api/labels", json={"user": "gold", "labels": labels},
                  headers=HEADERS).raise_for_status()


def train(srv: ServerProcess) -> str:
    resp = requests.post(srv.url + "/admin/training/api/runs", headers=HEADERS,
                         json={"trainer": "sklearn-text-classification", "schemas": ["sentiment"]})
    resp.raise_for_status()
    run_id: str = resp.json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run = requests.get(srv.url + f"/admin/training/api/runs/{run_id}", headers=HEADERS).json()
        if run["state"] in ("succeeded", "failed", "cancelled"):
            assert run["state"] == "succeeded", run
            return run_id
        time.sleep(0.3)
    raise AssertionError(f"run {run_id} did not finish")


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    """A run on 20 labelled items, then one on 50."""
    srv = ServerProcess(make_project(n_items=60, model_training={"enabled": True})).start()
    try:
        label(srv, range(0, 20))
        train(srv)
        label(srv, range(20, 50))
        train(srv)
        yield srv
    finally:
        srv.stop()


def test_the_api_gives_one_series_with_a_point_per_run(server: ServerProcess) -> None:
    series = requests.get(server.url + "/admin/training/api/learning-curve", headers=HEADERS).json()["series"]
    assert [(s["trainer"], s["schema"], s["metric"]) for s in series] == [
        ("sklearn-text-classification", "sentiment", "macro-F1")]
    points = series[0]["points"]
    assert [p["labels"] for p in points] == [16, 40]  # 20 and 50 labelled items, a fifth of them held out
    assert all(0.0 <= p["score"] <= 1.0 for p in points)


@pytest.mark.parametrize("width", [390, 1280])
def test_the_page_draws_the_line_and_names_it(server: ServerProcess, page: Any, width: int, tmp_path: Path) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    open_page(page, server.url + "/admin/training/")
    page.wait_for_selector("#curve-card:not([hidden]) #curve-chart polyline.curve-line", state="attached")
    assert page.is_visible("#curve-chart")  # the line itself may be flat (F1 1.0 twice): no height to be "visible"
    page.screenshot(path=str(tmp_path / f"curve-{width}.png"), full_page=True)
    line = page.eval_on_selector("#curve-chart polyline.curve-line", "el => el.getAttribute('points')")
    assert len(line.split()) == 2
    assert page.locator("#curve-chart circle.curve-dot").count() == 2
    legend = page.inner_text("#curve-legend")
    assert "sentiment · sklearn-text-classification: macro-F1" in legend and "at 40 labels (2 runs)" in legend
    assert "reached macro-F1" in page.get_attribute("#curve-chart", "aria-label")
    box = page.eval_on_selector("#curve-chart", "el => el.getBoundingClientRect().right")
    assert box <= width and page.evaluate("document.scrollingElement.scrollWidth") <= width
