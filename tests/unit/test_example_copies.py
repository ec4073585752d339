"""Tests copy the example project as what a project is (issue 33 item 15).

README's first command serves examples/reviews in place, so that folder may also hold what a server
wrote there; four container tests that copied it whole failed after it. They copy the config and the
data files through tests/harness/example_project.py; this keeps new tests from copying the folder whole.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.harness.example_project import copy_example, example_files

TESTS = Path(__file__).resolve().parents[1]
COPY = re.compile(r"""(copytree|copy2?|["']cp["'])\b.*\bexamples\b""")
"""A line that copies from the checkout's examples folder."""


def test_no_test_copies_the_example_folder_itself() -> None:
    offenders = [f"{path.relative_to(TESTS)}:{number}"
                 for path in sorted(TESTS.rglob("*.py")) if path != Path(__file__).resolve()
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if COPY.search(line)]
    assert offenders == [], "copy the example with tests.harness.example_project.copy_example"


def test_the_copy_is_the_config_and_its_data_only(tmp_path: Path) -> None:
    copied = copy_example(tmp_path / "project")
    assert sorted(str(p.relative_to(copied)) for p in copied.rglob("*") if p.is_file()) == sorted(example_files())
    assert example_files() == ["config.yaml", "data/reviews.json"]
