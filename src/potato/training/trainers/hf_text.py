"""``hf-text-classification``: fine-tune a transformers encoder, fully or with LoRA (peft).

torch, transformers (and peft for LoRA) are imported inside functions, so this module is standard
library only and Python 3.8 safe, and a missing package is reported as ``Trainer '<name>' could not be imported``.

``base_model`` is a local folder (works offline) or a Hugging Face Hub name such as
``distilbert-base-uncased`` (the default); a hub name needs network access from wherever the worker runs (or a
filled hub cache there, with ``HF_HUB_OFFLINE=1``). This trainer never changes those settings.

One model per schema: ``AutoModelForSequenceClassification`` with a fresh head of the schema's
labels (radio: softmax, cross-entropy; multiselect: ``problem_type="multi_label_classification"``,
sigmoid and a label on at p >= 0.5). The loop is bare torch (AdamW, linear decay to zero, no
``transformers.Trainer``): it reports progress and loss per step, checks for a stop request per
step and adds no fixed overhead. With ``lora: true`` peft wraps the model (r=``lora_r``, alpha=2r,
dropout 0.1, on peft's default modules for the architecture: query/value for BERT) and only the
adapter and the classification head train; default learning rate 2e-3 with LoRA, 5e-5 without.

Artifacts: ``artifacts/<schema>/`` per schema with the model (LoRA: the adapter only) and the
tokenizer via ``save_pretrained``, and ``artifacts/labels.json`` naming each schema's folder, its
labels (the model's label order), ``base_model`` and ``lora``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import warnings
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping, Sequence

from potato.training.gpus import dataparallel
from potato.training.job.failures import BadJob, Cancelled, ModelNotFound
from potato.training.job.results import Label
from potato.training.trainers.hub_download import download_shown
from potato.training.trainers.base import (
    Example,
    JobItem,
    Param,
    Prediction,
    TrainContext,
    Trainer,
    labelled,
    multiselect_prediction,
    radio_prediction,
    write_labels_json,
)

log = logging.getLogger(__name__)

DEFAULT_BASE_MODEL = "distilbert-base-uncased"
"""What a run fine-tunes when its request names no ``base_model``: small (66M parameters), English, and
the model the docs' examples use, so a request without params is accepted as written."""
DEFAULT_LR_FULL = 5e-5
DEFAULT_LR_LORA = 2e-3


def _quiet_transformers() -> None:
    """transformers' load report, 'newly initialized weights' notice and progress bars are noise
    in a run log: a fresh classification head is the point of fine-tuning."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


KNOWN_NOISE = (
    # peft 0.21 calls a transformers 5 method that transformers deprecates; nothing for us to change.
    (FutureWarning, r".*is_gradient_checkpointing.* is deprecated"),
)
"""(category, message regex) of library warnings that say nothing about the run."""


@contextlib.contextmanager
def _known_noise_ignored() -> Iterator[None]:
    """Silence :data:`KNOWN_NOISE` here only; every other warning still reaches the log (or fails a
    test run with warnings as errors)."""
    with warnings.catch_warnings():
        for category, pattern in KNOWN_NOISE:
            warnings.filterwarnings("ignore", message=pattern, category=category)
        yield


def _set_head_bias(model: Any, num_labels: int, prior: Sequence[float]) -> None:
    """Start each multiselect label's output bias at the log-odds of its training frequency.

    With a zero bias the first steps of binary cross-entropy are spent learning that most
    labels are rare (or always on), and that early push can saturate the pooled representation
    so the labels that do vary are never learnt (seen on small models). Starting at the prior
    leaves only the input-dependent part to learn. The head is the last Linear layer with one
    output per label (``classifier``, ``classifier.out_proj``, ``score``).
    """
    import torch

    head = None
    for _, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and module.out_features == num_labels:
            head = module
    if head is None or head.bias is None:
        log.info("no classification head bias found; multiselect bias left at its initial value")
        return
    p = torch.tensor(prior, dtype=head.bias.dtype).clamp(0.01, 0.99)
    with torch.no_grad():
        head.bias.copy_(torch.log(p / (1 - p)))


def check_base_weights(model: Any, loading_info: Mapping[str, Any], base: str, trainer: str) -> None:
    """:class:`BadJob` when ``base``'s weights file lacks the model's input embeddings or any layer's
    weights: transformers starts those at random (only a warning says so), and the run trains on noise
    and scores near chance. A fresh head, or a pooler the checkpoint never had, is expected."""
    embeddings = model.get_input_embeddings()
    names = {id(param): name for name, param in model.named_parameters()}
    embedding_name = names.get(id(embeddings.weight)) if embeddings is not None else None
    missing = [key for key in loading_info.get("missing_keys", ())
               if key == embedding_name or ".layers." in key or ".layer." in key]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise BadJob(f"Trainer '{trainer}': base_model {base} has no weights for {missing[0]}{more}, so training "
                     "would start them at random; use the model's folder as it is published (a tied model's "
                     "weights file names its input embeddings, e.g. model.embed_tokens.weight) or its GGUF file")


def folder_name(schema: str, taken: Sequence[str] = ()) -> str:
    """A file-system-safe, unique folder name for a schema's model."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", schema).strip("._") or "schema"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


class HfTextTrainer(Trainer):
    name = "hf-text-classification"
    description = "Fine-tunes a Hugging Face transformer (full or LoRA) for text classification (torch)"
    requires = ("torch", "transformers", "peft")
    uses_device = True
    reports_loss = True
    data_parallel = True
    auto_model: ClassVar[str] = "AutoModelForSequenceClassification"
    """The transformers class whose head the run trains (hf-token-classification: per token)."""
    lora_task: ClassVar[str] = "SEQ_CLS"
    params: ClassVar[Mapping[str, Param]] = {
        "base_model": Param(DEFAULT_BASE_MODEL, (str,), "local model folder or Hugging Face Hub name (a hub name "
                            f"needs network or a filled hub cache; default {DEFAULT_BASE_MODEL})", shown=True),
        "lora": Param(False, (bool,), "train a LoRA adapter (peft) instead of every weight"),
        "lora_r": Param(8, (int,), "LoRA rank", minimum=1),
        "epochs": Param(3, (int,), "passes over the training items", minimum=1),
        "batch_size": Param(16, (int,), "texts per training step", minimum=1),
        "learning_rate": Param(None, (float,), "AdamW learning rate (default 2e-3 with LoRA, 5e-5 without)",
                               minimum=0),
        "max_length": Param(128, (int,), "tokens per text; longer texts are truncated", minimum=8),
    }

    def __init__(self, ctx: TrainContext) -> None:
        super().__init__(ctx)
        self.tokenizer: Any = None
        self.models: dict[str, Any] = {}
        # Schemas with nothing to learn (one radio label, or no multiselect label): a fixed answer.
        self.constant: dict[str, Label] = {}

    @classmethod
    def required_modules(cls, params: Mapping[str, Any]) -> tuple[str, ...]:
        return ("torch", "transformers") + (("peft",) if params.get("lora") else ())

    @property
    def base_model(self) -> str:
        """``base_model`` as transformers takes it: a hub name, or a local folder (``~`` expanded)."""
        base = str(self.ctx.params["base_model"])
        if not base.startswith(("/", ".", "~")):
            return base  # a hub name such as "distilbert-base-uncased" or "org/model"
        folder = Path(base).expanduser()
        if not folder.is_dir():
            raise BadJob(f"base_model {base} is not a folder on this machine; copy the model there or name a "
                         "Hugging Face Hub model")
        return str(folder)

    @contextlib.contextmanager
    def _model_available(self) -> Iterator[None]:
        """A hub name that is neither cached here nor downloadable: say which of the two fixes applies."""
        try:
            yield
        except OSError as exc:
            base = str(self.ctx.params["base_model"])
            if base.startswith(("/", ".", "~")):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelNotFound(
                f"base_model {base} is not in this machine's Hugging Face cache and could not be downloaded "
                f"({first}); give the worker network access to huggingface.co, or copy the model folder to "
                "this machine and set params.base_model to its path") from None

    @property
    def learning_rate(self) -> float:
        lr = self.ctx.params["learning_rate"]
        if lr is not None:
            return float(lr)
        return DEFAULT_LR_LORA if self.ctx.params["lora"] else DEFAULT_LR_FULL

    def _load_tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        with self._model_available():
            tokenizer = AutoTokenizer.from_pretrained(self.base_model)
        if tokenizer.pad_token is None:  # GPT-style tokenizers have none; padding needs one
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        return tokenizer

    def _load_model(self, labels: Sequence[str], multiselect: bool,
                    prior: Sequence[float] | None = None) -> Any:
        model = self._pretrained(labels, problem_type="multi_label_classification" if multiselect
                                 else "single_label_classification")
        if prior is not None:
            _set_head_bias(model, len(labels), prior)
        return self._with_adapter(model)

    def _pretrained(self, labels: Sequence[str], **extra: Any) -> Any:
        """``base_model`` with a fresh head of ``labels`` (:attr:`auto_model`'s kind of head)."""
        import transformers

        base = self.base_model
        hub = base if not str(self.ctx.params["base_model"]).startswith(("/", ".", "~")) else None
        with self._model_available(), download_shown(hub, self.ctx.step) if hub else contextlib.nullcontext():
            model, loading = getattr(transformers, self.auto_model).from_pretrained(
                base,
                num_labels=len(labels),
                id2label=dict(enumerate(labels)),
                label2id={label: i for i, label in enumerate(labels)},
                ignore_mismatched_sizes=True,  # a base model fine-tuned on other labels gets a fresh head
                output_loading_info=True,
                **extra,
            )
        check_base_weights(model, loading, str(self.ctx.params["base_model"]), self.name)
        if model.config.pad_token_id is None:
            model.config.pad_token_id = self.tokenizer.pad_token_id
        return model

    def _with_adapter(self, model: Any) -> Any:
        """With ``lora: true``, peft's LoRA adapter around ``model`` (only it and the head train)."""
        if self.ctx.params["lora"]:
            from peft import LoraConfig, TaskType, get_peft_model

            r = int(self.ctx.params["lora_r"])
            with _known_noise_ignored():
                model = get_peft_model(model, LoraConfig(task_type=getattr(TaskType, self.lora_task), r=r,
                                                         lora_alpha=2 * r, lora_dropout=0.1))
        return model

    def _begin_fit(self) -> None:
        """What every fit does first: quiet transformers, the thread cap, the seed, the tokenizer."""
        import torch
        from transformers import set_seed

        _quiet_transformers()
        if self.ctx.num_threads:
            torch.set_num_threads(self.ctx.num_threads)
        set_seed(self.ctx.seed)
        self.ctx.step("loading {}".format(self.ctx.params["base_model"]))
        self.tokenizer = self._load_tokenizer()

    def fit(self, examples: Sequence[Example]) -> None:
        import torch

        self._begin_fit()
        several = len(self.ctx.schemas) > 1
        for spec in self.ctx.schemas:
            rows = labelled(examples, spec.name)
            labels = self.ctx.class_labels[spec.name]
            if not labels or (not spec.multiselect and len(labels) == 1):
                self.constant[spec.name] = () if spec.multiselect else (labels[0] if labels else str(rows[0][1]))
                continue
            prior: list[float] | None = None
            if spec.multiselect:
                targets: list[Any] = [[1.0 if label in t else 0.0 for label in labels] for _, t in rows]
                prior = [sum(column) / len(rows) for column in zip(*targets)]
            else:
                targets = [labels.index(str(t)) for _, t in rows]
            model = self._load_model(labels, spec.multiselect, prior)
            trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
            self.ctx.log("{}: {} labels, {} training items, {:,} trainable parameters{}".format(
                spec.name, len(labels), len(rows), trainable, self._adapter_note()))
            texts = [ex.text for ex, _ in rows]
            dtype = torch.float32 if spec.multiselect else torch.long

            def batch_of(idx: list[int], device: Any, texts: list[str] = texts, targets: list[Any] = targets,
                         dtype: Any = dtype) -> tuple[dict[str, Any], Any]:
                return (self._encode([texts[i] for i in idx], device),
                        torch.tensor([targets[i] for i in idx], dtype=dtype, device=device))

            self._train_one(spec.name, model, len(texts), batch_of)
            if several:  # one model on the accelerator at a time
                model.to("cpu")
            self.models[spec.name] = model

    def _adapter_note(self) -> str:
        """What the "trainable parameters" log line adds about how the model trains."""
        return " (LoRA)" if self.ctx.params["lora"] else ""

    def _train_one(self, schema: str, model: Any, n: int,
                   batch_of: Callable[[list[int], Any], tuple[dict[str, Any], Any]]) -> None:
        """``epochs`` passes over ``n`` examples in a seeded order; ``batch_of(indices, device)`` gives
        a batch's model inputs and labels (a class per text, or a tag per token).

        With a ``gradient_accumulation`` parameter of N > 1 (hf-llm-classification) the optimiser steps
        every N batches on their mean gradient (and after an epoch's last batch); progress still counts
        batches, the learning-rate schedule optimiser steps. Without it (the encoders) N is 1.

        In a data-parallel run each rank takes its shard of every epoch's order (as many items as every
        other rank), the model is wrapped in DistributedDataParallel (gradients averaged at each optimiser
        step), and the ranks agree at every batch whether any was asked to stop."""
        import torch

        ctx = self.ctx
        ranks = ctx.ranks
        device = torch.device(ctx.device)
        model.to(device)
        model.train()
        trained = dataparallel.wrap(model, ranks, ctx.device)
        batch_size = int(ctx.params["batch_size"])
        epochs = int(ctx.params["epochs"])
        accumulate = int(ctx.params.get("gradient_accumulation", 1))
        n_rank = len(dataparallel.shard(range(n), ranks))
        per_epoch = math.ceil(n_rank / batch_size)
        total = per_epoch * epochs
        updates = math.ceil(per_epoch / accumulate) * epochs
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=self.learning_rate)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1.0 - s / updates))
        generator = torch.Generator().manual_seed(ctx.seed)
        step = 0
        for epoch in range(1, epochs + 1):
            ctx.step(f"training {schema} (epoch {epoch} of {epochs})")
            order = dataparallel.shard(torch.randperm(n, generator=generator).tolist(), ranks)
            losses = []
            for k, start in enumerate(range(0, n_rank, batch_size)):
                if dataparallel.stop_anywhere(ctx.should_stop(), ranks, ctx.device):
                    raise Cancelled("cancelled")
                batch, y = batch_of(order[start:start + batch_size], device)
                steps = (k + 1) % accumulate == 0 or k + 1 == per_epoch
                # between optimiser steps the ranks keep their gradients to themselves (one all-reduce a step)
                with contextlib.nullcontext() if steps or not ranks.parallel else trained.no_sync():
                    loss = trained(**batch, labels=y).loss
                    if accumulate > 1:  # the mean over the batches of one optimiser step
                        (loss / min(accumulate, per_epoch - k // accumulate * accumulate)).backward()
                    else:
                        loss.backward()
                if steps:
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                step += 1
                value = float(loss.detach())
                losses.append(value)
                ctx.progress(step, total, loss=value, epoch=epoch)
            ctx.log(f"{schema}: epoch {epoch} of {epochs}, mean loss {sum(losses) / len(losses):.4f}")
        model.eval()

    def _encode(self, texts: list[str], device: Any) -> dict[str, Any]:
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=int(self.ctx.params["max_length"]),
                             return_tensors="pt")
        return {k: v.to(device) for k, v in enc.items()}

    def predict(self, items: Sequence[JobItem]) -> list[dict[str, Prediction | None]]:
        import torch

        ctx = self.ctx
        device = torch.device(ctx.device)
        batch_size = max(1, int(ctx.params["batch_size"]) * 2)
        out: list[dict[str, Prediction | None]] = [{} for _ in items]
        n_batches = math.ceil(len(items) / batch_size)
        total = max(1, n_batches * len(ctx.schemas))
        step = 0
        for spec in ctx.schemas:
            if spec.name in self.constant:
                for row in out:
                    row[spec.name] = Prediction(self.constant[spec.name], 1.0)
                continue
            model = self.models[spec.name].to(device)
            labels = ctx.class_labels[spec.name]
            with torch.inference_mode():
                for start in range(0, len(items), batch_size):
                    ctx.check_stop()
                    chunk = items[start:start + batch_size]
                    logits = model(**self._encode([item.text for item in chunk], device)).logits.float()
                    if spec.multiselect:
                        probs = torch.sigmoid(logits).cpu().tolist()
                        preds = [multiselect_prediction(dict(zip(labels, row))) for row in probs]
                    else:
                        probs = torch.softmax(logits, dim=-1).cpu().tolist()
                        preds = [radio_prediction(dict(zip(labels, row))) for row in probs]
                    for offset, pred in enumerate(preds):
                        out[start + offset][spec.name] = pred
                    step += 1
                    ctx.progress(step, total)
            if len(ctx.schemas) > 1:
                model.to("cpu")
        return out

    def _labels_entry(self) -> dict[str, Any]:
        """What ``labels.json`` says of every schema's model: what it was trained from and how."""
        return {"base_model": self.ctx.params["base_model"], "lora": self.ctx.params["lora"]}

    def _save_model(self, model: Any, folder: Path) -> None:
        """The model's files (with LoRA: the adapter's) into ``folder``."""
        model.save_pretrained(str(folder))

    def save(self, artifacts_dir: Path) -> None:
        taken: list[str] = []
        extra: dict[str, dict[str, Any]] = {}
        for spec in self.ctx.schemas:
            entry: dict[str, Any] = self._labels_entry()
            if spec.name in self.constant:
                value = self.constant[spec.name]
                entry["constant"] = list(value) if isinstance(value, tuple) else value
            else:
                name = folder_name(spec.name, taken)
                taken.append(name)
                folder = artifacts_dir / name
                self._save_model(self.models[spec.name], folder)
                self.tokenizer.save_pretrained(str(folder))
                entry["dir"] = name
            extra[spec.name] = entry
        write_labels_json(artifacts_dir, self.name, self.ctx.schemas, self.ctx.class_labels, extra)
