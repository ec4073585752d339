"""Issue 24: pushing a run's model to the Hugging Face Hub, under gunicorn (three workers), with the
real ``huggingface_hub`` client talking to a stand-in Hub on loopback (``HF_ENDPOINT``).

A real sklearn-text-classification run is pushed: its model files and the generated card arrive in
one commit, the card states the holdout score and the labels, and the token appears nowhere but in
the requests' Authorization header (not in the server's output, run.log, the push's state, the
database or any answer). A refused token and a failing commit end the push ``failed`` with a plain
message and never ``done``; a run whose model stayed on the training machine is refused with why.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
import requests
import yaml

from tests.harness import agents
from tests.conftest import ADMIN_KEY, base_config, review_items
from tests.harness.hubpush import agent_run_with_model_left_on_host
from tests.harness.hubstandin import USER, HubStandIn, card_metadata
from tests.harness.runs import label_all, start, wait
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration
H = {"X-API-Key": ADMIN_KEY}
TERMINAL = {"succeeded", "failed", "cancelled"}


class Setup:
    def __init__(self, srv: ServerProcess, hub: HubStandIn, token: str, run: Dict[str, Any], root: Path,
                 backend_token: str) -> None:
        self.srv, self.hub, self.token, self.run, self.root = srv, hub, token, run, root
        self.backend_token = backend_token

    @property
    def run_dir(self) -> Path:
        return self.root / "annotation_output" / "training" / "runs" / self.run["id"]

    def push_url(self, run_id: str) -> str:
        return f"{self.srv.url}/admin/training/api/runs/{run_id}/push"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """One server with HF_TOKEN and HF_ENDPOINT in its environment, and one succeeded sklearn run."""
    root = tmp_path_factory.mktemp("hub") / "project"
    (root / "data").mkdir(parents=True)
    (root / "data" / "reviews.json").write_text(json.dumps(review_items(40)), encoding="utf-8")
    raw = base_config()
    raw["model_training"] = {"enabled": True, "backends": {"lab": {"type": "agent"}}}
    config_path = root / "config.yaml"
    config_path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    config_path.chmod(0o600)
    backend_token = agents.register(config_path, "lab")[1]
    token = "hf_" + secrets.token_urlsafe(24)
    with HubStandIn(token) as hub:
        srv = ServerProcess(config_path, env={"HF_ENDPOINT": hub.url, "HF_TOKEN": token,
                                              "HF_HOME": str(root.parent / "hf-home")}).start()
        try:
            label_all(srv, 30)
            run = wait(srv, start(srv, trainer="sklearn-text-classification", schemas=["sentiment"],
                                  backend="local")["id"], TERMINAL)
            assert run["state"] == "succeeded", (run["reason"], run["message"], run.get("log_tail"))
            yield Setup(srv, hub, token, run, root, backend_token)
        finally:
            srv.stop()


@pytest.fixture(autouse=True)
def _hub_behaves(setup: Setup) -> Iterator[None]:
    """Each test says how the stand-in misbehaves; it answers normally again after."""
    yield
    setup.hub.token, setup.hub.fail_commit, setup.hub.commit_delay_s = setup.token, False, 0.0


def push_and_follow(s: Setup, run_id: str, body: Dict[str, Any], timeout: float = 60) -> Tuple[Dict[str, Any], List[str]]:
    """POST the push, then GET its state until it ends: the last state and every state seen."""
    r = requests.post(s.push_url(run_id), json=body, headers=H, timeout=30)
    assert r.status_code == 202, r.text
    seen = [r.json()["state"]]
    deadline = time.monotonic() + timeout
    while True:
        state = requests.get(s.push_url(run_id), headers=H, timeout=30).json()
        seen.append(state["state"])
        if state["state"] in ("done", "failed"):
            return state, seen
        assert time.monotonic() < deadline, f"push stuck: {state}\n{s.srv.output()[-3000:]}"
        time.sleep(0.1)


def everything_the_server_wrote(s: Setup) -> Dict[str, bytes]:
    """The server's output and every file of the project's output folder (database, WAL, runs)."""
    out = {"server output": s.srv.output().encode()}
    for path in sorted((s.root / "annotation_output").rglob("*")):
        if path.is_file():
            out[str(path.relative_to(s.root))] = path.read_bytes()
    return out


def test_a_real_run_is_pushed_in_one_commit_with_its_card(setup: Setup) -> None:
    s, run = setup, setup.run
    before = requests.get(s.push_url(run["id"]), headers=H, timeout=30).json()
    assert before["state"] == "idle" and before["can_push"] and before["blocked"] is None
    assert before["default_repo_id"] == "review-sentiment-sklearn-text-classification"
    assert before["token_from"] == "HF_TOKEN in the server's environment"

    state, seen = push_and_follow(s, run["id"], {"repo_id": "review-model", "commit_message": "First sentiment model"})
    assert state["state"] == "done", state
    assert seen[0] == "pushing" and state["error"] is None
    assert state["repo_url"] == f"{s.hub.url}/{USER}/review-model"

    repo = s.hub.repos[f"{USER}/review-model"]
    assert repo.private  # private unless the request says otherwise
    assert len(repo.commits) == 1
    commit = repo.commits[0]
    assert commit.summary == "First sentiment model"
    assert set(commit.files) == {"model.pkl", "labels.json", "README.md"}
    for name in ("model.pkl", "labels.json"):
        assert commit.files[name] == (s.run_dir / "artifacts" / name).read_bytes()

    card = commit.files["README.md"].decode()
    meta = card_metadata(commit.files["README.md"])
    assert meta is not None and meta["library_name"] == "sklearn"
    accuracy = run["metrics"]["holdout_accuracy"]
    metrics = {m["name"]: m["value"] for m in meta["model-index"][0]["results"][0]["metrics"]}
    assert metrics["Holdout accuracy"] == round(accuracy, 4)
    assert meta["potato"]["labels"] == {"sentiment": ["negative", "positive"]} or \
        meta["potato"]["labels"] == {"sentiment": ["positive", "negative"]}
    assert f"| sentiment | accuracy | {accuracy:.3f} |" in card
    assert "`positive`" in card and "`negative`" in card
    assert "30 labelled items" in card and "from 1 annotator" in card
    assert run["id"] in card and "sklearn-text-classification" in card
    print(card)

    # The run's log says where it went; the token is nowhere but in the Authorization header.
    assert f"Pushed to the Hugging Face Hub: {state['repo_url']}" in \
        (s.run_dir / "run.log").read_text(encoding="utf-8")
    assert set(s.hub.auth_headers) == {f"Bearer {s.token}"}
    assert not any(s.token in path for _, path in s.hub.requests)
    for where, data in everything_the_server_wrote(s).items():
        assert s.token.encode() not in data, f"the token is in {where}"
    answers = [requests.get(s.push_url(run["id"]), headers=H, timeout=30).text,
               requests.get(f"{s.srv.url}/admin/training/api/runs/{run['id']}", headers=H, timeout=30).text,
               requests.get(f"{s.srv.url}/admin/training/", headers=H, timeout=30).text]
    assert not any(s.token in text for text in answers)
    assert s.token not in card
    assert not s.hub.unexpected


def test_a_refused_token_fails_the_push_in_plain_words(setup: Setup) -> None:
    s = setup
    s.hub.token = "hf_" + secrets.token_urlsafe(24)  # the Hub no longer takes the server's token
    state, seen = push_and_follow(s, s.run["id"], {"repo_id": "refused-model"})
    assert state["state"] == "failed" and "done" not in seen
    assert state["error"].startswith("The Hub refused the token (HTTP 401")
    assert "HF_TOKEN in the server's environment" in state["error"]
    assert state["repo_url"] is None
    assert f"{USER}/refused-model" not in s.hub.repos
    assert "Push to the Hugging Face Hub failed: The Hub refused the token" in \
        (s.run_dir / "run.log").read_text(encoding="utf-8")
    assert s.token not in state["error"]


def test_a_failed_commit_fails_the_push_and_commits_nothing(setup: Setup) -> None:
    s = setup
    s.hub.fail_commit = True
    state, seen = push_and_follow(s, s.run["id"], {"repo_id": "broken-upload"})
    assert state["state"] == "failed" and "done" not in seen
    assert "HTTP 500 while committing the files" in state["error"] and "confirmed no commit" in state["error"]
    assert s.hub.repos[f"{USER}/broken-upload"].commits == []
    assert state["repo_url"] is None


def test_one_push_of_a_run_at_a_time(setup: Setup) -> None:
    """A second push while the first is under way is refused; the first goes on to its commit."""
    s = setup
    s.hub.commit_delay_s = 2.0
    first = requests.post(s.push_url(s.run["id"]), json={"repo_id": "slow-model"}, headers=H, timeout=30)
    assert first.status_code == 202, first.text
    second = requests.post(s.push_url(s.run["id"]), json={"repo_id": "other-model"}, headers=H, timeout=30)
    assert second.status_code == 409 and "under way" in second.json()["error"]
    deadline = time.monotonic() + 60
    while (state := requests.get(s.push_url(s.run["id"]), headers=H, timeout=30).json())["state"] == "pushing":
        assert state["progress"] in ("", "starting the push") or "in one commit" in state["progress"] \
            or "repository" in state["progress"], state  # the push's own steps, nothing of the refused one
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert state["state"] == "done" and state["repo_url"].endswith(f"/{USER}/slow-model")
    assert f"{USER}/other-model" not in s.hub.repos


def test_requests_that_cannot_push(setup: Setup) -> None:
    s = setup
    url = s.push_url(s.run["id"])
    r = requests.post(url, json={"repo_id": "a/b/c"}, headers=H, timeout=30)
    assert r.status_code == 400 and "not a repository name the Hub takes" in r.json()["error"]
    r = requests.post(url, json={"private": "yes"}, headers=H, timeout=30)
    assert r.status_code == 400 and "private must be true or false" in r.json()["error"]
    r = requests.post(url, data="not json", headers={**H, "Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 400
    r = requests.post(url, json={}, timeout=30)
    assert r.status_code == 401
    r = requests.post(s.push_url("20260101-000000-abcd"), json={}, headers=H, timeout=30)
    assert r.status_code == 404


def test_a_model_left_on_the_training_machine_is_refused_with_why(setup: Setup) -> None:
    s = setup
    run_id = agent_run_with_model_left_on_host(s.srv.url, s.backend_token)
    state = requests.get(s.push_url(run_id), headers=H, timeout=30).json()
    assert state["can_push"] is False
    assert state["blocked"].startswith(f"The model stayed on lab-pc at /home/me/.cache/potato-training/jobs/{run_id}/"
                                       "artifacts: runs on the agent backend 'lab' keep their model files")
    r = requests.post(s.push_url(run_id), json={}, headers=H, timeout=30)
    assert r.status_code == 409 and r.json()["error"] == state["blocked"]
    assert "hf upload <repo> /home/me/" in r.json()["error"]
    assert not (s.root / "annotation_output" / "training" / "runs" / run_id / "push.json").exists()


def test_a_run_that_has_not_succeeded_cannot_be_pushed(setup: Setup) -> None:
    s = setup
    r = requests.post(f"{s.srv.url}/admin/training/api/runs", headers=H, timeout=30,
                      json={"trainer": "noop", "schemas": ["sentiment"], "backend": "lab"})
    run_id = r.json()["id"]
    r = requests.post(s.push_url(run_id), json={}, headers=H, timeout=30)
    assert r.status_code == 409 and f"run {run_id} is queued" in r.json()["error"]
    requests.post(f"{s.srv.url}/admin/training/api/runs/{run_id}/cancel", headers=H, timeout=30)
