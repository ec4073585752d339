"""The benchmarks under bench/ as the tests run them: each in its quick mode, the ones that train through
the test rig named apart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
ON_THE_RIG = ("slurm", "ssh")
"""Those that train through the test rig: tests/integration/test_bench_quick_rig.py runs them."""


SLOW = {"llm": 1800}
"""Seconds a quick mode may take where it is not seconds: bench/llm.py starts a fresh process for each
of its four parts' two sides, each loading an LLM (94 s on a quiet machine, several times that beside
the rest of the suite on two cores)."""


def runs_in_quick_mode(name: str) -> None:
    done = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), "--quick"], cwd=BENCH.parent,
                          capture_output=True, text=True, timeout=SLOW.get(name, 900))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
    assert done.stdout.strip(), "it printed nothing"
