"""Issue 33 item 7: the training guide's first-run config had no ``include_unlabeled``, so a newcomer who
copied it saw suggestions only on items somebody labelled. The snippet names the key, set, and is a config
the server takes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import yaml

from potato.config import load_config

GUIDE = Path(__file__).resolve().parents[4] / "docs" / "training.md"


def first_run_snippet() -> dict[str, Any]:
    section = GUIDE.read_text(encoding="utf-8").split("## Your first run", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "the first-run section has a yaml block"
    snippet: dict[str, Any] = yaml.safe_load("\n".join(line[3:] for line in block.group(1).splitlines()))
    return snippet


def test_the_first_run_config_suggests_on_unlabelled_items_and_says_so() -> None:
    snippet = first_run_snippet()
    assert snippet["model_training"]["writeback"]["include_unlabeled"] is True
    section = GUIDE.read_text(encoding="utf-8").split("## Your first run", 1)[1]
    line = next(line for line in section.splitlines() if "include_unlabeled: true" in line)
    assert "#" in line  # a comment says what it changes


def test_the_first_run_config_is_one_the_server_takes(make_project: Callable[..., Path]) -> None:
    config = load_config(make_project(**first_run_snippet()))
    assert config.model_training.enabled and config.model_training.writeback.include_unlabeled
    assert list(config.model_training.writeback.schemas) == ["sentiment"]
