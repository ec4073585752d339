"""``hf-llm-preference``: a reward model from pairwise answers (which of two outputs is better),
trained with the Bradley-Terry loss: a decoder LLM with a LoRA adapter, on 4-bit or 8-bit base
weights if asked, as hf-llm-classification fine-tunes one.

torch, transformers and peft (bitsandbytes to quantise, gguf for a GGUF file) are imported inside
functions, so this module is standard library only and Python 3.8 safe.

- The model: ``AutoModelForSequenceClassification`` with one output, the reward r of a text: the
  item's prompt, then one option. Its head starts at zero, so every option starts equally good.
- The loss: P(A better than B) = sigmoid(r(A) - r(B)) (Bradley and Terry), cross-entropy against
  the annotators' answer: 1 for A, 0 for B, and 1/2 for a tie, as upstream stores one (``tie``): a
  tie teaches that the two are equally good rather than being dropped.
- Each training pair is one example; both options go through the model in one batch.
- The suggestion: the option the model prefers, with its probability as the confidence; a tie where
  the scheme allows one and the probability is within ``tie_margin`` of 1/2 (0: never). Each option's
  probability is kept (``A``, ``B``), as a classifier's labels' are.
- Everything else (LoRA, ``quantize``, dtype, gradient checkpointing and accumulation, the memory
  preflight, data-parallel ranks, progress, cancel) is hf-llm-classification's.

Artifacts: ``artifacts/<schema>/`` holds the adapter and the one-output head with the tokenizer;
``labels.json`` names ``base_model``, ``quantize``, ``lora_r`` and ``reward_model: true``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, ClassVar, Mapping, Sequence

from potato.training.job.failures import BadJob
from potato.training.job.schemes import FIRST, SECOND, TIE, SchemeType
from potato.training.trainers.base import Example, JobItem, Param, Prediction, labelled
from potato.training.trainers.hf_llm import HfLlmTrainer

NAME = "hf-llm-preference"
PAIRS_FIELD = "pairs"
"""An item's field: per pairwise question, ``{"prompt", "options": [A's text, B's text]}``."""
TARGETS = {FIRST: 1.0, SECOND: 0.0, TIE: 0.5}
"""What the model learns P(A better) to be from each answer."""


def pair_of(item: JobItem, schema: str) -> tuple[str, str] | None:
    """The two texts the reward model scores for ``item`` on ``schema``: the prompt with each option;
    None where the item has no pair for it."""
    pairs = item.fields.get(PAIRS_FIELD)
    entry = pairs.get(schema) if isinstance(pairs, dict) else None
    options = entry.get("options") if isinstance(entry, dict) else None
    if not isinstance(options, list) or len(options) != 2 or not all(isinstance(o, str) for o in options):
        return None
    prompt = entry.get("prompt") if isinstance(entry, dict) and isinstance(entry.get("prompt"), str) else ""
    return tuple(f"{prompt}\n\n{option}" if prompt else option for option in options)  # type: ignore[return-value]


def preference(p_first: float, labels: Sequence[str], tie_margin: float) -> Prediction:
    """The suggestion for a pair the model gives A the probability ``p_first`` of being better (pure)."""
    if TIE in labels and abs(p_first - 0.5) < tie_margin:
        label, confidence = TIE, 1.0 - abs(p_first - 0.5) * 2
    else:
        label, confidence = (FIRST, p_first) if p_first >= 0.5 else (SECOND, 1.0 - p_first)
    return Prediction(label, confidence, {FIRST: p_first, SECOND: 1.0 - p_first})


def bradley_terry(model: Any) -> Any:
    """``model`` (one output) as the training loop calls a model: a batch holds A's texts, then B's,
    its ``labels`` are P(A better), and the loss is the cross-entropy of sigmoid(r(A) - r(B))."""
    import torch

    class BradleyTerry(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, labels: Any, **batch: Any) -> Any:
            rewards = self.inner(**batch).logits.squeeze(-1).float()
            half = rewards.shape[0] // 2
            loss = torch.nn.functional.binary_cross_entropy_with_logits(rewards[:half] - rewards[half:], labels)
            return SimpleNamespace(loss=loss)

    return BradleyTerry(model)


class HfLlmPreferenceTrainer(HfLlmTrainer):
    name = NAME
    description = ("A reward model from pairwise answers (Bradley-Terry): a decoder LLM with a LoRA adapter, on "
                   "4-bit or 8-bit weights if asked (torch)")
    annotation_types = (SchemeType.PAIRWISE,)
    head_from_label_words = False  # one output, started at zero
    params: ClassVar[Mapping[str, Param]] = {
        **HfLlmTrainer.params,
        "batch_size": Param(4, (int,), "pairs per training step (each pair is two texts)", minimum=1),
        "tie_margin": Param(0.0, (float,), "suggest a tie (where the question allows one) when the model's "
                            "probability that A is better is within this of 0.5; 0: never", minimum=0),
    }

    def fit(self, examples: Sequence[Example]) -> None:
        import torch

        self._begin_fit()
        for spec in self.ctx.schemas:
            rows = [(pair, TARGETS[str(target)]) for ex, target in labelled(examples, spec.name)
                    for pair in [pair_of(ex.item, spec.name)] if pair is not None and str(target) in TARGETS]
            if not rows:
                raise BadJob(f"No labelled item of {spec.name!r} holds the two options it compares; check the "
                             "question's items_key names the item's list of two options")
            model = self._pretrained(["reward"])
            with torch.no_grad():  # every option starts equally good: P(A better) = 1/2 for every pair
                model.score.weight.zero_()
            model = self._with_adapter(model)
            trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
            ties = sum(1 for _, t in rows if t == 0.5)
            self.ctx.log("{}: {} pairs ({} ties), {:,} trainable parameters{}".format(
                spec.name, len(rows), ties, trainable, self._adapter_note()))

            def batch_of(idx: list[int], device: Any, rows: list[Any] = rows) -> tuple[dict[str, Any], Any]:
                texts = [rows[i][0][0] for i in idx] + [rows[i][0][1] for i in idx]
                return (self._encode(texts, device),
                        torch.tensor([rows[i][1] for i in idx], dtype=torch.float32, device=device))

            self._train_one(spec.name, bradley_terry(model), len(rows), batch_of)
            if len(self.ctx.schemas) > 1:
                model.to("cpu")
            self.models[spec.name] = model

    def predict(self, items: Sequence[JobItem]) -> list[dict[str, Prediction | None]]:
        import torch

        ctx = self.ctx
        device = torch.device(ctx.device)
        batch_size = max(1, int(ctx.params["batch_size"]))
        margin = float(ctx.params["tie_margin"])
        out: list[dict[str, Prediction | None]] = [{} for _ in items]
        for spec in ctx.schemas:
            model = self.models.get(spec.name)
            pairs = [(k, pair) for k, item in enumerate(items) for pair in [pair_of(item, spec.name)] if pair]
            for k, _ in enumerate(items):
                out[k][spec.name] = None
            if model is None:
                continue
            model.to(device)
            with torch.inference_mode():
                for start in range(0, len(pairs), batch_size):
                    ctx.check_stop()
                    chunk = pairs[start:start + batch_size]
                    texts = [pair[0] for _, pair in chunk] + [pair[1] for _, pair in chunk]
                    rewards = model(**self._encode(texts, device)).logits.squeeze(-1).float()
                    p_first = torch.sigmoid(rewards[:len(chunk)] - rewards[len(chunk):]).cpu().tolist()
                    for (k, _), p in zip(chunk, p_first):
                        out[k][spec.name] = preference(float(p), ctx.class_labels[spec.name], margin)
                    ctx.progress(min(start + batch_size, len(pairs)), max(1, len(pairs)))
            if len(ctx.schemas) > 1:
                model.to("cpu")
        return out

    def _labels_entry(self) -> dict[str, Any]:
        return {**super()._labels_entry(), "reward_model": True}
