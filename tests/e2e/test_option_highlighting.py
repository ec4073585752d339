"""Option highlighting from the project's own runs (issue 44, ai_support with endpoint_type: runs), as an
annotator meets it: after a run, each item's most likely option stays as it is and the others are
dimmed to dim_opacity, every one still a click away; nothing is asked of an outside service."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.harness.adminapi import stored_labels
from tests.harness.runs import label_all, start, training_config, wait
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.browser

H = {"X-API-Key": ADMIN_KEY}
AI_SUPPORT = {"enabled": True, "endpoint_type": "runs",
              "option_highlighting": {"enabled": True, "top_k": 1, "dim_opacity": 0.3}}


def _sign_in(page: Any, srv: ServerProcess, name: str) -> None:
    page.goto(srv.url + "/")
    page.fill("#name", name)
    page.press("#name", "Enter")
    page.wait_for_selector("#item-id:text('r000')")


def _sentiment(page: Any, css: str) -> list[str]:
    return page.eval_on_selector_all(f"fieldset[data-schema=sentiment] label.option{css} input", "l => l.map(i => i.value)")


def test_a_runs_ranking_dims_the_unlikely_options_and_every_one_stays_clickable(
        make_project: Callable[..., Path], page: Any) -> None:
    srv = ServerProcess(make_project(**training_config(trainer="sklearn-text-classification"),
                                     ai_support=AI_SUPPORT)).start()
    try:
        _sign_in(page, srv, "pat")
        assert _sentiment(page, ".ai-dimmed") == [] and _sentiment(page, ".ai-highlighted") == []  # no run yet: plain
        label_all(srv, 20)
        run = start(srv, trainer="sklearn-text-classification", schemas=["sentiment"])
        assert wait(srv, run["id"], {"succeeded", "failed"}, timeout=120)["state"] == "succeeded"
        rows = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
        first = next(r for r in rows["suggestions"] if r["item_id"] == "r000" and r["schema"] == "sentiment")
        page.reload()
        page.wait_for_selector("fieldset[data-schema=sentiment] label.option.ai-highlighted")
        assert _sentiment(page, ".ai-highlighted") == [first["label"]]  # the run's most likely answer
        dimmed = _sentiment(page, ".ai-dimmed")
        assert dimmed == [label for label in ("positive", "negative") if label != first["label"]]
        opacity = page.eval_on_selector(f"fieldset[data-schema=sentiment] label.option:has(input[value={dimmed[0]}])",
                                        "o => getComputedStyle(o).opacity")
        assert float(opacity) == pytest.approx(0.3)
        page.click(f"fieldset[data-schema=sentiment] label.option:has(input[value={dimmed[0]}])")  # a dimmed one
        page.click("#save-next")
        page.wait_for_selector("#item-id:text('r001')")
        assert [(r["id"], r["label"]) for r in stored_labels(srv.url, "pat") if r["schema"] == "sentiment"] == [
            ("r000", dimmed[0])]
    finally:
        srv.stop()
