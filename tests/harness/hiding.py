"""Packages made missing for a test: in this process (``hide_modules``) or in every Python started
with a folder on PYTHONPATH (``hiding_path``), so a check and a run meet a machine without them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HF_PACKAGES = ("torch", "transformers", "peft")
"""What the hf trainers import: hidden, they stand for a server without the train-text extra."""


def hide_modules(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """As if ``names`` were not installed: ``import`` fails and ``find_spec`` finds nothing."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


def hiding_path(tmp_path: Path, *names: str) -> Path:
    """A folder whose sitecustomize hides ``names`` in every Python started with it on PYTHONPATH."""
    folder = tmp_path / "hide"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in names), encoding="utf-8")
    return folder
