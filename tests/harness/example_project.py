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
EXAMPLE = ROOT / "examples" / "reviews"
CONFIG = "config.yaml"


def example_files() -> List[str]:
    """The example's own files, relative to its folder: the config, then the data files it names."""
    raw = yaml.safe_load((EXAMPLE / CONFIG).read_text(encoding="utf-8"))
    return [CONFIG, *(str(name) for name in raw["data_files"])]


def copy_example(dest: Path, config: bool = True) -> Path:
    """Copy the example project into ``dest`` (made if missing); ``config=False`` copies its data
    files only, for a test that writes a config of its own. Returns ``dest``."""
    for name in example_files():
        if name == CONFIG and not config:
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(EXAMPLE / name, target)
    return dest
