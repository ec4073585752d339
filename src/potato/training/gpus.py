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
