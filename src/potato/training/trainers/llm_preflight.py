"""Will this LLM fit on this run's GPU? Asked before a single weight is loaded.

An LLM that does not fit fails at the end of a multi-gigabyte download, or half-way into the first
epoch with a CUDA out-of-memory. Here the model's ``config.json`` (a few KB: read from the folder,
the GGUF file's header or the Hub) gives its size, :mod:`potato.training.llm_memory` what the run
needs, and torch what this run's GPU has free; a run that cannot fit fails at once as ``oom`` with
the numbers and the fixes. On the CPU there is nothing to check.

transformers and torch are imported inside the functions, as in every trainer module.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

from potato.training.failures import OutOfMemory
from potato.training.llm_memory import MemoryNeed, UnknownArchitecture, estimate, fit_problem, parameter_count
from potato.training.trainers.base import TrainContext


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
