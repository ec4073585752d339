"""``hf-llm-classification``: fine-tune a decoder LLM (Llama, Qwen, Mistral, Gemma, SmolLM, Phi) with
a LoRA adapter, on 4-bit or 8-bit base weights if asked (QLoRA), for text classification.

torch, transformers, peft (and bitsandbytes to quantise, gguf for a GGUF file) are imported inside
functions, so this module is standard library only and Python 3.8 safe, and a missing package is
reported as ``Trainer '<name>' could not be imported``.

hf-text-classification's holdout, loop, progress, cancel, prediction and artifact rules, with:

- the model: ``AutoModelForSequenceClassification`` on the decoder (a fresh ``score`` head reading
  the last real token); the pad token is the end-of-sequence token where the tokenizer has none,
  and the model's config is told which it is (it finds each text's last token by it).
- ``base_model``: a Hugging Face Hub name, a model folder or a ``.gguf`` file on the training host,
  as for llm-zero-shot (:func:`~potato.training.trainers.llm_zero_shot.model_source`; transformers
  de-quantises a GGUF file's weights on load).
- LoRA always (peft, task ``SEQ_CLS``: the head trains in full and is saved with the adapter),
  rank ``lora_r``, alpha ``lora_alpha`` (default twice the rank), ``lora_dropout``, on
  ``target_modules`` (default every linear layer but the head: ``all-linear``).
- ``quantize``: ``4bit`` is NF4 with double quantisation, ``8bit`` LLM.int8, both through
  transformers' ``quantization_config=BitsAndBytesConfig(...)``, then peft's
  ``prepare_model_for_kbit_training``; the head stays in full precision. bitsandbytes runs on a
  CUDA GPU, or an x86-64 CPU with AVX2 (slowly); elsewhere the run says so before training.
- dtype: bf16 on a CUDA GPU that has it (also the 4-bit compute dtype), else float32.
- ``gradient_checkpointing`` (on by default: recompute activations in the backward pass, far less
  memory for a little more time) and ``gradient_accumulation`` (the optimiser steps every N
  batches; progress counts batches, so its total is ``epochs`` times the batches per epoch).

Artifacts: ``artifacts/<schema>/`` holds the adapter (``adapter_model.safetensors``,
``adapter_config.json``; the head is in it as peft's ``modules_to_save``) and the tokenizer, never the
base model's weights; it loads with ``peft.AutoPeftModelForSequenceClassification.from_pretrained``,
which fetches the base model named in ``adapter_config.json`` (the Hub name or the folder as the run
had it). ``artifacts/labels.json`` names ``base_model``, ``quantize`` and ``lora_r`` per schema.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Any, ClassVar, Iterator, Mapping

from potato.training.job.failures import BadJob
from potato.training.trainers.base import Param
from potato.training.trainers.hf_text import HfTextTrainer, check_base_weights
from potato.training.trainers.hub_download import download_shown
from potato.training.trainers.llm_memory import check_fits
from potato.training.trainers.llm_zero_shot import (
    DEFAULT_BASE_MODEL,
    LOCAL_PREFIXES,
    QUANTIZE,
    bitsandbytes_usable,
    check_gguf_quantize,
    llm_extra_modules,
    model_available,
    model_source,
    quantized_loading,
)

NAME = "hf-llm-classification"
DEFAULT_LR = 2e-4
"""The learning rate QLoRA recipes use for a LoRA adapter on a decoder."""
KNOWN_NOISE = (
    # peft calls transformers' gradient-checkpointing methods by names transformers 5 deprecates.
    (FutureWarning, r".*gradient_checkpointing.* is deprecated"),
    (FutureWarning, r".*is_gradient_checkpointing.* is deprecated"),
)
"""(category, message regex) of library warnings that say nothing about the run."""
QUANTIZE_WORDS = {"none": "", "8bit": ", 8-bit", "4bit": ", 4-bit"}


@contextlib.contextmanager
def _known_noise_ignored() -> Iterator[None]:
    with warnings.catch_warnings():
        for category, pattern in KNOWN_NOISE:
            warnings.filterwarnings("ignore", message=pattern, category=category)
        yield


def check_params(params: Mapping[str, Any]) -> None:
    """:class:`BadJob` for values the parameter types alone let through."""
    dropout = float(params["lora_dropout"])
    if not 0 <= dropout < 1:
        raise BadJob(f"Trainer '{NAME}' parameter lora_dropout must be at least 0 and below 1, not {dropout!r}")
    if not target_modules(str(params["target_modules"])):
        raise BadJob(f"Trainer '{NAME}' parameter target_modules must be all-linear or module names separated by "
                     "commas, e.g. q_proj,v_proj")


def target_modules(value: str) -> str | list[str]:
    """``target_modules`` as peft takes it: ``all-linear``, or the comma-separated module names."""
    if value.strip() == "all-linear":
        return "all-linear"
    return [name.strip() for name in value.split(",") if name.strip()]


def lora_alpha(params: Mapping[str, Any]) -> int:
    """``lora_alpha``, or twice the rank where the run names none."""
    alpha = params["lora_alpha"]
    return int(alpha) if alpha is not None else 2 * int(params["lora_r"])


def label_word_head(model: Any, tokenizer: Any, labels: Any) -> bool:
    """Start the ``score`` head's row of each label at the mean input embedding of the label's words
    (what a tied model's output layer scores that word with): the head starts as the model's own sense
    of each label, not at random. With a random head a short run on few labels was a matter of luck:
    SmolLM2-135M on 60 reviews scored 0.93, 0.88 and 0.50 (every review one label) over three seeds,
    and 1.00, 1.00 and 0.90 from the labels' words. False where the model has no such head."""
    import torch

    head = getattr(model, "score", None)
    embeddings = model.get_input_embeddings()
    if not isinstance(head, torch.nn.Linear) or embeddings is None or head.out_features != len(labels) \
            or head.in_features != embeddings.weight.shape[1]:
        return False
    with torch.no_grad():
        for row, label in enumerate(labels):
            ids = tokenizer(" " + str(label), add_special_tokens=False)["input_ids"]
            if not ids:
                return False
            vectors = embeddings.weight[torch.tensor(ids, device=embeddings.weight.device)].float()
            head.weight[row].copy_(vectors.mean(0).to(head.weight.dtype).to(head.weight.device))
        if head.bias is not None:
            head.bias.zero_()
    return True


def dtype_keyword(transformers_version: str) -> str:
    """The ``from_pretrained`` keyword for the weights' dtype: ``dtype`` since transformers 4.56,
    ``torch_dtype`` before (the old name warns in transformers 5)."""
    parts = []
    for part in transformers_version.split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits) if digits else 0)
    major, minor = (parts + [0, 0])[:2]
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


class HfLlmTrainer(HfTextTrainer):
    name = NAME
    head_from_label_words: ClassVar[bool] = True
    """The head's row of each label starts at the label's words (:func:`label_word_head`)."""
    description = ("Fine-tunes a decoder LLM (Llama, Qwen, Mistral, ...) with a LoRA adapter, on 4-bit or "
                   "8-bit weights if asked, for text classification (torch)")
    requires = ("torch", "transformers", "peft")
    params: ClassVar[Mapping[str, Param]] = {
        "base_model": Param(DEFAULT_BASE_MODEL, (str,), "decoder LLM: a Hugging Face Hub name, a model folder or a "
                            f".gguf file on the training host (default {DEFAULT_BASE_MODEL})", shown=True),
        "quantize": Param("none", (str,), "base weights as loaded: none, 8bit or 4bit (NF4, QLoRA); 8bit and 4bit "
                          "need bitsandbytes and a CUDA GPU (or an x86-64 CPU with AVX2)", choices=QUANTIZE,
                          shown=True),
        "lora_r": Param(16, (int,), "LoRA rank", minimum=1),
        "lora_alpha": Param(None, (int,), "LoRA alpha (scale of the adapter's update; default twice lora_r)",
                            minimum=1),
        "lora_dropout": Param(0.05, (float,), "dropout on the LoRA adapter's input", minimum=0),
        "target_modules": Param("all-linear", (str,), "the layers LoRA adapts: all-linear (every linear layer but "
                                "the head) or module names separated by commas, e.g. q_proj,v_proj"),
        "epochs": Param(2, (int,), "passes over the training items", minimum=1),
        "batch_size": Param(4, (int,), "texts per training step", minimum=1),
        "gradient_accumulation": Param(1, (int,), "batches per optimiser step (a larger effective batch in the "
                                       "same memory)", minimum=1),
        "learning_rate": Param(DEFAULT_LR, (float,), "AdamW learning rate", minimum=0),
        "max_length": Param(512, (int,), "tokens per text; longer texts are truncated", minimum=8),
        "gradient_checkpointing": Param(True, (bool,), "recompute activations in the backward pass: much less GPU "
                                        "memory, somewhat slower"),
    }

    @classmethod
    def validate_params(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        params = super().validate_params(raw)
        check_params(params)
        check_gguf_quantize(cls.name, str(params["base_model"]), str(params["quantize"]))
        return params

    @classmethod
    def required_modules(cls, params: Mapping[str, Any]) -> tuple[str, ...]:
        return ("torch", "transformers", "peft") + llm_extra_modules(params)

    @property
    def learning_rate(self) -> float:
        return float(self.ctx.params["learning_rate"])

    @property
    def quantize(self) -> str:
        return str(self.ctx.params["quantize"])

    @contextlib.contextmanager
    def _model_available(self) -> Iterator[None]:
        with model_available(str(self.ctx.params["base_model"])):
            yield

    def _source(self) -> tuple[str, dict[str, Any]]:
        """What ``from_pretrained`` takes for ``base_model``, and ``gguf_file=`` for a GGUF file."""
        source, gguf = model_source(str(self.ctx.params["base_model"]))
        return source, ({"gguf_file": gguf} if gguf else {})

    def _load_tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        source, extra = self._source()
        with self._model_available():
            tokenizer = AutoTokenizer.from_pretrained(source, **extra)
        if tokenizer.pad_token is None:  # decoders mostly have none; padding needs one
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        return tokenizer

    def _dtype(self) -> Any:
        """bf16 on a CUDA GPU that has it (half float32's memory, its range), else float32."""
        import torch

        if torch.device(self.ctx.device).type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32

    def _pretrained(self, labels: Any, **extra: Any) -> Any:
        """``base_model`` with a fresh ``score`` head of ``labels``: quantised as asked, on the run's
        device, in :meth:`_dtype`."""
        import torch
        import transformers

        source, kwargs = self._source()
        kwargs[dtype_keyword(transformers.__version__)] = self._dtype()
        # quantised where it trains
        kwargs.update(quantized_loading(self.quantize, str(torch.device(self.ctx.device)), self._dtype()))
        base = str(self.ctx.params["base_model"])
        hub = base if not base.startswith(LOCAL_PREFIXES) and not base.lower().endswith(".gguf") else None
        with self._model_available(), bitsandbytes_usable(self.quantize):
            check_fits(self.ctx, source, kwargs.get("gguf_file"), training=True, lora_r=int(self.ctx.params["lora_r"]))
            with download_shown(hub, self.ctx.step) if hub else contextlib.nullcontext():
                model, loading = transformers.AutoModelForSequenceClassification.from_pretrained(
                    source, num_labels=len(labels), id2label=dict(enumerate(labels)),
                    label2id={label: i for i, label in enumerate(labels)}, output_loading_info=True, **kwargs, **extra)
        check_base_weights(model, loading, base, self.name)
        model.config.pad_token_id = self.tokenizer.pad_token_id  # the head reads each text's last real token
        model.config.use_cache = False  # no generation: a key/value cache is memory for nothing
        if self.head_from_label_words and label_word_head(model, self.tokenizer, labels):
            self.ctx.log(f"the head starts from the words of the labels ({', '.join(map(str, labels))}), not at random")
        return model

    def _with_adapter(self, model: Any) -> Any:
        """peft's LoRA adapter around ``model`` (only it and the head train), after peft's preparation
        of quantised weights, with gradient checkpointing if asked."""
        from peft import LoraConfig, TaskType, get_peft_model, prepare_model_for_kbit_training

        params = self.ctx.params
        checkpointing = bool(params["gradient_checkpointing"])
        no_reentry = {"use_reentrant": False}  # the frozen base's inputs need no gradient for this one
        with _known_noise_ignored():
            if self.quantize != "none":
                model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=checkpointing,
                                                        gradient_checkpointing_kwargs=no_reentry)
            elif checkpointing:
                enable = getattr(model, "activation_checkpointing_enable", None)
                if enable is not None:  # transformers 5's name
                    enable(activation_checkpointing_kwargs=no_reentry)
                else:
                    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=no_reentry)
            config = LoraConfig(task_type=TaskType.SEQ_CLS, r=int(params["lora_r"]), lora_alpha=lora_alpha(params),
                                lora_dropout=float(params["lora_dropout"]),
                                target_modules=target_modules(str(params["target_modules"])))
            return get_peft_model(model, config)

    def _adapter_note(self) -> str:
        return f" (LoRA{QUANTIZE_WORDS[self.quantize]})"

    def _save_model(self, model: Any, folder: Path) -> None:
        """The adapter and head only: the embeddings never train (peft would otherwise look for the base
        model's config to see whether the vocabulary grew, which a GGUF file's folder does not have)."""
        model.save_pretrained(str(folder), save_embedding_layers=False)

    def _labels_entry(self) -> dict[str, Any]:
        return {"base_model": self.ctx.params["base_model"], "lora": True, "quantize": self.quantize,
                "lora_r": int(self.ctx.params["lora_r"])}
