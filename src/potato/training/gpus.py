"""The GPUs a training machine has, as ``nvidia-smi`` reports them.

Remote-safe: standard library only, Python 3.8. :func:`parse_nvidia_smi` is pure (tested on
pasted real output); :func:`query_gpus` runs the command where there is one.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict, dataclass
from typing import Any, Dict, List

QUERY = "index,name,memory.total,memory.free,utilization.gpu"
NVIDIA_SMI_ARGS = ["--query-gpu=" + QUERY, "--format=csv,noheader,nounits"]


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    memory_total_mb: int
    memory_free_mb: int
    utilization_pct: int | None

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)


def _number(text: str) -> int | None:
    try:
        return int(float(text.strip()))
    except ValueError:
        return None  # "[N/A]" or "[Not Supported]"


def parse_nvidia_smi(text: str) -> List[Gpu]:
    """GPUs from ``nvidia-smi --query-gpu=index,name,memory.total,memory.free,utilization.gpu
    --format=csv,noheader,nounits``; lines that do not parse are left out."""
    gpus: List[Gpu] = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 5:
            continue
        index, total, free = _number(fields[0]), _number(fields[-3]), _number(fields[-2])
        if index is None or total is None or free is None:
            continue
        name = ",".join(fields[1:-3])
        gpus.append(Gpu(index, name, total, free, _number(fields[-1])))
    return gpus


def query_gpus(timeout: float = 20.0) -> List[Gpu]:
    """This machine's GPUs; none where there is no ``nvidia-smi`` or it fails (no driver)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe] + NVIDIA_SMI_ARGS, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    return parse_nvidia_smi(out.stdout.decode("utf-8", errors="replace"))


class NoGpuFree(Exception):
    """``gpus: auto`` found GPUs, but none a run may take (E3, E5)."""


@dataclass(frozen=True)
class GpuChoice:
    """What a run gets: ``cuda_visible_devices`` ("" for the CPU) and the run.log line for it."""

    cuda_visible_devices: str
    text: str


def choose_gpus(gpus: List[Gpu], setting: str, min_free_mb: int) -> GpuChoice:
    """R15: ``auto`` takes the GPU with the most free memory (free memory, not utilisation, decides)
    and refuses when none has ``min_free_mb`` free; ``none`` is the CPU; ``"1"`` or ``"0,1"`` pin GPUs.
    A host without GPUs trains on the CPU under ``auto``."""
    if setting == "none":
        return GpuChoice("", "the CPU (gpus: none)")
    if setting != "auto":
        by_index = {g.index: g for g in gpus}
        wanted = [int(i) for i in setting.split(",")]
        missing = [i for i in wanted if i not in by_index]
        if missing and gpus:
            raise NoGpuFree(f"GPU {', '.join(map(str, missing))} is not on this host; it has "
                            f"{', '.join(str(g.index) for g in gpus)}. Fix `gpus` in the backend.")
        named = ", ".join(f"{i}: {by_index[i].name}" if i in by_index else str(i) for i in wanted)
        return GpuChoice(setting, f"GPU {named} (pinned)")
    if not gpus:
        return GpuChoice("", "the CPU (no GPU on this host)")
    best = max(gpus, key=lambda g: (g.memory_free_mb, -g.index))
    if best.memory_free_mb < min_free_mb:
        raise NoGpuFree(f"No GPU has {min_free_mb} MB free (the most is {best.memory_free_mb} MB on GPU "
                        f"{best.index}); wait for one to free up, lower min_free_gpu_mb, or pin one with gpus.")
    return GpuChoice(str(best.index), f"GPU {best.index}: {best.name} ({best.memory_free_mb} MB free)")
