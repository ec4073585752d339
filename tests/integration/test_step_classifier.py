"""Issue 45, item 4: a step classifier (a process reward model) trained on the per-step answers of a
process_reward question, under gunicorn. Each step is an example with the trace before it; the
holdout is drawn by trace and scored per step and per trace (first error found exactly); the
predictions come back as one suggestion per trace, an answer per step, that an annotator accepts.
Locally with sklearn-text-classification (a real model that must learn the steps), and through a
real sshd, a real SLURM and a polling agent with noop (standard library: the hosts need nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest
import requests

from tests.harness.agents import polling_agent
from tests.harness.agentsteps import mark_steps, trace_project, true_marks
from tests.harness.annotating import signed_in
from tests.harness.runs import H, log_of, succeeded
from tests.harness.servers import ServerProcess
from tests.harness.slurmcluster import start_cluster
from tests.harness.sshd import start_sshd

pytestmark = pytest.mark.integration
LABELLED = 40


@pytest.fixture
def serve(make_project: Callable[..., Path]) -> Iterator[Callable[..., ServerProcess]]:
    servers: list[ServerProcess] = []

    def _serve(backends: Dict[str, Any] | None = None) -> ServerProcess:
        srv = ServerProcess(trace_project(make_project, backends=backends)).start()
        servers.append(srv)
        gold = signed_in(srv, "gold")
        for n in range(LABELLED):
            mark_steps(gold, srv, n)
        return srv

    yield _serve
    for srv in servers:
        srv.stop()


def test_a_step_classifier_learns_the_steps_and_suggests_each_traces_first_error(
        serve: Callable[..., ServerProcess]) -> None:
    srv = serve()
    done = succeeded(srv, trainer="sklearn-text-classification", schemas=["step_rewards"], backend="local")
    metrics = done["metrics"]
    # Scored step by step on held-out traces only, and trace by trace.
    assert metrics["step_rewards/n_holdout"] % 4 == 0 and metrics["step_rewards/n_holdout"] >= 4
    assert metrics["step_rewards/holdout_accuracy"] >= 0.9, metrics
    assert metrics["step_rewards/n_holdout_traces"] == metrics["step_rewards/n_holdout"] // 4
    assert metrics["step_rewards/holdout_first_error_exact"] >= 0.8, metrics
    assert "learnt step by step" in log_of(srv, done["id"])

    # An unlabelled trace: the model's answer per step, right before the first error and wrong from it on.
    kim = signed_in(srv, "kim")
    for n in (41, 42, 43, 44):  # first errors at agent step 3, none, step 4 and step 1
        item = kim.get(f"{srv.url}/api/item/{n + 1}").json()["item"]
        shown = item["suggestions"]["step_rewards"]
        assert shown["run_id"] == done["id"]
        assert shown["label"] == true_marks(n), (n, shown)
        assert set(shown["probabilities"]) == set(true_marks(n))  # each step's own confidence
        assert all(0.0 <= c <= 1.0 for c in shown["probabilities"].values())

    # Accepting it stores exactly that answer, with the run it came from.
    r = kim.post(srv.url + "/api/label", json={"id": "t041", "labels": {"step_rewards": shown_label(kim, srv, 41)},
                                               "accepted": {"step_rewards": done["id"]}, "go": "stay"})
    assert r.status_code == 200, r.text
    rows = requests.get(f"{srv.url}/admin/api/labels?user=kim", headers=H).json()["labels"]
    assert {t: e["value"] for t, e in rows[0]["label"].items()} == true_marks(41)
    assert (rows[0]["source"], rows[0]["run_id"]) == ("suggestion", done["id"]), rows[0]


def shown_label(session: requests.Session, srv: ServerProcess, n: int) -> Dict[str, str]:
    label: Dict[str, str] = session.get(f"{srv.url}/api/item/{n + 1}").json()["item"]["suggestions"]["step_rewards"]["label"]
    return label


def suggests_each_step(srv: ServerProcess, backend: str) -> None:
    done = succeeded(srv, timeout=240, trainer="noop", schemas=["step_rewards"], backend=backend)
    assert done["backend"] == backend
    assert done["metrics"]["step_rewards/n_holdout_traces"] >= 1
    assert "step_rewards/holdout_first_error_exact" in done["metrics"]
    # noop answers every step with the commonest answer ("correct"): a suggestion per step, on every trace.
    shown = signed_in(srv, "kim").get(srv.url + "/api/item/46").json()["item"]["suggestions"]["step_rewards"]
    assert shown["run_id"] == done["id"] and shown["label"] == {f"t{k}": "correct" for k in range(1, 5)}


@pytest.mark.rig
def test_a_step_classifier_over_ssh(serve: Callable[..., ServerProcess]) -> None:
    suggests_each_step(serve({"gpu": start_sshd().backend()}), "gpu")


@pytest.mark.rig
def test_a_step_classifier_through_slurm(serve: Callable[..., ServerProcess]) -> None:
    suggests_each_step(serve({"cluster": start_cluster().backend()}), "cluster")


def test_a_step_classifier_on_an_agent(serve: Callable[..., ServerProcess], tmp_path: Path) -> None:
    srv = serve({"lab": {"type": "agent", "description": "lab workstation"}})
    with polling_agent(srv, "lab", tmp_path / "agent"):
        suggests_each_step(srv, "lab")
