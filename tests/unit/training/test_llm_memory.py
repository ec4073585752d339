"""Issue 34, "Memory before loading": what an LLM run needs on the GPU is worked out from the
model's config.json before anything is loaded, and a run that cannot fit is refused with the numbers
and the fixes. Pure: no torch, no GPU."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from potato.training.trainers.llm_memory import (
    MemoryNeed,
    UnknownArchitecture,
    choose_gpu,
    estimate,
    fit_problem,
    parameter_count,
)
from tests.harness.llm import QWEN25_7B

QWEN25_05B: Dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 151936,
    "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
    "num_attention_heads": 14, "num_key_value_heads": 2, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}
LLAMA31_8B: Dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256,
    "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}
MISTRAL_7B_V01: Dict[str, Any] = {
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "vocab_size": 32000,
    "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
SMOLLM2_135M: Dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 49152,
    "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
    "num_attention_heads": 9, "num_key_value_heads": 3, "attention_bias": False, "mlp_bias": False,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16",
}


@pytest.mark.parametrize("config, published", [
    (QWEN25_05B, 494_032_768),      # "0.49B" on the model card; q/k/v biases, tied embeddings
    (QWEN25_7B, 7_615_616_512),     # "7.61B"
    (LLAMA31_8B, 8_030_261_248),    # "8.03B"
    (MISTRAL_7B_V01, 7_241_732_096),  # "7.24B"
    (SMOLLM2_135M, 134_515_008),    # "134.5M"; tied embeddings
], ids=["Qwen2.5-0.5B", "Qwen2.5-7B", "Llama-3.1-8B", "Mistral-7B-v0.1", "SmolLM2-135M"])
def test_parameter_count_matches_the_published_count(config: Dict[str, Any], published: int) -> None:
    """Issue 34: the count from config.json is the model's published parameter count (within 1%)."""
    assert parameter_count(config) == pytest.approx(published, rel=0.01)


def test_tied_embeddings_and_qwen_biases_are_counted() -> None:
    """Issue 34: untying adds an output head of vocab x hidden; Qwen2's q/k/v biases are in the count."""
    untied = dict(QWEN25_05B, tie_word_embeddings=False)
    assert parameter_count(untied) - parameter_count(QWEN25_05B) == 151936 * 896
    as_llama = dict(QWEN25_05B, model_type="llama", architectures=["LlamaForCausalLM"])
    assert parameter_count(QWEN25_05B) - parameter_count(as_llama) == 24 * (896 + 2 * 128)


def test_multimodal_config_reads_its_text_config() -> None:
    """Issue 34: configs that nest the decoder under text_config (Gemma 3) are counted from it."""
    assert parameter_count({"model_type": "wrapper", "text_config": SMOLLM2_135M}) == parameter_count(SMOLLM2_135M)


def test_config_without_the_fields_is_refused_by_name() -> None:
    """Issue 34: a config the count cannot be made from says which field is missing."""
    with pytest.raises(UnknownArchitecture, match="hidden_size"):
        parameter_count({"model_type": "gpt2", "n_embd": 768, "n_layer": 12})


def need_7b(quantize: str, batch_size: int = 4, max_length: int = 512, training: bool = True) -> MemoryNeed:
    return estimate(parameter_count(QWEN25_7B), quantize, lora_r=16, batch_size=batch_size,
                    max_length=max_length, hidden_size=3584, num_layers=28, training=training)


def test_7b_in_4bit_trains_in_5_to_7_gb() -> None:
    """Issue 34: QLoRA puts a 7B model's training at batch 4 x 512 tokens in 5-7 GB (one 24 GB card
    holds it with room to spare)."""
    need = need_7b("4bit")
    assert 5 * 1024 <= need.total_mb <= 7 * 1024, need.describe()
    assert need.weights_mb < 4500 and need.adapter_mb > 0 and need.activations_mb > 0
    assert need.overhead_mb == 500


def test_7b_in_16bit_needs_more_than_14_gb_and_8bit_lies_between() -> None:
    """Issue 34: unquantised bf16 weights alone are 2 bytes a parameter."""
    assert need_7b("none").total_mb > 14 * 1024
    assert need_7b("4bit").total_mb < need_7b("8bit").total_mb < need_7b("none").total_mb


def test_need_grows_with_batch_and_length_and_training() -> None:
    """Issue 34: a larger batch or longer sequences never need less; predicting needs less than training."""
    for quantize in ("none", "8bit", "4bit"):
        by_batch = [need_7b(quantize, batch_size=b).total_mb for b in (1, 2, 4, 8, 16)]
        by_length = [need_7b(quantize, max_length=n).total_mb for n in (64, 128, 256, 512, 1024, 2048)]
        assert by_batch == sorted(by_batch) and len(set(by_batch)) == len(by_batch)
        assert by_length == sorted(by_length) and len(set(by_length)) == len(by_length)
        assert need_7b(quantize, training=False).total_mb < need_7b(quantize).total_mb


def test_unknown_quantize_is_refused() -> None:
    with pytest.raises(ValueError, match="none, 8bit and 4bit"):
        need_7b("3bit")


def test_describe_names_each_part() -> None:
    line = MemoryNeed(3995, 675, 868, 500, 4).describe()
    assert line == ("about 6,038 MB (weights 3,995, adapter and optimiser 675, activations 868, CUDA 500)")


def test_a_run_that_fits_has_no_problem() -> None:
    need = need_7b("4bit")
    assert fit_problem(need, "Qwen/Qwen2.5-7B", "4bit", [3900, 24000], min_free_gpu_mb=1000) is None


def test_a_run_that_cannot_fit_says_what_it_needs_and_the_fixes() -> None:
    """Issue 34: the message in the issue's words, with 4-bit, a smaller model and a smaller batch."""
    need = MemoryNeed(3995, 675, 868, 500, 4)  # 6,038 MB
    problem = fit_problem(need, "Qwen/Qwen2.5-7B", "4bit", [3900, 1200], min_free_gpu_mb=1000)
    assert problem is not None
    assert problem.startswith("Qwen/Qwen2.5-7B in 4-bit needs about 6,100 MB; the most any GPU here has free "
                              "is 3,900 MB."), problem
    assert "smaller base_model" in problem and "lower batch_size (now 4)" in problem
    assert "quantize: 4bit" not in problem  # already 4-bit
    unquantised = fit_problem(need_7b("none"), "Qwen/Qwen2.5-7B", "none", [12000], min_free_gpu_mb=1000)
    assert unquantised is not None and "in 16-bit needs about" in unquantised
    assert "set quantize: 4bit" in unquantised


def test_min_free_gpu_mb_larger_than_the_need_decides() -> None:
    """Issue 34: a GPU is taken only with the need or min_free_gpu_mb free, whichever is larger."""
    need = MemoryNeed(3995, 675, 868, 500, 4)
    problem = fit_problem(need, "Qwen/Qwen2.5-7B", "4bit", [7000], min_free_gpu_mb=8000)
    assert problem is not None and "min_free_gpu_mb asks for 8,000 MB free" in problem
    assert "lower min_free_gpu_mb" in problem
    assert fit_problem(need, "Qwen/Qwen2.5-7B", "4bit", [8000], min_free_gpu_mb=8000) is None


def test_no_gpu_at_all_is_its_own_message() -> None:
    need = need_7b("4bit")
    problem = fit_problem(need, "Qwen/Qwen2.5-7B", "4bit", [], min_free_gpu_mb=1000)
    assert problem is not None
    assert "no GPU" in problem and "needs about 6,100 MB on a GPU" in problem
    assert "most any GPU" not in problem


def test_choose_gpu_takes_the_most_free_that_fits() -> None:
    """Issue 34: `gpus: auto` takes the GPU with the most free memory when it has enough."""
    need = MemoryNeed(3995, 675, 868, 500, 4)  # 6,038 MB
    assert choose_gpu(need, {0: 3900, 1: 20000, 2: 24000}, min_free=1000) == 2
    assert choose_gpu(need, {0: 24000, 1: 24000}, min_free=1000) == 0
    assert choose_gpu(need, {0: 3900, 1: 6000}, min_free=1000) is None
    assert choose_gpu(need, {0: 7000}, min_free=8000) is None
    assert choose_gpu(need, {}, min_free=0) is None
