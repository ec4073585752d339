"""R11/R12: which device a local run gets, and how the check describes it (pure, no hardware)."""

from __future__ import annotations

import pytest

from potato.training.gpus.devices import (
    DeviceProbe,
    describe_local,
    is_valid_device,
    probe_devices,
    resolve_device,
)

CPU = DeviceProbe(cpu_threads=2)
ONE_GPU = DeviceProbe(cuda_count=1, torch_available=True, cuda_names=("NVIDIA A100-SXM4-40GB",), cpu_threads=8)
TWO_GPUS = DeviceProbe(cuda_count=2, torch_available=True, cuda_names=("NVIDIA H100", "NVIDIA H100"))
MAC = DeviceProbe(mps=True, torch_available=True, cpu_threads=10)


@pytest.mark.parametrize(
    "requested, probe, device, warning",
    [
        ("auto", CPU, "cpu", None),
        ("auto", ONE_GPU, "cuda:0", None),
        ("auto", MAC, "mps", None),
        ("cpu", TWO_GPUS, "cpu", None),
        ("cuda", ONE_GPU, "cuda:0", None),
        ("cuda:1", TWO_GPUS, "cuda:1", None),
        ("CUDA:1", TWO_GPUS, "cuda:1", None),
        ("mps", MAC, "mps", None),
        ("cuda:1", CPU, "cpu", "Requested device cuda:1 is not available; using cpu instead"),
        ("cuda:3", TWO_GPUS, "cuda:0", "Requested device cuda:3 is not available; using cuda:0 instead"),
        ("cuda", MAC, "mps", "Requested device cuda:0 is not available; using mps instead"),
        ("mps", ONE_GPU, "cuda:0", "Requested device mps is not available; using cuda:0 instead"),
        ("mps", CPU, "cpu", "Requested device mps is not available; using cpu instead"),
    ],
)
def test_resolve_device(requested: str, probe: DeviceProbe, device: str, warning: str | None) -> None:
    assert resolve_device(requested, probe) == (device, warning)


@pytest.mark.parametrize("text", ["gpu", "cuda:", "cuda:x", "", "tpu"])
def test_invalid_device_names_the_choices(text: str) -> None:
    assert not is_valid_device(text)
    with pytest.raises(ValueError, match="use auto, cpu, cuda, cuda:N or mps"):
        resolve_device(text, CPU)


def test_describe_local() -> None:
    assert describe_local("cpu", CPU) == "local: this machine, CPU (2 threads)"
    assert describe_local("cpu", CPU, num_threads=1) == "local: this machine, CPU (1 thread)"
    assert describe_local("cpu", ONE_GPU, num_threads=4) == "local: this machine, CPU (4 threads)"
    assert describe_local("mps", MAC) == "local: this machine, Apple Metal (mps)"
    assert describe_local("cuda:0", ONE_GPU) == "local: this machine, CUDA GPU 0 (NVIDIA A100-SXM4-40GB)"
    assert describe_local("cuda:1", TWO_GPUS) == "local: this machine, CUDA GPU 1 (NVIDIA H100)"


def test_probe_asks_torch() -> None:
    pytest.importorskip("torch")
    import torch

    probe = probe_devices()
    assert probe.torch_available
    assert probe.cpu_threads == torch.get_num_threads()
    assert probe.cuda_count == (torch.cuda.device_count() if torch.cuda.is_available() else 0)
    assert len(probe.cuda_names) == probe.cuda_count


def test_probe_without_torch_is_cpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_torch(name: str, *args: object, **kwargs: object) -> object:
        if name == "torch":
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_torch)
    probe = probe_devices()
    assert (probe.torch_available, probe.cuda_count, probe.mps) == (False, 0, False)
    assert resolve_device("auto", probe) == ("cpu", None)
