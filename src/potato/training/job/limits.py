"""``num_threads`` and ``max_ram_mb``: bounds the worker puts on itself before training.

Remote-safe: standard library only, Python 3.8. Both must be applied before a trainer imports
numpy or torch: the BLAS and OpenMP pools read their thread counts once, at import.

Why ``RLIMIT_DATA`` and not ``RLIMIT_AS``: the address-space limit counts every mapping, and
torch maps hundreds of MB of libraries and reserves address space it never touches (a CUDA
context reserves tens of GB). Measured with torch 2.13 CPU: under RLIMIT_AS=400 MB
``import torch`` aborts the process in C++ (``std::bad_alloc``, no Python exception, no
result.json); at 800 MB scipy's import fails to map a library. ``RLIMIT_DATA`` (Linux >= 4.7)
counts the heap and private writable mappings, which is what "RAM the run uses" means: torch
imports fine, and a too-large allocation fails as ``MemoryError`` (Python) or torch's
``DefaultCPUAllocator: can't allocate memory``, both reported as reason ``oom``.
"""

from __future__ import annotations

import logging
import os
from typing import MutableMapping

log = logging.getLogger(__name__)

THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "RAYON_NUM_THREADS",
)
"""Thread pools that read a count from the environment (RAYON: the tokenizers library)."""

MB = 1024 * 1024


def apply_thread_limit(num_threads: int | None, environ: MutableMapping[str, str] | None = None) -> None:
    """Cap the math libraries' thread pools at ``num_threads``, overriding what the shell set."""
    if not num_threads:
        return
    env = os.environ if environ is None else environ
    for name in THREAD_VARIABLES:
        env[name] = str(num_threads)


def apply_memory_limit(max_ram_mb: int | None) -> str | None:
    """Bound this process's data memory at ``max_ram_mb``; returns a note when it cannot.

    Only the soft limit is lowered, never above the hard limit, so an unprivileged worker can
    always do it. Where the ``resource`` module or ``RLIMIT_DATA`` is missing (Windows, some BSDs)
    nothing is applied and the returned note says so for the run log.
    """
    if not max_ram_mb:
        return None
    try:
        import resource
    except ImportError:
        return f"max_ram_mb ({max_ram_mb} MB) is not applied: this platform has no resource limits"
    kind = getattr(resource, "RLIMIT_DATA", None)
    if kind is None:
        return f"max_ram_mb ({max_ram_mb} MB) is not applied: this platform has no RLIMIT_DATA"
    _soft, hard = resource.getrlimit(kind)
    limit = max_ram_mb * MB
    if hard != resource.RLIM_INFINITY and limit > hard:
        limit = hard
    try:
        resource.setrlimit(kind, (limit, hard))
    except (ValueError, OSError) as exc:
        return f"max_ram_mb ({max_ram_mb} MB) is not applied: setrlimit failed ({exc})"
    log.info("data memory limited to %d MB (max_ram_mb)", limit // MB)
    return None


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation failure: MemoryError, torch's CPU or CUDA out-of-memory,
    or a shared library that could not be mapped because of the memory limit."""
    if isinstance(exc, MemoryError):
        return True
    if type(exc).__name__ == "OutOfMemoryError":  # torch.cuda.OutOfMemoryError, torch.OutOfMemoryError
        return True
    text = str(exc)
    return isinstance(exc, (RuntimeError, OSError, ImportError)) and (
        "out of memory" in text.lower()
        or "can't allocate memory" in text
        or "Cannot allocate memory" in text
        or "failed to map segment" in text
    )


def oom_message(exc: BaseException, max_ram_mb: int | None, device: str, batch_size: int | None = None) -> str:
    """What the run page says after an out-of-memory failure, with the fix (on a GPU, the batch size
    to try: half the run's, with gradient accumulation to keep the same optimiser step)."""
    text = str(exc)
    on_gpu = (device.startswith("cuda") or device == "mps") and ("CUDA" in text or "MPS" in text)
    if on_gpu:
        if batch_size and batch_size > 1:
            return (f"The run ran out of memory on {device}; try batch_size: {batch_size // 2} (with "
                    "gradient_accumulation: 2 where the trainer has it, for the same step), or lower max_length, "
                    "or use a GPU with more free memory")
        return (f"The run ran out of memory on {device}; lower batch_size or max_length, or use a GPU with more "
                "free memory")
    if max_ram_mb:
        return f"The run hit max_ram_mb ({max_ram_mb} MB); raise max_ram_mb or train on fewer items"
    return "The run ran out of memory; train on fewer items or use a machine with more RAM"
