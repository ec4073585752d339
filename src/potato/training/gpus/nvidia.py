"""The GPUs a training machine has, as ``nvidia-smi`` reports them.

Remote-safe: standard library only, Python 3.8. :func:`parse_nvidia_smi` is pure (tested on
pasted real output); :func:`query_gpus` runs the command where there is one.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

from potato.errors import PotatoError

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


class NoGpuFree(PotatoError):
    """``gpus: auto`` found GPUs, but none a run may take."""


@dataclass(frozen=True)
class GpuChoice:
    """What a run gets: ``cuda_visible_devices`` ("" for the CPU) and the run.log line for it."""

    cuda_visible_devices: str
    text: str


def has_kernels(arch_list: List[str], capability: Tuple[int, int]) -> bool:
    """Whether a torch built for ``arch_list`` (``torch.cuda.get_arch_list()``, e.g. ``["sm_70",
    "sm_80", "sm_90", "compute_90"]``) can run on a GPU of compute ``capability`` (8, 6): a binary
    for the same major version and a lower or equal minor, or PTX (``compute_``) it can JIT from."""
    for arch in arch_list:
        kind, _, number = arch.partition("_")
        digits = "".join(ch for ch in number if ch.isdigit())  # "90a" -> "90"
        if len(digits) < 2:
            continue
        version = (int(digits[:-1]), int(digits[-1]))
        if kind == "sm" and version[0] == capability[0] and version[1] <= capability[1]:
            return True
        if kind == "compute" and version <= capability:
            return True
    return False


NO_KERNELS = "This host's torch has no kernels for any of its GPUs"


def choose_gpus(gpus: List[Gpu], setting: str, min_free_mb: int, no_kernels: Iterable[int] = ()) -> GpuChoice:
    """``auto`` takes the GPU with the most free memory (free memory, not utilisation, decides)
    and refuses when none has ``min_free_mb`` free; ``none`` is the CPU; ``"1"`` or ``"0,1"`` pin GPUs.
    A host without GPUs trains on the CPU under ``auto``; GPUs in ``no_kernels`` (the host's torch
    cannot run on them) are skipped by ``auto``, and NoGpuFree when that leaves none."""
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
    skipped = set(no_kernels)
    usable = [g for g in gpus if g.index not in skipped]
    if not usable:
        raise NoGpuFree(f"{NO_KERNELS}: it was built for other GPU generations. Install a torch build for "
                        "these GPUs on the host (see pytorch.org for the CUDA version to pick), or set gpus: none.")
    best = max(usable, key=lambda g: (g.memory_free_mb, -g.index))
    if best.memory_free_mb < min_free_mb:
        raise NoGpuFree(f"No GPU has {min_free_mb} MB free (the most is {best.memory_free_mb} MB on GPU "
                        f"{best.index}); wait for one to free up, lower min_free_gpu_mb, or pin one with gpus.")
    return GpuChoice(str(best.index), f"GPU {best.index}: {best.name} ({best.memory_free_mb} MB free)")


TORCH_PROBE = (
    "import json, os, sys\n"
    "os.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\n"
    "try:\n"
    "    import torch\n"
    "except ImportError:\n"
    "    print('{}'); sys.exit(0)\n"
    "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
    "report = {'arch': torch.cuda.get_arch_list() if n else [], 'cuda': torch.version.cuda,\n"
    "          'capabilities': [list(torch.cuda.get_device_capability(i)) for i in range(n)]}\n"
    "if n:\n"
    "    try:\n"
    "        from importlib import metadata\n"
    "        for name in ('nvidia-cuda-nvrtc', 'nvidia-cuda-nvrtc-cu12', 'nvidia-cuda-nvrtc-cu11'):\n"
    "            try:\n"
    "                report['nvrtc_package'] = name + ' ' + metadata.version(name); break\n"
    "            except metadata.PackageNotFoundError:\n"
    "                pass\n"
    "    except ImportError:\n"
    "        pass\n"
    "    try:\n"
    "        probe = torch.cuda.jiterator._create_jit_fn('template <typename T> T potato_probe(T x) { return x + T(1); }')\n"
    "        probe(torch.zeros(1, device='cuda'))\n"
    "        report['nvrtc'] = 'ok'\n"
    "    except Exception as exc:\n"
    "        report['nvrtc'] = str(exc).strip()[:2000]\n"
    "print(json.dumps(report))\n"
)
"""Run with the host's interpreter: which GPU generations its torch has kernels for, and each GPU's
compute capability, in nvidia-smi's order (PCI bus); on a host with GPUs also a one-line kernel
compiled with NVRTC (the NVRTC preflight) and the nvidia-cuda-nvrtc package. ``{}`` without torch."""

NVRTC_BUILTINS = re.compile(r"nvrtc: error: failed to open (libnvrtc-builtins\.so(?:\.\d+)*)")


def nvrtc_problem(probe: Dict[str, Any]) -> Optional[str]:
    """The torch probe's failure: NVRTC could not compile a kernel with the host's torch (pure).

    The usual cause: the nvidia-cuda-nvrtc wheel beside torch belongs to another CUDA version than
    the torch build, so torch's JIT fails only when a run reaches an op that compiles a kernel.
    """
    said = probe.get("nvrtc")
    if not said or said == "ok":
        return None
    cuda = probe.get("cuda") or "?"
    package = probe.get("nvrtc_package") or "nvidia-cuda-nvrtc (not installed as a package)"
    match = NVRTC_BUILTINS.search(str(said))
    head = f"nvrtc: error: failed to open {match.group(1)}" if match else f"NVRTC could not compile a kernel: {str(said).splitlines()[0]}"
    major = str(cuda).split(".")[0]
    wheel = "nvidia-cuda-nvrtc" if not major.isdigit() or int(major) >= 13 else f"nvidia-cuda-nvrtc-cu{major}"
    return (f"{head}: the host's torch (built for CUDA {cuda}) and its {package} belong to different CUDA "
            f"versions. Install the nvidia-cuda-nvrtc that matches the torch build (`pip install "
            f"'{wheel}=={cuda}.*'`), or point python at another interpreter.")


def gpus_without_kernels(probe: Dict[str, Any]) -> List[int]:
    """GPU indices the probed torch cannot run on (pure; an empty or failed probe names none)."""
    arch = [str(a) for a in probe.get("arch") or []]
    caps = probe.get("capabilities") or []
    if not arch:
        return []
    out = []
    for index, cap in enumerate(caps):
        try:
            capability = (int(cap[0]), int(cap[1]))
        except (TypeError, ValueError, IndexError):
            continue
        if not has_kernels(arch, capability):
            out.append(index)
    return out
