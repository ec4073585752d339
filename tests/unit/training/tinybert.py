"""A tiny random BERT and its word-level tokenizer, built in code: a local ``base_model`` folder for
tests of the hf trainer that never touch the model hub (see shared/testinfra/ml-notes.md).

23k parameters (hidden 32, 2 layers, 2 heads, intermediate 64, 64 positions); building and saving
takes well under a second. Reuse it from any test: ``build_tiny_bert(tmp_path / "bert", texts)``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable, Iterator

import pytest

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

POSITIVE_WORDS = ["great", "excellent", "love", "perfect", "sturdy", "wonderful", "happy", "recommend"]
NEGATIVE_WORDS = ["broke", "awful", "hate", "useless", "flimsy", "terrible", "refund", "disappointed"]
FILLER_WORDS = ["the", "item", "it", "was", "and", "this", "product", "arrived", "after", "days",
                "box", "my", "for", "really", "quite", "very", "with", "in", "of", "today"]


def synthetic_reviews(n: int = 400, seed: int = 0) -> list[tuple[str, str]]:
    """(text, "positive"|"negative") pairs: filler words plus two words of the review's polarity."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = "positive" if i % 2 == 0 else "negative"
        words = [rng.choice(FILLER_WORDS) for _ in range(rng.randint(4, 10))]
        pool = POSITIVE_WORDS if label == "positive" else NEGATIVE_WORDS
        for _ in range(2):
            words.insert(rng.randrange(len(words) + 1), rng.choice(pool))
        out.append((" ".join(words), label))
    return out


def build_tiny_bert(folder: Path, texts: Iterable[str], num_labels: int = 2, seed: int = 0) -> Path:
    """Save a word-level tokenizer trained on ``texts`` and a random BertForSequenceClassification
    into ``folder``; returns ``folder`` (pass it as the trainer's ``base_model``)."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(list(texts), trainers.WordLevelTrainer(special_tokens=SPECIAL_TOKENS))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]", model_max_length=64,
    )
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, pad_token_id=tok.token_to_id("[PAD]"),
    )
    config.num_labels = num_labels
    model = BertForSequenceClassification(config)
    folder.mkdir(parents=True, exist_ok=True)
    hf_logging.disable_progress_bar()  # "Writing model shards" bars are noise in test output
    tokenizer.save_pretrained(str(folder))
    model.save_pretrained(str(folder))
    return folder


def torch_threads_restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For an autouse fixture of the hf trainers' tests, whose jobs set num_threads 1: as fast for a
    23k-parameter model, and immune to a busy CI machine (two torch processes spinning two OpenMP
    threads each on two cores ran epochs 100x slower). The worker's thread settings are undone after
    each test, the environment's by monkeypatch."""
    import torch

    from potato.training.job.limits import THREAD_VARIABLES

    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
