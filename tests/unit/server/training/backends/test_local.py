"""The local backend as a newcomer meets it (issue 21): a check that is green only when a run could
start (R12, E4), and run failures that name every missing package at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from potato.config.schema import LocalBackendSettings
from potato.server.training.backends.local import check_local
from tests.harness.hiding import HF_PACKAGES, hide_modules, hiding_path
from tests.harness.jobdirs import review_job, run_worker
from tests.harness.jobdirs import assert_failed


# -- check local: trainers this Python cannot import (issue 21, E4) -----------------------------------

def test_check_local_names_every_missing_package_of_a_trainer_with_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain setup has no torch, transformers, peft: the check names all three, once, and the one pip
    command (Potato's extra) that brings them; still ok while the default trainer imports."""
    hide_modules(monkeypatch, *HF_PACKAGES)
    report = check_local(LocalBackendSettings(), "sklearn-text-classification")
    python = sys.executable
    assert report.ok
    assert report.details["missing_packages"] == {"hf-text-classification": list(HF_PACKAGES),
                                                  "hf-llm-classification": list(HF_PACKAGES),
                                                  "llm-zero-shot": ["torch", "transformers"]}  # issue 34
    assert (f"Trainer 'hf-text-classification' could not be imported on this machine: {python} lacks torch, "
            f"transformers, peft (`{python} -m pip install 'potato-annotation[train-text]'`)") in report.lines
    assert not check_local(LocalBackendSettings(), "hf-text-classification").ok


def test_check_local_names_the_trainers_of_the_projects_kinds_of_scheme_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23: a span project hears about the span trainers' packages, a classification project
    (the default) about the classification trainers' only."""
    hide_modules(monkeypatch, *HF_PACKAGES)
    spans = check_local(LocalBackendSettings(), "sklearn-token-classification", {"span"})
    assert spans.ok and spans.details["missing_packages"] == {"hf-token-classification": list(HF_PACKAGES)}
    assert "hf-token-classification" not in check_local(LocalBackendSettings(), "sklearn-text-classification",
                                                        {"radio"}).details["missing_packages"]


def test_check_local_is_not_ok_when_the_default_trainer_cannot_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_modules(monkeypatch, "sklearn")
    report = check_local(LocalBackendSettings(), "sklearn-text-classification")
    assert not report.ok
    assert (f"Trainer 'sklearn-text-classification' could not be imported on this machine: {sys.executable} lacks "
            f"scikit-learn (`{sys.executable} -m pip install 'potato-annotation[train-sklearn]'`)") in report.lines


def test_training_check_local_on_the_command_line(make_project: Callable[..., Path], tmp_path: Path) -> None:
    """How it was found: `potato training check local` after a setup without the train-text extra said
    nothing of hf-text-classification. Exit 0 (the default trainer imports), 1 once it is the default."""
    import os

    hide = hiding_path(tmp_path, *HF_PACKAGES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), *filter(None, [os.environ.get("PYTHONPATH")])])}
    config_path = make_project(model_training={"enabled": True})
    cmd = [sys.executable, "-m", "potato", "training", "check", "local", str(config_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    line = (f"Trainer 'hf-text-classification' could not be imported on this machine: {sys.executable} lacks torch, "
            f"transformers, peft (`{sys.executable} -m pip install 'potato-annotation[train-text]'`)")
    assert line in out.stdout.splitlines(), out.stdout
    hf_default = make_project(model_training={"enabled": True, "trainer": "hf-text-classification"})
    out = subprocess.run(cmd[:-1] + [str(hf_default)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 1 and line in out.stdout.splitlines(), out.stdout + out.stderr


def test_a_run_failure_names_every_missing_package_and_the_extra(tmp_path: Path) -> None:
    """E4 on the server's own Python (a local run): not "install torch", then "install transformers" on
    the next run, but every package the trainer lacks and the extra that brings them (issue 21)."""
    hide = hiding_path(tmp_path, *HF_PACKAGES)
    job_dir = review_job(tmp_path / "job", "hf-text-classification", params={"base_model": "/nowhere"})
    assert run_worker(job_dir, extra_path=[str(hide)]).returncode == 3
    assert assert_failed(job_dir, 3, "import") == (
        "Trainer 'hf-text-classification' could not be imported: no module named 'torch' (transformers, peft are "
        "missing too); install them in the interpreter that runs the worker "
        f"({sys.executable} -m pip install 'potato-annotation[train-text]')")


def test_only_the_local_backend_says_which_packages_a_run_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42 A: the training page marks a trainer by what its backend says is missing. The local
    backend's worker is this Python, so it knows (by name, nothing imported); a machine elsewhere may have
    the packages, so an agent backend says nothing against them."""
    from potato.config.schema import AgentBackendSettings
    from potato.server.training.backends import backend_for

    hide_modules(monkeypatch, *HF_PACKAGES)
    requires = [*HF_PACKAGES, "scikit-learn"]
    assert backend_for(LocalBackendSettings()).packages_missing(requires) == list(HF_PACKAGES)
    assert backend_for(LocalBackendSettings()).packages_missing(["scikit-learn"]) == []
    assert backend_for(AgentBackendSettings(name="lab")).packages_missing(requires) == []
