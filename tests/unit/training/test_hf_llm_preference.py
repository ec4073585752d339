"""Issue 45, item 4: hf-llm-preference, a reward model trained with the Bradley-Terry loss on pairwise
answers: a decoder with a LoRA adapter on 4-bit weights (a tiny random Llama built in code; nothing is
downloaded). Two reviews are compared: the kinder one is better, two equally kind ones a tie. The
worker runs in-process (``run_job``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from potato.training.job.spec import JobItem
from potato.training.trainers import get_trainer
from potato.training.trainers.hf_llm_preference import pair_of, preference

from tests.harness.jobdirs import job_json, read_jsonl, read_result, run_worker, write_bundle
from .test_hf_llm import build_tiny_llama, needs_bitsandbytes_on_this_cpu
from .tinybert import synthetic_reviews, torch_threads_restored

PREFERENCE = {"name": "kinder", "annotation_type": "pairwise", "labels": ["A", "B", "tie"]}
PROMPT = "Which review is kinder?"
N = 240
DATA = synthetic_reviews(N)
POSITIVE = [t for t, label in DATA if label == "positive"]
NEGATIVE = [t for t, label in DATA if label == "negative"]

one_thread = pytest.fixture(autouse=True)(torch_threads_restored)


def pairs(n: int) -> list[tuple[dict[str, Any], str]]:
    """Item ``i``: a kind and an unkind review in turn on either side; every fifth pair two kind ones (a tie)."""
    out = []
    for i in range(n):
        if i % 5 == 4:
            options, answer = [POSITIVE[i], POSITIVE[-i - 1]], "tie"
        elif i % 2 == 0:
            options, answer = [POSITIVE[i], NEGATIVE[i]], "A"
        else:
            options, answer = [NEGATIVE[i], POSITIVE[i]], "B"
        out.append(({"id": f"p{i}", "text": f"{PROMPT}\nA. {options[0]}\nB. {options[1]}",
                     "pairs": {"kinder": {"prompt": PROMPT, "options": options}}}, answer))
    return out


def test_a_pair_is_the_prompt_with_each_option_and_a_suggestion_is_the_preferred_one() -> None:
    item = JobItem("p0", "x", {"pairs": {"kinder": {"prompt": "Q?", "options": ["one", "two"]}}})
    assert pair_of(item, "kinder") == ("Q?\n\none", "Q?\n\ntwo")
    assert pair_of(item, "other") is None and pair_of(JobItem("p1", "x"), "kinder") is None
    assert preference(0.8, ("A", "B", "tie"), 0.0) == ("A", 0.8, {"A": 0.8, "B": pytest.approx(0.2)})
    assert preference(0.3, ("A", "B"), 0.0)[:2] == ("B", 0.7)
    # A tie only where the question has one and the model is near even.
    assert preference(0.55, ("A", "B", "tie"), 0.1)[0] == "tie"
    assert preference(0.55, ("A", "B"), 0.1)[0] == "A"
    assert get_trainer("hf-llm-preference").validate_params({})["tie_margin"] == 0.0


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    return build_tiny_llama(tmp_path_factory.mktemp("llama"), [PROMPT] + [text for text, _ in DATA])


@pytest.mark.slow
def test_a_4bit_reward_model_prefers_what_annotators_preferred(tmp_path: Path, tiny_llama: Path) -> None:
    needs_bitsandbytes_on_this_cpu()
    from potato.training.worker.program import run_job

    n = 120
    data = pairs(n)
    labels = [{"item_id": item["id"], "schema": "kinder", "label": answer, "user": "u"} for item, answer in data[:n - 10]]
    holdout = [item["id"] for item, _ in data[:n - 10:4]]
    params = {"base_model": str(tiny_llama), "quantize": "4bit", "lora_r": 8, "epochs": 3, "batch_size": 8,
              "learning_rate": 5e-3, "max_length": 48, "tie_margin": 0.1}
    job_dir = write_bundle(tmp_path, job_json("hf-llm-preference", (PREFERENCE,), params, num_threads=1),
                           [item for item, _ in data], labels, holdout)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    result = read_result(job_dir)
    metrics = result["metrics"]
    # A random base: only the adapter and the head learn which words make a review kind.
    assert metrics["kinder/holdout_decided_accuracy"] >= 0.8, metrics
    assert metrics["kinder/n_holdout_decided"] == sum(1 for i in holdout if data[int(i[1:])][1] != "tie")
    logs = " ".join(e.get("text", "") for e in read_jsonl(job_dir / "events.jsonl"))
    assert "kinder: 82 pairs (16 ties), " in logs and "trainable parameters (LoRA, 4-bit)" in logs
    predictions = {row["item_id"]: row for row in read_jsonl(job_dir / "predictions.jsonl")}
    assert len(predictions) == n  # every pair, the unlabelled ones too
    for row in predictions.values():
        assert row["label"] in ("A", "B", "tie")
        assert math.isclose(row["probabilities"]["A"] + row["probabilities"]["B"], 1.0, abs_tol=1e-4)
    unlabelled = [data[i] for i in range(n - 10, n) if data[i][1] != "tie"]
    assert sum(predictions[item["id"]]["label"] == answer for item, answer in unlabelled) >= len(unlabelled) - 2
    saved = json.loads((job_dir / "artifacts" / "labels.json").read_text())["schemas"]["kinder"]
    assert saved["reward_model"] is True and saved["quantize"] == "4bit"
    assert (job_dir / "artifacts" / "kinder" / "adapter_model.safetensors").exists()


@pytest.mark.slow
def test_two_ranks_train_a_reward_model_on_their_own_shards(tmp_path: Path, tiny_llama: Path) -> None:
    """Every GPU a run is given: two CPU ranks over gloo stand in for two GPUs; each trains on its
    shard of the pairs (the Bradley-Terry module wrapped in DistributedDataParallel) and rank 0 writes
    one prediction per pair."""
    pytest.importorskip("peft")
    n = 80
    data = pairs(n)
    labels = [{"item_id": item["id"], "schema": "kinder", "label": answer, "user": "u"} for item, answer in data]
    holdout = [item["id"] for item, _ in data[::5]]
    params = {"base_model": str(tiny_llama), "lora_r": 8, "epochs": 2, "batch_size": 8, "learning_rate": 5e-3,
              "max_length": 48, "gradient_checkpointing": False}
    job = job_json("hf-llm-preference", (PREFERENCE,), params, num_threads=1, cpu_processes=2, device="cpu")
    job_dir = write_bundle(tmp_path, job, [item for item, _ in data], labels, holdout)
    done = run_worker(job_dir, timeout=600)
    result = read_result(job_dir)
    assert done.returncode == 0, (result, done.stderr.decode()[-3000:])
    logs = [e["text"] for e in read_jsonl(job_dir / "events.jsonl") if e["type"] == "log"]
    assert "data-parallel on 2 CPU processes (gloo)" in logs
    # 64 training pairs: 32 per rank, 4 steps of 8 an epoch on each, not 8 on one
    totals = [e["total"] for e in read_jsonl(job_dir / "events.jsonl") if e["type"] == "progress" and "loss" in e]
    assert totals[-1] == 8
    assert sorted(row["item_id"] for row in read_jsonl(job_dir / "predictions.jsonl")) == sorted(
        item["id"] for item, _ in data)
