"""`potato init`: the example project for an admin who installed Potato with pip, and so has no
checkout with an examples folder (the README and the tutorial start from examples/reviews)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from potato.cli import cli
from potato.config import load_report
from potato.example import EXAMPLES, WRONG_STEPS, agent_sessions, comparisons, config_text, data_text
from tests.harness.hiding import hiding_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_checkouts_examples_are_the_projects_init_writes(name: str) -> None:
    """One source: examples/<name> is what potato.example writes, with the README's admin key.
    (Changed an example? Write it again from potato/example.py.)"""
    example = ROOT / "examples" / name
    assert (example / EXAMPLES[name].data_file).read_text(encoding="utf-8") == data_text(name)
    assert (example / "config.yaml").read_text(encoding="utf-8") == config_text(
        "change-me", f"examples/{name}/config.yaml", name)
    assert sorted(p.name for p in (ROOT / "examples").iterdir() if p.is_dir()) == sorted(EXAMPLES)


@pytest.mark.parametrize("name, schemes, items", [("agent-steps", ["first_error"], 120), ("preference", ["better"], 150)])
def test_init_writes_each_example_and_it_validates_clean(tmp_path: Path, name: str, schemes: list[str],
                                                         items: int) -> None:
    """Issue 45, item 5: an agent-trace evaluation with a question on each step, and a comparison of two
    answers, each with a model that learns it."""
    folder = tmp_path / name
    result = CliRunner().invoke(cli, ["init", str(folder), "--example", name])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f'Wrote the example project "{EXAMPLES[name].title}" ({EXAMPLES[name].what})')
    report = load_report(folder / "config.yaml")
    assert (report.errors, report.warnings) == ([], [])
    assert report.config is not None and [s.name for s in report.config.annotation_schemes] == schemes
    assert all(s.training_type for s in report.config.annotation_schemes)  # a model learns each
    assert len(json.loads((folder / EXAMPLES[name].data_file).read_text(encoding="utf-8"))) == items


def test_the_examples_answers_are_what_their_items_say() -> None:
    """The agent-steps sessions go wrong from their first wrong step on (a third never do); the preference
    pairs prefer the helpful answer, on either side, with some ties."""
    sessions = agent_sessions()
    assert 0.2 < sum(first is None for _, first in sessions) / len(sessions) < 0.45
    for item, first in sessions:
        agent = item["steps"][1:]
        wrong = [k for k, step in enumerate(agent, 1) if step["content"] in {t for t, _, _ in WRONG_STEPS}]
        assert wrong == ([] if first is None else list(range(first, len(agent) + 1)))
    answers = Counter(answer for _, answer in comparisons())
    assert answers["A"] > 40 and answers["B"] > 40 and 5 < answers["tie"] < 40


def test_init_writes_a_project_that_validates_clean_with_a_key_of_its_own(tmp_path: Path) -> None:
    runner = CliRunner()
    keys = []
    for name in ("first", "second"):
        folder = tmp_path / name
        result = runner.invoke(cli, ["init", str(folder)])
        assert result.exit_code == 0, result.output
        config = folder / "config.yaml"
        assert f"Start it:  potato start {config}" in result.output
        assert os.stat(config).st_mode & 0o777 == 0o600  # it holds the admin key
        report = load_report(config)
        # no weak-key warning, no "others can read it": nothing to fix before the first start
        assert (report.errors, report.warnings) == ([], [])
        assert report.config is not None and len(report.config.annotation_schemes) == 1
        assert len((folder / "data" / "reviews.json").read_text(encoding="utf-8")) == len(data_text())
        keys.append(yaml.safe_load(config.read_text(encoding="utf-8"))["admin_api_key"])
        assert f"potato start {config}" in config.read_text(encoding="utf-8")
    assert keys[0] != keys[1] and "change-me" not in keys


def test_init_never_overwrites_a_project(tmp_path: Path) -> None:
    folder = tmp_path / "study"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "reviews.json").write_text("[]\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "potato", "init", str(folder)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (f"Error: {folder / 'data' / 'reviews.json'} already exists, and potato init "
                                   "does not overwrite a project; name another folder, or move that file away first")
    assert (folder / "data" / "reviews.json").read_text(encoding="utf-8") == "[]\n"
    assert not (folder / "config.yaml").exists()


def test_init_says_what_training_here_lacks(tmp_path: Path) -> None:
    """A server installed without scikit-learn: the example's runs on this machine would fail, so
    init names the package and the command before the admin starts a run."""
    hide = hiding_path(tmp_path, "sklearn")
    folder = tmp_path / "study"
    done = subprocess.run([sys.executable, "-m", "potato", "init", str(folder)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(hide)})
    assert done.returncode == 0, done.stderr
    assert (f"Training on this machine needs more first: Trainer 'sklearn-text-classification' could not be "
            f"imported on this machine: {sys.executable} lacks scikit-learn (`{sys.executable} -m pip install "
            f"'potato-annotation[train-sklearn]'`)") in done.stdout
    assert done.stdout.rstrip().endswith("run `potato validate` after each edit.")


def test_init_into_a_folder_it_cannot_make_says_so_and_leaves_nothing(tmp_path: Path) -> None:
    """A path through a file (as an unwritable folder would): a message, not a traceback."""
    (tmp_path / "notes.txt").write_text("mine\n", encoding="utf-8")
    folder = tmp_path / "notes.txt" / "study"
    done = subprocess.run([sys.executable, "-m", "potato", "init", str(folder)], capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"Error: cannot write the example project into {folder}: Not a directory (")
    assert done.stderr.rstrip().endswith("); name a folder you can write to")
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine\n"
