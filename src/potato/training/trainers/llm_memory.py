"""How much GPU memory an LLM run needs, worked out before anything is loaded.

A run that cannot fit should fail in a second with the numbers and the fixes, not after a
multi-gigabyte download with a CUDA out-of-memory. Everything here is pure (no I/O, no torch):
:func:`parameter_count` reads a Hugging Face ``config.json`` as a dict, :func:`estimate` turns a
parameter count and the run's settings into MB, :func:`fit_problem` and :func:`choose_gpu` compare
that with the free memory ``nvidia-smi`` reports. Standard library only, Python 3.8.

:func:`check_fits` asks it before a trainer loads a single weight: the model's ``config.json`` (a
few KB: read from the folder, the GGUF file's header or the Hub) gives its size, and torch what the
run's GPU has free; transformers and torch are imported inside the functions that need them, as in
every trainer module. On the CPU there is nothing to check.

MB here are MiB, the unit ``nvidia-smi`` reports free memory in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional

from potato.training.job.failures import OutOfMemory

if TYPE_CHECKING:  # the trainers' context, for the annotation only: base imports the job's modules
    from potato.training.trainers.base import TrainContext

MB = 1024 * 1024
"""Bytes in the MB that nvidia-smi reports (a MiB)."""

WEIGHT_BYTES = {"none": 2.0, "8bit": 1.05, "4bit": 0.55}
"""Bytes per base-model parameter: bf16/fp16 is 2; LLM.int8 is 1 plus per-row scales and the
embeddings and norms bitsandbytes leaves in 16 bits; NF4 with double quantisation is 0.5 plus its
quantised block constants (0.016) and the 16-bit embeddings and norms."""

QUANTIZE_WORDS = {"none": "16-bit", "8bit": "8-bit", "4bit": "4-bit"}
"""How a message names each ``quantize`` value."""

LORA_WIDTH_FACTOR = 1.3
"""LoRA on all linear layers adds r x (in + out) per layer, which for Llama-style decoders is about
1.3 x r x params / hidden_size (within 15% for 7-8B Qwen2.5, Llama 3.1 and Mistral; more for small
models with large vocabularies, which errs on the safe side)."""

LORA_TRAIN_BYTES = 16
"""Bytes per trained adapter parameter: fp32 weight (4), fp32 gradient (4), Adam's two fp32 moments (8)."""

LORA_INFER_BYTES = 4
"""Bytes per adapter parameter when it only predicts: the fp32 weight."""

CHECKPOINT_BYTES = 2
"""Gradient checkpointing keeps one bf16 hidden state (batch x length x hidden) per layer."""

LAYER_WORK_FACTOR = 34
"""The layer being recomputed and back-propagated holds about 34 hidden-sized bf16 tensors per token
(q, k, v, attention output, the MLP's gate/up/product at ~3.5x hidden, their gradients, LoRA's
intermediates); attention itself is memory-efficient (SDPA), so nothing grows with length squared."""

INFER_WORK_FACTOR = 8
"""Without gradients, one layer's forward holds about 8 hidden-sized tensors per token at a time."""

CUDA_CONTEXT_MB = 500
"""The CUDA context, cuBLAS workspace and the allocator's reserve that every process pays."""

ROUND_MB = 100
"""Messages say "about" the need, rounded up to this many MB."""


class UnknownArchitecture(ValueError):
    """The config lacks what a Llama-style decoder's parameter count is computed from."""


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Multimodal configs (Gemma 3, Llama 4) keep the decoder's fields under ``text_config``."""
    inner = config.get("text_config")
    if "hidden_size" not in config and isinstance(inner, Mapping):
        return inner
    return config


def _field(config: Mapping[str, Any], name: str) -> int:
    value = config.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise UnknownArchitecture(
            f"config.json has no usable {name} ({value!r}), so the model's size cannot be worked out; "
            "the memory check needs a Llama-style decoder config (hidden_size, intermediate_size, "
            "num_hidden_layers, num_attention_heads, vocab_size)")
    return value


def _qkv_bias(config: Mapping[str, Any]) -> bool:
    """Qwen2 always has q/k/v biases (its config has no field for it); others say ``attention_bias``."""
    model_type = str(config.get("model_type", ""))
    architectures = [str(a) for a in config.get("architectures") or []]
    return model_type == "qwen2" or any(a.startswith("Qwen2") and "Moe" not in a for a in architectures)


def parameter_count(config: Mapping[str, Any]) -> int:
    """The parameter count of a Llama-style decoder (Llama, Qwen2/3, Mistral, Mixtral, Gemma, SmolLM,
    Phi-3) from its ``config.json``: embeddings, per layer attention (grouped-query, ``head_dim`` where
    given), gated MLP (or ``num_local_experts`` of them and a router), two norms, the final norm, and
    an output head unless ``tie_word_embeddings``. Raises UnknownArchitecture for a config without the
    fields it needs."""
    c = _text_config(config)
    hidden = _field(c, "hidden_size")
    inter = _field(c, "intermediate_size")
    layers = _field(c, "num_hidden_layers")
    heads = _field(c, "num_attention_heads")
    vocab = _field(c, "vocab_size")
    kv_heads = c.get("num_key_value_heads") or heads
    head_dim = c.get("head_dim") or hidden // heads
    q_out, kv_out = heads * head_dim, kv_heads * head_dim

    attention = hidden * q_out + 2 * hidden * kv_out + q_out * hidden
    if c.get("attention_bias"):
        attention += q_out + 2 * kv_out + hidden
    elif _qkv_bias(c):
        attention += q_out + 2 * kv_out
    if str(c.get("model_type", "")) == "qwen3":
        attention += 2 * head_dim  # q_norm and k_norm over each head
    mlp = 3 * hidden * inter + ((2 * inter + hidden) if c.get("mlp_bias") else 0)
    experts = c.get("num_local_experts")
    if isinstance(experts, int) and experts > 1:
        mlp = experts * mlp + hidden * experts  # Mixtral: every expert's MLP and the router
    per_layer = attention + mlp + 2 * hidden
    embeddings = vocab * hidden
    tied = c.get("tie_word_embeddings", config.get("tie_word_embeddings", False))  # Llama's default
    head = 0 if tied else vocab * hidden
    return embeddings + layers * per_layer + hidden + head


@dataclass(frozen=True)
class MemoryNeed:
    """What a run needs on one GPU, in MB, part by part; ``batch_size`` is kept for the message's fix."""

    weights_mb: int
    adapter_mb: int
    activations_mb: int
    overhead_mb: int
    batch_size: int

    @property
    def total_mb(self) -> int:
        return self.weights_mb + self.adapter_mb + self.activations_mb + self.overhead_mb

    def describe(self) -> str:
        """One line for run.log: the total and what it is made of."""
        return (f"about {self.total_mb:,} MB (weights {self.weights_mb:,}, adapter and optimiser "
                f"{self.adapter_mb:,}, activations {self.activations_mb:,}, CUDA {self.overhead_mb:,})")


def estimate(params: int, quantize: str, lora_r: int, batch_size: int, max_length: int,
             hidden_size: int, num_layers: int, training: bool) -> MemoryNeed:
    """The GPU memory a LoRA run (``training``) or a prediction-only run needs: the base weights at
    ``quantize``'s bytes per parameter, the adapter (with its gradient and Adam state when training),
    activations for ``batch_size`` sequences of ``max_length`` tokens under gradient checkpointing,
    and the CUDA context. Each constant above says what it assumes. Raises ValueError for an
    unknown ``quantize``."""
    if quantize not in WEIGHT_BYTES:
        raise ValueError(f"quantize is {quantize!r}; valid values are none, 8bit and 4bit")
    weights = params * WEIGHT_BYTES[quantize]
    lora_params = LORA_WIDTH_FACTOR * max(lora_r, 0) * params / max(hidden_size, 1)
    adapter = lora_params * (LORA_TRAIN_BYTES if training else LORA_INFER_BYTES)
    token_state = batch_size * max_length * hidden_size * 2  # one bf16 hidden state for the batch
    if training:
        activations = num_layers * batch_size * max_length * hidden_size * CHECKPOINT_BYTES
        activations += LAYER_WORK_FACTOR * token_state
    else:
        activations = INFER_WORK_FACTOR * token_state
    return MemoryNeed(weights_mb=math.ceil(weights / MB), adapter_mb=math.ceil(adapter / MB),
                      activations_mb=math.ceil(activations / MB), overhead_mb=CUDA_CONTEXT_MB,
                      batch_size=batch_size)


def _about(mb: int) -> str:
    return f"{int(math.ceil(mb / ROUND_MB) * ROUND_MB):,}"


def fit_problem(need: MemoryNeed, model: str, quantize: str, free_mb: List[int],
                min_free_gpu_mb: int) -> Optional[str]:
    """None when some GPU has ``need`` (or ``min_free_gpu_mb``, whichever is larger) free; otherwise
    the message that refuses the run before it loads anything, with the fixes."""
    required = max(need.total_mb, min_free_gpu_mb)
    if free_mb and max(free_mb) >= required:
        return None
    words = QUANTIZE_WORDS.get(quantize, quantize)
    needs = f"{model} in {words} needs about {_about(need.total_mb)} MB"
    if min_free_gpu_mb > need.total_mb:
        needs += f" and min_free_gpu_mb asks for {min_free_gpu_mb:,} MB free"
    if not free_mb:
        return (f"{needs} on a GPU, and this host has no GPU that nvidia-smi can see. Run it on a backend "
                "whose host has a CUDA GPU, or pick a much smaller base_model and train on the CPU.")
    fixes = []
    if quantize != "4bit":
        fixes.append("set quantize: 4bit")
    fixes.append("pick a smaller base_model")
    if need.batch_size > 1:
        fixes.append(f"lower batch_size (now {need.batch_size})")
    if min_free_gpu_mb > need.total_mb:
        fixes.append("lower min_free_gpu_mb")
    fixes.append("wait for a GPU to free up")
    return (f"{needs}; the most any GPU here has free is {max(free_mb):,} MB. "
            f"To fit: {', '.join(fixes[:-1])}, or {fixes[-1]}.")


def choose_gpu(need: MemoryNeed, free_by_index: Mapping[int, int], min_free: int) -> Optional[int]:
    """The GPU with the most free memory, if it has ``need`` (or ``min_free``, whichever is larger)
    free; None when none does. Ties go to the lower index."""
    required = max(need.total_mb, min_free)
    fitting = [(free, -index) for index, free in free_by_index.items() if free >= required]
    if not fitting:
        return None
    return -max(fitting)[1]


# -- before loading: does the run's model fit on its GPU --------------------------------------------
def need_for(config: Mapping[str, Any], quantize: str, lora_r: int, batch_size: int, max_length: int,
             training: bool) -> MemoryNeed:
    """What a run of this model needs on one GPU (pure; UnknownArchitecture for a config that lacks
    a decoder's sizes)."""
    inner = config.get("text_config") if "hidden_size" not in config else None
    sizes = inner if isinstance(inner, Mapping) else config
    return estimate(parameter_count(config), quantize, lora_r, batch_size, max_length,
                    int(sizes["hidden_size"]), int(sizes["num_hidden_layers"]), training)


def read_config(source: str, gguf: Optional[str]) -> dict:
    """The model's config as a dict, without its weights (the GGUF file's header for a GGUF file)."""
    from transformers import AutoConfig

    extra = {"gguf_file": gguf} if gguf else {}
    return dict(AutoConfig.from_pretrained(source, **extra).to_dict())


def free_on(device: str) -> Optional[int]:
    """MB free on ``device`` as the driver says (creates the CUDA context, nothing more)."""
    import torch

    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return int(free // (1024 * 1024))


def check_fits(ctx: TrainContext, source: str, gguf: Optional[str], training: bool, lora_r: int = 0,
               config_of: Callable[[str, Optional[str]], dict] = read_config,
               free_of: Callable[[str], Optional[int]] = free_on) -> None:
    """Raise :class:`OutOfMemory` when the run's model cannot fit on its GPU; log what it needs when it
    can. Nothing on the CPU, or for a model whose size the config does not give (said in run.log)."""
    if not ctx.device.startswith("cuda"):
        return
    params = ctx.params
    model = str(params["base_model"])
    try:
        need = need_for(config_of(source, gguf), str(params.get("quantize", "none")), lora_r,
                        int(params["batch_size"]), int(params["max_length"]), training)
    except UnknownArchitecture as exc:
        ctx.log(f"GPU memory not checked before loading: {exc}", "warning")
        return
    free = free_of(ctx.device)
    if free is None:
        return
    problem = fit_problem(need, model, str(params.get("quantize", "none")), [free], 0)
    if problem:
        raise OutOfMemory(problem)
    ctx.log(f"GPU memory: {model} needs {need.describe()}; {ctx.device} has {free:,} MB free")
