"""R11 on a real GPU (marker ``gpu``; skipped where CUDA is absent, as on CI).

Run on a machine with a CUDA GPU: ``.venv/bin/python -m pytest -m gpu tests/gpu``. It checks what
the CPU suite cannot: ``device: auto`` picks CUDA, ``cuda:N`` past the last GPU falls back with a
warning, the hf trainer trains on the GPU through the real worker, and the check names the GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

from tests.harness.jobdirs import read_result, review_job, run_worker  # noqa: E402
from tests.unit.training.tinybert import build_tiny_bert  # noqa: E402


def _bert(tmp_path: Path) -> Path:
    return build_tiny_bert(tmp_path / "bert", [f"The item {i} works perfectly" for i in range(40)])


def test_auto_trains_on_cuda(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path / "job", "hf-text-classification",
                         params={"base_model": str(_bert(tmp_path)), "epochs": 2})
    proc = run_worker(job_dir)
    result = read_result(job_dir)
    assert proc.returncode == 0, result
    assert result["device"].startswith("cuda")


def test_missing_gpu_index_falls_back_with_a_warning(tmp_path: Path) -> None:
    missing = f"cuda:{torch.cuda.device_count()}"
    job_dir = review_job(tmp_path / "job", "hf-text-classification",
                         params={"base_model": str(_bert(tmp_path)), "epochs": 1}, device=missing)
    assert run_worker(job_dir).returncode == 0
    warnings = [json.loads(line) for line in (job_dir / "events.jsonl").read_text().splitlines()]
    assert any(e["type"] == "warning" and missing in e.get("text", "") for e in warnings)
    assert read_result(job_dir)["device"].startswith("cuda")


def test_check_names_the_gpu(make_project) -> None:  # type: ignore[no-untyped-def]
    proc = subprocess.run([sys.executable, "-m", "potato", "training", "check", "local", str(make_project())],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "CUDA" in proc.stdout, proc.stdout


def test_the_nvrtc_preflight_compiles_a_kernel_on_a_healthy_cuda_host() -> None:
    """E11's preflight on a real GPU: this interpreter's torch compiles the one-line kernel."""
    from potato.training.gpus.nvidia import TORCH_PROBE, nvrtc_problem

    out = subprocess.run([sys.executable, "-c", TORCH_PROBE], capture_output=True, text=True, timeout=300)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["nvrtc"] == "ok", report
    assert nvrtc_problem(report) is None
