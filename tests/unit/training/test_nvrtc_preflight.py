"""E11 before a run starts: the torch probe compiles a one-line kernel with NVRTC on a host with GPUs,
and a failure becomes the tutorial's message with both CUDA versions and the fix."""

from __future__ import annotations

import json
import subprocess
import sys

from potato.training.gpus.nvidia import TORCH_PROBE, nvrtc_problem

# What torch 2.x raises from its JIT when the nvidia-cuda-nvrtc wheel is from another CUDA (the tutorial's case).
SEEN = ("nvrtc: error: failed to open libnvrtc-builtins.so.13.0.\n"
        "  Make sure that libnvrtc-builtins.so.13.0 is installed correctly.")


def test_a_failed_compile_is_e11_with_both_versions_and_the_fix() -> None:
    message = nvrtc_problem({"cuda": "13.0", "nvrtc": SEEN, "nvrtc_package": "nvidia-cuda-nvrtc-cu12 12.4.127"})
    assert message is not None
    assert message.startswith("nvrtc: error: failed to open libnvrtc-builtins.so.13.0: the host's torch (built "
                              "for CUDA 13.0) and its nvidia-cuda-nvrtc-cu12 12.4.127 belong to different CUDA versions.")
    assert "pip install 'nvidia-cuda-nvrtc==13.0.*'" in message
    cu12 = nvrtc_problem({"cuda": "12.4", "nvrtc": "nvrtc: error: failed to open libnvrtc-builtins.so.12.4"})
    assert cu12 is not None and "pip install 'nvidia-cuda-nvrtc-cu12==12.4.*'" in cu12


def test_a_working_compile_or_no_gpu_is_no_problem() -> None:
    assert nvrtc_problem({"cuda": "13.0", "nvrtc": "ok"}) is None
    assert nvrtc_problem({"cuda": None, "arch": []}) is None  # a CPU torch: nothing was compiled
    assert nvrtc_problem({}) is None  # no torch on the host
    other = nvrtc_problem({"cuda": "13.0", "nvrtc": "CUDA error: no kernel image is available\nmore"})
    assert other is not None and other.startswith("NVRTC could not compile a kernel: CUDA error: no kernel image")


def test_the_probe_runs_with_a_cpu_torch_and_without_torch() -> None:
    out = subprocess.run([sys.executable, "-c", TORCH_PROBE], capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert out.returncode == 0 and "nvrtc" not in report and report["arch"] == []  # no GPU: no compile
    bare = subprocess.run(["/usr/bin/python3", "-c", TORCH_PROBE], capture_output=True, text=True, timeout=60)
    assert bare.returncode == 0 and bare.stdout.strip() == "{}"
