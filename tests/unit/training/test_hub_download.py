"""The step line follows a Hub model's download (issue 34: "downloading Qwen/Qwen2.5-0.5B-Instruct: 312 of
988 MB"). Nothing is downloaded here: the cache folder is written by the test as a download would."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List

import pytest

from potato.training.trainers import hub_download
from potato.training.trainers.hub_download import (
    MB,
    DownloadWatch,
    download_shown,
    fetched_size,
    folder_bytes,
    repo_folder,
)


def test_a_load_fetches_one_weight_format_and_the_small_files() -> None:
    files = [("config.json", 700), ("model.safetensors", 988 * MB), ("pytorch_model.bin", 990 * MB),
             ("tokenizer.json", 7 * MB), ("onnx/model.onnx", 900 * MB), ("model.Q4.gguf", 400 * MB)]
    assert fetched_size(files) == 700 + 988 * MB + 7 * MB
    assert fetched_size([("pytorch_model.bin", 5), ("config.json", 1)]) == 6


def test_the_step_line_says_how_far_the_download_is(tmp_path: Path) -> None:
    folder = repo_folder(tmp_path, "Qwen/Qwen2.5-0.5B-Instruct")
    assert folder.name == "models--Qwen--Qwen2.5-0.5B-Instruct"
    (folder / "blobs").mkdir(parents=True)
    said: List[str] = []
    with DownloadWatch("Qwen/Qwen2.5-0.5B-Instruct", 3 * MB, lambda: folder_bytes(folder), said.append, poll_s=0.05):
        for k in range(3):
            (folder / "blobs" / f"b{k}.incomplete").write_bytes(b"\0" * MB)
            deadline = time.monotonic() + 5
            while len(said) <= k and time.monotonic() < deadline:
                time.sleep(0.02)
    assert said == ["downloading Qwen/Qwen2.5-0.5B-Instruct: 1 of 3 MB",
                    "downloading Qwen/Qwen2.5-0.5B-Instruct: 2 of 3 MB",
                    "downloading Qwen/Qwen2.5-0.5B-Instruct: 3 of 3 MB"]


def test_nothing_is_said_when_the_hub_does_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub_download, "hub_total", lambda repo: None)
    said: List[str] = []
    with download_shown("org/model", said.append):
        pass
    assert said == []


def test_nothing_is_said_for_a_model_already_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = repo_folder(tmp_path, "org/model")
    (folder / "blobs").mkdir(parents=True)
    (folder / "blobs" / "weights").write_bytes(b"\0" * 2048)
    monkeypatch.setattr(hub_download, "hub_total", lambda repo: 2048)
    monkeypatch.setattr(hub_download, "cache_dir", lambda: tmp_path)
    said: List[str] = []
    with download_shown("org/model", said.append):
        (folder / "blobs" / "more").write_bytes(b"\0")
    assert said == []


def test_offline_the_hub_is_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert hub_download.hub_total("Qwen/Qwen2.5-0.5B-Instruct") is None
