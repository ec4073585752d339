"""num_threads / max_ram_mb helpers, and the events file format (pure parts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from potato.training.job.events import EventWriter, make_event, read_events
from potato.training.job.limits import THREAD_VARIABLES, apply_thread_limit, is_out_of_memory, oom_message


def test_thread_limit_overrides_the_shell() -> None:
    env: dict[str, str] = {"OMP_NUM_THREADS": "64", "PATH": "/bin"}
    apply_thread_limit(3, env)
    assert {name: env[name] for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")} == {
        "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "3"}
    assert set(THREAD_VARIABLES) <= set(env)
    untouched: dict[str, str] = {}
    apply_thread_limit(None, untouched)
    assert untouched == {}


class OutOfMemoryError(RuntimeError):
    """Stands in for torch.cuda.OutOfMemoryError (matched by name, torch need not be imported)."""


@pytest.mark.parametrize(
    "exc, oom",
    [
        (MemoryError(), True),
        (OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
        (RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory"), True),
        (ImportError("libtorch_cpu.so: failed to map segment from shared object"), True),
        (RuntimeError("shape mismatch"), False),
        (ValueError("out of memory"), False),
    ],
)
def test_is_out_of_memory(exc: BaseException, oom: bool) -> None:
    assert is_out_of_memory(exc) is oom


def test_oom_messages_name_the_fix() -> None:
    assert oom_message(MemoryError(), 300, "cpu") == (
        "The run hit max_ram_mb (300 MB); raise max_ram_mb or train on fewer items")
    assert oom_message(OutOfMemoryError("CUDA out of memory"), 300, "cuda:0").startswith(
        "The run ran out of memory on cuda:0; lower batch_size or max_length")
    assert oom_message(MemoryError(), None, "cpu") == (
        "The run ran out of memory; train on fewer items or use a machine with more RAM")
    assert oom_message(OutOfMemoryError("CUDA out of memory"), None, "cuda:0", batch_size=8) == (
        "The run ran out of memory on cuda:0; try batch_size: 4 (with gradient_accumulation: 2 where the trainer "
        "has it, for the same step), or lower max_length, or use a GPU with more free memory")  # issue 34


def test_events_are_flushed_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventWriter(path, clock=lambda: 12.5) as events:
        events.step("training")
        events.progress(3, 10, loss=float("nan"), epoch=1)
        events.metric("holdout_accuracy", 0.75)
        assert len(path.read_text().splitlines()) == 3  # on disk before close
    assert read_events(path) == [
        {"t": 12.5, "type": "step", "text": "training"},
        {"t": 12.5, "type": "progress", "step": 3, "total": 10, "epoch": 1},  # a nan loss is left out
        {"t": 12.5, "type": "metric", "name": "holdout_accuracy", "value": 0.75},
    ]
    with path.open("a") as fh:
        fh.write(json.dumps(make_event("log", 13.0, level="info", text="x"))[:10])  # a line still being written
    assert len(read_events(path)) == 3
    with pytest.raises(ValueError, match="unknown event type 'result'"):
        make_event("result")
