"""``hf-token-classification``: spans by fine-tuning a transformers encoder per token, fully or with
LoRA (peft): hf-text-classification's loading, devices, loop, progress, cancel and artifacts, with a
token classification head.

Each schema's head predicts a BIO tag per token (``O``, then ``B-``/``I-`` for each label). A token's
tag comes from the majority spans by its character offsets in the text (the tokenizer's
``offset_mapping``, so the base model needs a fast tokenizer): a token that shares a character with
a span is inside it, the first of them ``B-``, so word pieces of one word carry its tag. Special and
padding tokens are left out of the loss (-100). Text past ``max_length`` tokens is not seen: no span
is learnt or found there. A prediction reads the most probable tag of every token back into spans
(seqeval's reading of BIO), each with the mean probability of its tokens' tags; the item's
confidence is the mean over all its tokens.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

from potato.training.job.failures import BadJob
from potato.training.job.schemes import SchemeType
from potato.training.job.labels import label_spans
from potato.training.job.spans import OUTSIDE, Span, bio_tags, spans_from_tags
from potato.training.trainers.base import Example, JobItem, Prediction, labelled
from potato.training.trainers.hf_text import HfTextTrainer

IGNORED = -100
"""The label torch's cross-entropy skips: special and padding tokens."""


def tag_names(labels: Sequence[str]) -> list[str]:
    """The head's classes for a span scheme's labels: ``O``, then ``B-`` and ``I-`` of each."""
    return [OUTSIDE] + [f"{prefix}-{label}" for label in labels for prefix in ("B", "I")]


class HfTokenTrainer(HfTextTrainer):
    name = "hf-token-classification"
    description = "Fine-tunes a Hugging Face transformer (full or LoRA) to mark spans, token by token (torch)"
    annotation_types = (SchemeType.SPAN,)
    auto_model: ClassVar[str] = "AutoModelForTokenClassification"
    lora_task: ClassVar[str] = "TOKEN_CLS"

    def _offsets(self, texts: list[str], device: Any) -> tuple[dict[str, Any], list[list[tuple[int, int]]]]:
        """The model inputs of ``texts`` and each token's character offsets ((0, 0): no text)."""
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=int(self.ctx.params["max_length"]),
                             return_offsets_mapping=True, return_tensors="pt")
        offsets = [[(int(a), int(b)) for a, b in row] for row in enc.pop("offset_mapping").tolist()]
        return {k: v.to(device) for k, v in enc.items()}, offsets

    def fit(self, examples: Sequence[Example]) -> None:
        import torch

        self._begin_fit()
        if not getattr(self.tokenizer, "is_fast", False):
            raise BadJob("base_model {}'s tokenizer gives no character offsets (it is not a fast tokenizer), so "
                         "spans cannot be placed on its tokens; pick a model that has a tokenizer.json".format(
                             self.ctx.params["base_model"]))
        several = len(self.ctx.schemas) > 1
        for spec in self.ctx.schemas:
            rows = labelled(examples, spec.name)
            spans = [label_spans(target) for _, target in rows]
            if not any(spans):
                self.constant[spec.name] = ()  # nothing marked yet: the model would learn "O" everywhere
                continue
            tags = tag_names(self.ctx.class_labels[spec.name])
            tag_id = {tag: i for i, tag in enumerate(tags)}
            model = self._with_adapter(self._pretrained(tags))
            self.ctx.log("{}: {} labels, {} training items, {:,} trainable parameters{}".format(
                spec.name, len(self.ctx.class_labels[spec.name]), len(rows),
                sum(p.numel() for p in model.parameters() if p.requires_grad),
                " (LoRA)" if self.ctx.params["lora"] else ""))
            texts = [ex.text for ex, _ in rows]

            def batch_of(idx: list[int], device: Any, texts: list[str] = texts, spans: list[list[Span]] = spans,
                         tag_id: dict[str, int] = tag_id) -> tuple[dict[str, Any], Any]:
                inputs, offsets = self._offsets([texts[i] for i in idx], device)
                labels = []
                for i, row in zip(idx, offsets):
                    row_tags, _ = bio_tags(row, spans[i])
                    labels.append([tag_id[tag] if a < b else IGNORED for (a, b), tag in zip(row, row_tags)])
                return inputs, torch.tensor(labels, dtype=torch.long, device=device)

            self._train_one(spec.name, model, len(texts), batch_of)
            if several:  # one model on the accelerator at a time
                model.to("cpu")
            self.models[spec.name] = model

    def predict(self, items: Sequence[JobItem]) -> list[dict[str, Prediction | None]]:
        import torch

        ctx = self.ctx
        device = torch.device(ctx.device)
        batch_size = max(1, int(ctx.params["batch_size"]) * 2)
        out: list[dict[str, Prediction | None]] = [{} for _ in items]
        total = max(1, -(-len(items) // batch_size) * len(ctx.schemas))
        step = 0
        for spec in ctx.schemas:
            if spec.name in self.constant:
                for row in out:
                    row[spec.name] = Prediction((), 1.0)
                continue
            model = self.models[spec.name].to(device)
            tags = tag_names(ctx.class_labels[spec.name])
            with torch.inference_mode():
                for start in range(0, len(items), batch_size):
                    ctx.check_stop()
                    chunk = items[start:start + batch_size]
                    inputs, offsets = self._offsets([item.text for item in chunk], device)
                    sure, best = torch.softmax(model(**inputs).logits.float(), dim=-1).max(dim=-1)
                    for offset, (places, ids, probs) in enumerate(zip(offsets, best.tolist(), sure.tolist())):
                        real = [k for k, (a, b) in enumerate(places) if a < b]
                        found = spans_from_tags([places[k] for k in real], [tags[ids[k]] for k in real],
                                                [probs[k] for k in real])
                        confidence = sum(probs[k] for k in real) / len(real) if real else 1.0
                        out[start + offset][spec.name] = Prediction(tuple(found), confidence)
                    step += 1
                    ctx.progress(step, total)
            if len(ctx.schemas) > 1:
                model.to("cpu")
        return out
