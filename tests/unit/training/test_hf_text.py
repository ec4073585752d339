"""hf-text-classification on a tiny random BERT built in code (no hub, no download): full and LoRA.

The worker runs in-process here (``run_job``) so torch and transformers are imported once for the
module; the subprocess path is covered by test_worker.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from potato.training.worker.program import run_job

from tests.harness.jobdirs import ASPECTS, SENTIMENT, job_json, read_jsonl, read_result, write_bundle
from tests.harness.trainingdata import DATA, N
from .tinybert import build_tiny_bert, torch_threads_restored


one_thread = pytest.fixture(autouse=True)(torch_threads_restored)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("bert"), [text for text, _ in DATA])


def reviews_job(job_dir: Path, params: dict[str, Any], schemes: Any = (SENTIMENT,), **fields: Any) -> Path:
    items = [{"id": f"i{i}", "text": text} for i, (text, _) in enumerate(DATA)]
    labels: list[dict[str, Any]] = []
    for i, (_, label) in enumerate(DATA[: N - 20]):  # the last 20 items stay unlabelled
        labels.append({"item_id": f"i{i}", "schema": "sentiment", "label": label, "user": "u"})
        aspects = ["quality"] if label == "positive" else ["quality", "delivery"]
        labels.append({"item_id": f"i{i}", "schema": "aspects", "label": aspects, "user": "u"})
    holdout = [f"i{i}" for i in range(0, N - 20, 5)]
    return write_bundle(job_dir, job_json("hf-text-classification", schemes, params, **fields), items, labels, holdout)


def test_full_fine_tune(tmp_path: Path, tiny_bert: Path) -> None:
    params = {"base_model": str(tiny_bert), "epochs": 4, "batch_size": 16, "learning_rate": 5e-3, "max_length": 32}
    job_dir = reviews_job(tmp_path, params, (SENTIMENT, ASPECTS), num_threads=1)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    result = read_result(job_dir)
    assert result["device"] == "cpu"
    assert result["metrics"]["sentiment/holdout_accuracy"] >= 0.9
    assert result["metrics"]["aspects/holdout_accuracy"] >= 0.9
    assert result["predictions"] == 2 * N
    progress = [e for e in read_jsonl(job_dir / "events.jsonl") if e["type"] == "progress"]
    assert any("loss" in e and e.get("epoch") == 4 for e in progress)

    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    labels = json.loads((job_dir / "artifacts" / "labels.json").read_text())["schemas"]
    assert labels["sentiment"] == {"annotation_type": "radio", "labels": ["positive", "negative"],
                                   "base_model": str(tiny_bert), "lora": False, "dir": "sentiment"}
    folder = job_dir / "artifacts" / labels["sentiment"]["dir"]
    model = AutoModelForSequenceClassification.from_pretrained(str(folder))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    assert model.config.id2label == {0: "positive", 1: "negative"}
    logits = model(**tokenizer(["i love this great product"], return_tensors="pt")).logits
    assert model.config.id2label[int(logits.argmax())] == "positive"


def test_lora(tmp_path: Path, tiny_bert: Path) -> None:
    pytest.importorskip("peft")
    params = {"base_model": str(tiny_bert), "lora": True, "epochs": 8, "batch_size": 16,
              "learning_rate": 1e-2, "max_length": 32}
    job_dir = reviews_job(tmp_path, params, device="cuda:1", num_threads=1)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    result = read_result(job_dir)
    assert result["metrics"]["holdout_accuracy"] >= 0.75  # a random base model: only adapters and head learn
    warnings = [e["text"] for e in read_jsonl(job_dir / "events.jsonl") if e["type"] == "warning"]
    assert "Requested device cuda:1 is not available; using cpu instead" in warnings
    adapter = job_dir / "artifacts" / "sentiment"
    assert (adapter / "adapter_config.json").exists() and not (adapter / "model.safetensors").exists()
    assert "(LoRA)" in " ".join(e.get("text", "") for e in read_jsonl(job_dir / "events.jsonl"))


def test_a_missing_base_model_fails_clearly(tmp_path: Path) -> None:
    job_dir = reviews_job(tmp_path, {"base_model": str(tmp_path / "no-such-model")})
    assert run_job(job_dir) == 2
    result = read_result(job_dir)
    assert (result["status"], result["reason"]) == ("failed", "bad_job")
    assert result["message"] == (f"base_model {tmp_path / 'no-such-model'} is not a folder on this machine; "
                                 "copy the model there or name a Hugging Face Hub model")


def test_the_default_base_model_without_network_or_cache_says_both_fixes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tutorial's request names no base_model, so the default is fetched from the Hub; where the
    worker can neither reach it nor find it cached, the run says so (issue 19)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    job_dir = reviews_job(tmp_path / "job", {})
    assert run_job(job_dir) == 2
    result = read_result(job_dir)
    assert (result["status"], result["reason"]) == ("failed", "bad_job")
    assert result["message"].startswith(
        "base_model distilbert-base-uncased is not in this machine's Hugging Face cache and could not be "
        "downloaded (")
    assert result["message"].endswith(
        "); give the worker network access to huggingface.co, or copy the model folder to this machine and "
        "set params.base_model to its path")


def test_schema_folder_names_are_safe_and_unique() -> None:
    from potato.training.trainers.hf_text import folder_name

    assert folder_name("sentiment") == "sentiment"
    assert folder_name("../étoile rating/") == "toile_rating"
    assert folder_name("a b", taken=["a_b"]) == "a_b_2"
    assert folder_name("...") == "schema"
