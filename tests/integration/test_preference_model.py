"""Issue 45, item 4: a preference model from pairwise answers, under gunicorn. hf-llm-preference (a
reward model, Bradley-Terry, LoRA on a tiny random Llama built here: nothing is downloaded) learns
which of two answers annotators prefer, is scored on held-out pairs, and its suggestion (the better
answer, how sure) comes back on pairs nobody compared. The same question runs through a real sshd, a
real SLURM and a polling agent with noop (standard library: the hosts need nothing installed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest

from tests.harness.agents import polling_agent
from tests.harness.annotating import signed_in
from tests.harness.comparisons import answer, compare, comparison_project, texts
from tests.harness.runs import succeeded
from tests.harness.servers import ServerProcess
from tests.harness.slurmcluster import start_cluster
from tests.harness.sshd import start_sshd

pytestmark = pytest.mark.integration
COMPARED = 40


@pytest.fixture
def serve(make_project: Callable[..., Path]) -> Iterator[Callable[..., ServerProcess]]:
    servers: list[ServerProcess] = []

    def _serve(backends: Dict[str, Any] | None = None) -> ServerProcess:
        srv = ServerProcess(comparison_project(make_project, backends=backends)).start()
        servers.append(srv)
        gold = signed_in(srv, "gold")
        for n in range(COMPARED):
            compare(gold, srv, n)
        return srv

    yield _serve
    for srv in servers:
        srv.stop()


@pytest.mark.slow
def test_a_reward_model_learns_which_answer_is_better_and_suggests_it(serve: Callable[..., ServerProcess],
                                                                     tmp_path: Path) -> None:
    pytest.importorskip("peft")
    from tests.unit.training.test_hf_llm import build_tiny_llama

    llama = build_tiny_llama(tmp_path / "llama", texts())
    srv = serve()
    done = succeeded(srv, timeout=300, trainer="hf-llm-preference", schemas=["better"], backend="local",
                     params={"base_model": str(llama), "lora_r": 8, "epochs": 4, "batch_size": 8,
                             "learning_rate": 5e-3, "max_length": 32, "gradient_checkpointing": False})
    metrics = done["metrics"]
    assert metrics["better/n_holdout_decided"] >= 4
    assert metrics["better/holdout_decided_accuracy"] >= 0.75, metrics
    kim = signed_in(srv, "kim")
    right = 0
    for n in range(COMPARED, 50):
        if answer(n) == "tie":
            continue
        shown = kim.get(f"{srv.url}/api/item/{n + 1}").json()["item"]["suggestions"]["better"]
        assert shown["run_id"] == done["id"] and shown["label"] in ("A", "B")
        assert 0.5 <= shown["confidence"] <= 1.0
        right += shown["label"] == answer(n)
    assert right >= 7  # of the 8 decided pairs nobody compared


def suggests_the_commonest_preference(srv: ServerProcess, backend: str) -> None:
    done = succeeded(srv, timeout=240, trainer="noop", schemas=["better"], backend=backend)
    assert done["backend"] == backend and "better/holdout_decided_accuracy" in done["metrics"]
    # noop prefers, on every pair, the answer annotators preferred most often among the training pairs.
    kim = signed_in(srv, "kim")
    shown = [kim.get(f"{srv.url}/api/item/{n}").json()["item"]["suggestions"]["better"] for n in (46, 47)]
    assert all(s["run_id"] == done["id"] for s in shown)
    assert shown[0]["label"] == shown[1]["label"] and shown[0]["label"] in ("A", "B")


@pytest.mark.rig
def test_a_preference_run_over_ssh(serve: Callable[..., ServerProcess]) -> None:
    suggests_the_commonest_preference(serve({"gpu": start_sshd().backend()}), "gpu")


@pytest.mark.rig
def test_a_preference_run_through_slurm(serve: Callable[..., ServerProcess]) -> None:
    suggests_the_commonest_preference(serve({"cluster": start_cluster().backend()}), "cluster")


def test_a_preference_run_on_an_agent(serve: Callable[..., ServerProcess], tmp_path: Path) -> None:
    srv = serve({"lab": {"type": "agent", "description": "lab workstation"}})
    with polling_agent(srv, "lab", tmp_path / "agent"):
        suggests_the_commonest_preference(srv, "lab")
