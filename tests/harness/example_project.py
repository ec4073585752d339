"""The checkout's example project, copied as what a project is: its config and the data files it names.

README's first command serves examples/reviews in place, so the checkout's copy may hold what a server
wrote there (``annotation_output/``: a database with someone's labels, run folders). A test copies
only the project itself, never that (issue 33 item 15: a copy of the whole folder once failed on a
named pipe the server had left in it).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import List

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLE = EXAMPLES / "reviews"
CONFIG = "config.yaml"


def example_files(name: str = "reviews") -> List[str]:
    """An example's own files, relative to its folder: the config, then the data files it names."""
    raw = yaml.safe_load((EXAMPLES / name / CONFIG).read_text(encoding="utf-8"))
    return [CONFIG, *(str(data) for data in raw["data_files"])]


def copy_example(dest: Path, config: bool = True, name: str = "reviews") -> Path:
    """Copy an example project (examples/<name>) into ``dest`` (made if missing); ``config=False``
    copies its data files only, for a test that writes a config of its own. Returns ``dest``."""
    for file in example_files(name):
        if file == CONFIG and not config:
            continue
        target = dest / file
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(EXAMPLES / name / file, target)
    return dest
