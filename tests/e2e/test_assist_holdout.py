"""The control group of AI help (issue 44, item 3), as a study admin and annotators meet it, under
gunicorn and in a real browser: a random share of annotators, drawn once each, sees no highlights and
no model suggestions; the Progress page and the exports compare the groups (agreement with the AI,
with reference answers, with each other; each figure with its count and 95% interval); with
``train_on: unhelped`` a run learns from the control group's labels and the imported ones only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import requests

from tests.conftest import ADMIN_KEY, truth
from tests.harness.runs import label_all, log_of, start, training_config, wait
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

H = {"X-API-Key": ADMIN_KEY}
AI_SUPPORT = {"enabled": True, "endpoint_type": "runs",
              "option_highlighting": {"enabled": True, "top_k": 1},
              "assist_holdout": {"share": 0.5, "train_on": "unhelped"}}


def _annotator(srv: ServerProcess, name: str) -> tuple[requests.Session, dict[str, Any]]:
    session = requests.Session()
    assert session.post(f"{srv.url}/login", data={"name": name}, timeout=10).ok
    item = session.get(f"{srv.url}/api/move", params={"go": "stay", "from": 0}, timeout=10).json()["item"]
    return session, item


def _label(srv: ServerProcess, session: requests.Session, item_id: str, label: str) -> dict[str, Any]:
    response = session.post(f"{srv.url}/api/label", json={"id": item_id, "labels": {"sentiment": label}, "go": "next"},
                            timeout=10)
    assert response.ok, response.text
    return dict(response.json()["item"])


def test_the_control_group_sees_no_help_and_the_groups_are_compared(
        make_project: Callable[..., Path], page: Any, tmp_path: Path) -> None:
    config_path = make_project(**training_config(trainer="sklearn-text-classification"), ai_support=AI_SUPPORT)
    srv = ServerProcess(config_path).start()
    try:
        label_all(srv, 20)  # imported answers: the runs' training data and the reference answers
        run = start(srv, trainer="sklearn-text-classification", schemas=["sentiment"])
        assert wait(srv, run["id"], {"succeeded", "failed"}, timeout=120)["state"] == "succeeded"

        # Annotators sign in until both groups have one: each is drawn at random, once.
        seen: dict[str, tuple[str, requests.Session, dict[str, Any]]] = {}
        for n in range(40):
            session, item = _annotator(srv, f"ann{n}")
            group = "helped" if item["highlights"] else "control"
            assert (item["suggestions"] == {}) == (group == "control")  # no model suggestion either
            seen.setdefault(group, (f"ann{n}", session, item))
            if len(seen) == 2:
                break
        assert set(seen) == {"helped", "control"}
        (helped, h_session, h_item), (control, c_session, c_item) = seen["helped"], seen["control"]
        again = _annotator(srv, control)[1]
        assert again["highlights"] == {} and again["suggestions"] == {}  # the draw is kept

        # The helped annotator takes the AI's pick on ten items; the control one answers the truth.
        picks = []
        for _ in range(10):
            picks.append((h_item["id"], h_item["highlights"]["sentiment"][0]))
            h_item = _label(srv, h_session, h_item["id"], h_item["highlights"]["sentiment"][0])
        rows = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
        ai_pick = {r["item_id"]: r["label"] for r in rows["suggestions"] if r["schema"] == "sentiment"}
        control_items = []
        for _ in range(10):
            control_items.append(c_item["id"])
            c_item = _label(srv, c_session, c_item["id"], truth(c_item["id"]))
        control_agrees_ai = sum(ai_pick[i] == truth(i) for i in control_items)
        helped_right = sum(label == truth(i) for i, label in picks)

        progress = requests.get(f"{srv.url}/admin/api/progress", headers=H, timeout=10).json()
        groups = progress["assist_holdout"]["groups"]
        assert groups["helped"]["with_ai"]["agree"] == 10 and groups["helped"]["with_ai"]["cases"] == 10
        assert (groups["control"]["with_ai"]["agree"], groups["control"]["with_ai"]["cases"]) == (control_agrees_ai, 10)
        assert groups["control"]["with_reference"] == {"agree": 10, "cases": 10, "rate": 1.0,
                                                      "ci95": [0.7225, 1.0]}  # 10 of 10: Wilson 72-100%
        assert groups["helped"]["with_reference"]["agree"] == helped_right
        assert {r["user"]: r["assist_group"] for r in progress["annotators"] if r["user"] in (helped, control)} == {
            helped: "helped", control: "control"}

        # The Progress page shows the same figures.
        page.goto(srv.url + "/admin/")
        page.fill("#key", ADMIN_KEY)
        page.press("#key", "Enter")
        row = page.inner_text("#assist-comparison tr[data-group=control]")
        assert "100% (10 of 10; 72\u2013100%)" in row and "Control (no help)" in row
        assert "100% (10 of 10;" in page.inner_text("#assist-comparison tr[data-group=helped]")

        # The control annotator's page: no highlights, no suggestion.
        context = page.context.browser.new_context()
        control_page = context.new_page()
        control_page.goto(srv.url + "/")
        control_page.fill("#name", control)
        control_page.press("#name", "Enter")
        control_page.wait_for_selector("#item-number")
        assert control_page.eval_on_selector_all(".ai-dimmed, .ai-highlighted", "l => l.length") == 0
        assert control_page.is_hidden("fieldset[data-schema=sentiment] .suggestion")
        context.close()

        # The exports: each label with its annotator's group; the comparison as JSON.
        lines = [json.loads(line) for line in requests.get(f"{srv.url}/admin/api/export", headers=H).text.splitlines()]
        assert {(line["user"], line.get("assist_group")) for line in lines if line["user"] in (helped, control)} == {
            (helped, "helped"), (control, "control")}
        out = tmp_path / "comparison.json"
        subprocess.run([sys.executable, "-m", "potato", "export", str(config_path), "--assist-comparison", "-o",
                        str(out)], check=True, capture_output=True)
        assert json.loads(out.read_text())["groups"] == groups

        # train_on: unhelped: the next run leaves the helped annotator's ten labels out.
        second = start(srv, trainer="sklearn-text-classification", schemas=["sentiment"])
        assert wait(srv, second["id"], {"succeeded", "failed"}, timeout=120)["state"] == "succeeded"
        assert ("Left out 10 label(s) of annotators who saw AI help (ai_support.assist_holdout.train_on: unhelped)"
                in log_of(srv, second["id"]))
    finally:
        srv.stop()
