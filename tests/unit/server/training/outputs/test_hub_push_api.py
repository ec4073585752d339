"""Issue 24: the push routes in-process (no Hub is reached: the thread that would push is replaced):
what a push needs, what it refuses and why, the state every worker reads, and a server without
huggingface_hub."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.config import load_config
from potato.server.training.outputs import hubpush
from potato.server.training.runs.modelplace import Kept, ModelPlace
from potato.server.training.runs.store import Run, RunState, RunStore

TOKEN = "hf_InProcessTokenValue0123456789"
METRICS = {"holdout_accuracy": 0.875, "holdout_macro_f1": 0.86, "n_train": 32, "n_holdout": 8,
           "sentiment/holdout_accuracy": 0.875, "sentiment/holdout_macro_f1": 0.86}


@pytest.fixture
def app(make_project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from potato.server import close_app, create_app

    monkeypatch.delenv("HF_TOKEN", raising=False)
    config = load_config(make_project(model_training={
        "enabled": True,
        "backends": {"gpu": {"type": "ssh", "host": "gpu.example.org", "fetch_artifacts": False},
                     "lab": {"type": "agent"}},
        "hub": {"organization": "my-lab"},
    }))
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    yield application
    close_app(application)


@pytest.fixture
def store(app: Any) -> RunStore:
    runs: RunStore = app.extensions["potato.runs"]
    return runs


def succeeded(store: RunStore, backend: str = "local", artifacts: bool = True, uri: str | None = None,
              model: ModelPlace | None = None) -> Run:
    run = store.create("sklearn-text-classification", ["sentiment"], backend, {})
    for state in (RunState.PREPARING, RunState.RUNNING, RunState.SUCCEEDED):
        assert store.move(run.id, state, metrics=METRICS)
    folder = store.run_dir(run.id) / "artifacts"
    if artifacts:
        folder.mkdir()
        (folder / "model.pkl").write_bytes(b"\x80\x04model")
        (folder / "labels.json").write_text(json.dumps({"format": 1, "schemas": {
            "sentiment": {"annotation_type": "radio", "labels": ["negative", "positive"]}}}))
    store.update(run.id, artifact_uri=uri or str(folder), model=model or ModelPlace.here(folder))
    got = store.get(run.id)
    assert got is not None
    return got


def push_url(run: Run) -> str:
    return f"/admin/training/api/runs/{run.id}/push"


def test_a_pushable_run_and_what_a_push_would_take(client: Any, admin_headers: dict[str, str], store: RunStore) -> None:
    run = succeeded(store)
    state = client.get(push_url(run), headers=admin_headers).get_json()
    assert state["state"] == "idle" and state["can_push"] and state["blocked"] is None
    assert state["default_repo_id"] == "my-lab/review-sentiment-sklearn-text-classification"
    assert state["default_commit_message"] == f"Upload the sklearn-text-classification model of Potato run {run.id}"
    assert state["token_from"] is None and state["repo_url"] is None
    assert not (store.run_dir(run.id) / hubpush.STATE_FILE).exists()  # reading the state writes nothing
    r = client.post(push_url(run), json={}, headers=admin_headers)
    assert r.status_code == 409 and r.get_json()["error"].startswith("No Hugging Face token: set HF_TOKEN")


def test_a_push_starts_once_and_its_state_is_shared(client: Any, admin_headers: dict[str, str], store: RunStore,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[hubpush.Push] = []
    monkeypatch.setattr(hubpush, "_thread", started.append)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    run = succeeded(store)
    r = client.post(push_url(run), json={"repo_id": "my-lab/sentiment", "private": False,
                                         "commit_message": "First model"}, headers=admin_headers)
    assert r.status_code == 202, r.get_json()
    body = r.get_json()
    assert body["state"] == "pushing" and body["repo_id"] == "my-lab/sentiment" and body["private"] is False
    assert body["files"] == ["labels.json", "model.pkl", "README.md"]
    assert body["token_from"] == "HF_TOKEN in the server's environment"
    [push] = started
    assert push.token.value == TOKEN and push.request.commit_message == "First model"
    assert "| sentiment | accuracy | 0.875 |" in push.card and "`negative`, `positive`" in push.card
    saved = (store.run_dir(run.id) / hubpush.STATE_FILE).read_text()
    assert TOKEN not in saved and TOKEN not in r.get_data(as_text=True)

    again = client.post(push_url(run), json={}, headers=admin_headers)
    assert again.status_code == 409 and "under way" in again.get_json()["error"]
    assert client.get(push_url(run), headers=admin_headers).get_json()["state"] == "pushing"

    os.close(push.lock_fd)  # the process that pushed ends without finishing
    state = client.get(push_url(run), headers=admin_headers).get_json()
    assert state["state"] == "failed" and "before the Hub confirmed a commit" in state["error"]
    assert state["repo_url"] is None


def test_runs_that_cannot_be_pushed_say_why(client: Any, admin_headers: dict[str, str], store: RunStore,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    off = succeeded(store, "gpu", artifacts=False, uri="gpu.example.org:/home/a/.cache/potato-training/jobs/x/artifacts",
                    model=ModelPlace(host="gpu.example.org", host_folder="/home/a/.cache/potato-training/jobs/x/artifacts",
                                     kept=Kept.NOT_FETCHED))
    r = client.post(push_url(off), json={}, headers=admin_headers)
    assert r.status_code == 409
    assert r.get_json()["error"].startswith("The model stayed on gpu.example.org at /home/a/.cache/potato-training/"
                                            "jobs/x/artifacts: fetch_artifacts is off for backend 'gpu'.")
    assert client.get(push_url(off), headers=admin_headers).get_json()["blocked"] == r.get_json()["error"]

    agent = succeeded(store, "lab", artifacts=False, uri="")
    r = client.post(push_url(agent), json={}, headers=admin_headers)
    assert r.status_code == 409 and "agent backend 'lab'" in r.get_json()["error"]

    empty = succeeded(store, artifacts=False)
    r = client.post(push_url(empty), json={}, headers=admin_headers)
    assert r.status_code == 409 and "left no model files on this server" in r.get_json()["error"]

    queued = store.create("noop", ["sentiment"], "local", {})
    r = client.post(f"/admin/training/api/runs/{queued.id}/push", json={}, headers=admin_headers)
    assert r.status_code == 409 and f"run {queued.id} is queued" in r.get_json()["error"]
    assert not any((store.run_dir(run.id) / hubpush.STATE_FILE).exists() for run in (off, agent, empty, queued))


def test_bad_requests_unknown_runs_and_no_key(client: Any, admin_headers: dict[str, str], store: RunStore) -> None:
    run = succeeded(store)
    r = client.post(push_url(run), data="{not json", content_type="application/json", headers=admin_headers)
    assert r.status_code == 400 and r.get_json()["error"].startswith("Send a JSON object")
    r = client.post(push_url(run), json={"repo_id": "a b"}, headers=admin_headers)
    assert r.status_code == 400 and "not a repository name" in r.get_json()["error"]
    assert client.get("/admin/training/api/runs/20260101-000000-abcd/push", headers=admin_headers).status_code == 404
    assert client.post(push_url(run), json={}).status_code == 401
    assert client.get(push_url(run)).status_code == 401


def test_without_huggingface_hub_the_server_runs_and_a_push_names_the_install(
        client: Any, admin_headers: dict[str, str], store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import huggingface_hub now fails
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    run = succeeded(store)
    assert client.get("/admin/training/", headers=admin_headers).status_code == 200
    state = client.get(push_url(run), headers=admin_headers).get_json()
    assert not state["can_push"] and "pip install 'potato-annotation[hub]'" in state["blocked"]
    r = client.post(push_url(run), json={}, headers=admin_headers)
    assert r.status_code == 409 and r.get_json()["error"] == state["blocked"]


def test_a_token_file_that_is_missing_or_empty_is_named_before_a_push_is_tried(
        make_project: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33 item 12: with a token file configured but not there, the page offered an enabled push
    button that could only fail; the state now says what is wrong with the token, read as a push reads it."""
    from potato.server import close_app, create_app

    monkeypatch.delenv("HF_TOKEN", raising=False)
    token_file = tmp_path / "hf-token"
    config = load_config(make_project(model_training={"enabled": True, "hub": {"token_file": str(token_file)}}))
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        client, headers = application.test_client(), {"X-API-Key": config.admin_api_key or ""}
        run = succeeded(application.extensions["potato.runs"])
        state = client.get(push_url(run), headers=headers).get_json()
        assert state["token_from"].startswith(f"the file {token_file}")
        assert state["token_problem"].startswith(f"The token file {token_file} (model_training.hub.token_file) cannot "
                                                 "be read")
        token_file.write_text("\n")
        assert "is empty" in client.get(push_url(run), headers=headers).get_json()["token_problem"]
        token_file.write_text(TOKEN + "\n")
        token_file.chmod(0o600)
        state = client.get(push_url(run), headers=headers).get_json()
        assert state["token_problem"] is None and TOKEN not in json.dumps(state)  # counts at once, never shown
    finally:
        close_app(application)
