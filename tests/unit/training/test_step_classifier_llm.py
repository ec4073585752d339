"""Issue 45, item 4: a step classifier is hf-llm-classification with LoRA on 4-bit weights, trained on
the steps of coding agents' sessions as the server writes them (each step an item: the step, then the
trace before it; its trace and place as fields), scored per step and per trace by the worker. A tiny
random Llama built in code is the base model (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from potato.training.job.tracesteps import step_id, step_text
from tests.harness import agentsteps
from tests.harness.jobdirs import job_json, read_jsonl, read_result, write_bundle
from .test_hf_llm import build_tiny_llama, needs_bitsandbytes_on_this_cpu
from .tinybert import torch_threads_restored

STEPS = {"name": "step_rewards", "annotation_type": "radio", "labels": ["correct", "incorrect"],
         "per_step": True, "mistakes": ["incorrect"]}
SOURCE = "structured_turns (steps, text: action)"
N = 60

one_thread = pytest.fixture(autouse=True)(torch_threads_restored)


def step_items() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    items: list[dict[str, object]] = []
    labels: list[dict[str, object]] = []
    for n in range(N):
        trace = agentsteps.trace(n)
        items.append({"id": trace["id"], "text": trace["text"]})
        lines = [f"{turn['role']}: {turn['content']}" for turn in trace[agentsteps.STEPS]]
        for place in range(1, len(lines)):
            sid = step_id(trace["id"], SOURCE, f"t{place}")
            items.append({"id": sid, "text": step_text(lines[place], lines[:place], 1200), "trace": trace["id"],
                          "place": place, "step": f"t{place}"})
            if n < N - 10:
                labels.append({"item_id": sid, "schema": "step_rewards", "user": "u",
                               "label": agentsteps.true_marks(n)[f"t{place}"]})
    return items, labels


@pytest.mark.slow
def test_a_4bit_step_classifier_learns_the_steps_and_is_scored_by_trace(tmp_path: Path) -> None:
    needs_bitsandbytes_on_this_cpu()
    from potato.training.worker.program import run_job

    items, labels = step_items()
    llama = build_tiny_llama(tmp_path / "llama", [str(item["text"]) for item in items])
    held = {f"t{n:03d}" for n in range(0, N - 10, 5)}
    holdout = sorted(held | {str(i["id"]) for i in items if i.get("trace") in held})
    params = {"base_model": str(llama), "quantize": "4bit", "lora_r": 8, "epochs": 3, "batch_size": 8,
              "learning_rate": 5e-3, "max_length": 64}
    job_dir = write_bundle(tmp_path / "job", job_json("hf-llm-classification", (STEPS,), params, num_threads=1),
                           items, labels, holdout)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    metrics = read_result(job_dir)["metrics"]
    assert metrics["step_rewards/n_holdout"] == 4 * len(held) and metrics["step_rewards/n_holdout_traces"] == len(held)
    assert metrics["step_rewards/holdout_accuracy"] >= 0.8, metrics
    assert "step_rewards/holdout_first_error_exact" in metrics
    predicted = read_jsonl(job_dir / "predictions.jsonl")
    # Predictions for the steps only: the traces themselves are no steps.
    assert len(predicted) == 4 * N and all("\x1e" in row["item_id"] for row in predicted)
