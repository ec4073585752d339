"""Which device a local run trains on: pure choice plus one probe that asks torch.

Remote-safe: standard library only, Python 3.8; torch is imported lazily by :func:`probe_devices`
and only there. :func:`resolve_device` and :func:`describe_local` are pure, so the fallback
table is tested without hardware.

Device strings: ``auto`` (CUDA, then Apple Metal, then CPU), ``cpu``, ``cuda`` (= ``cuda:0``),
``cuda:N`` (one GPU), ``mps``.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

DEVICE_CHOICES = "auto, cpu, cuda, cuda:N or mps"
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


@dataclass(frozen=True)
class DeviceProbe:
    """What this machine offers, as torch sees it (no torch: the CPU only)."""

    cuda_count: int = 0
    mps: bool = False
    torch_available: bool = False
    cuda_names: tuple[str, ...] = ()
    cpu_threads: int = 1

    @classmethod
    def cpu_only(cls) -> DeviceProbe:
        """The probe for a trainer that never uses torch: no need to import it."""
        return cls(cpu_threads=os.cpu_count() or 1)


def is_valid_device(text: str) -> bool:
    """Whether ``text`` is a device string a job or config may name (pure)."""
    return bool(_DEVICE_RE.match(text))


def probe_devices() -> DeviceProbe:
    """Ask torch (imported here, lazily) for CUDA GPUs and Apple Metal; without torch, the CPU only."""
    try:
        import torch
    except ImportError:
        return DeviceProbe.cpu_only()
    except Exception as exc:  # noqa: BLE001 - a broken CUDA install raises OSError, RuntimeError... at import
        log.warning("torch could not be imported (%s: %s); only the CPU is considered",
                    type(exc).__name__, exc)
        return DeviceProbe.cpu_only()
    cuda_count = 0
    names: tuple[str, ...] = ()
    try:
        if torch.cuda.is_available():
            cuda_count = torch.cuda.device_count()
            names = tuple(torch.cuda.get_device_name(i) for i in range(cuda_count))
    except RuntimeError as exc:  # a driver that answers is_available() and then fails
        log.warning("CUDA is present but does not answer (%s); it is not used", exc)
        cuda_count, names = 0, ()
    mps_backend = getattr(torch.backends, "mps", None)
    mps = bool(mps_backend is not None and mps_backend.is_available())
    return DeviceProbe(cuda_count=cuda_count, mps=mps, torch_available=True, cuda_names=names,
                       cpu_threads=torch.get_num_threads())


def _best(probe: DeviceProbe) -> str:
    if probe.cuda_count > 0:
        return "cuda:0"
    if probe.mps:
        return "mps"
    return "cpu"


def resolve_device(requested: str, probe: DeviceProbe) -> tuple[str, str | None]:
    """The device a run uses for ``requested`` on a machine like ``probe``, and a warning if it differs.

    ``auto`` takes CUDA, then mps, then the CPU and never warns. A requested device that is
    missing falls back to another CUDA GPU, then mps, then the CPU, with a warning for the run log.
    Raises ``ValueError`` for a string that names no device.
    """
    text = requested.strip().lower()
    if not is_valid_device(text):
        raise ValueError(f"device {requested!r} is not valid; use {DEVICE_CHOICES}")
    if text == "auto":
        return _best(probe), None
    if text == "cpu":
        return "cpu", None
    if text == "mps":
        if probe.mps:
            return "mps", None
        fallback = _best(probe)
    else:
        index = int(text.split(":", 1)[1]) if ":" in text else 0
        if index < probe.cuda_count:
            return f"cuda:{index}", None
        fallback = _best(probe)
        text = f"cuda:{index}"
    return fallback, f"Requested device {text} is not available; using {fallback} instead"


def describe_device(device: str, probe: DeviceProbe, num_threads: int | None = None) -> str:
    """``CPU (2 threads)``, ``Apple Metal (mps)``, ``CUDA GPU 0 (NVIDIA H100 80GB HBM3)`` (pure)."""
    if device == "mps":
        return "Apple Metal (mps)"
    if device.startswith("cuda"):
        index = int(device.split(":", 1)[1]) if ":" in device else 0
        name = probe.cuda_names[index] if index < len(probe.cuda_names) else "unknown model"
        return f"CUDA GPU {index} ({name})"
    threads = num_threads or probe.cpu_threads
    return "CPU ({} thread{})".format(threads, "" if threads == 1 else "s")


def describe_local(device: str, probe: DeviceProbe, num_threads: int | None = None) -> str:
    """The device line, e.g. ``local: this machine, Apple Metal (mps)`` (pure)."""
    return "local: this machine, " + describe_device(device, probe, num_threads)
