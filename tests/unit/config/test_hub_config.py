"""Issue 24: ``model_training.hub`` (where a push to the Hugging Face Hub takes its token, and the
namespace of a run's default repository), with the messages a user reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.config.schema import HubSettings, Report
from tests.conftest import base_config


def check(tmp_path: Path, hub: Any) -> Report:
    raw = base_config()
    raw["model_training"] = {"enabled": True, "hub": hub}
    return validate(raw, tmp_path / "config.yaml")


def hub_warnings(report: Report) -> list[str]:
    return [w.message for w in report.warnings if w.path.startswith("model_training.hub")]


def test_no_hub_section_is_the_environment_s_token_and_no_organization(tmp_path: Path) -> None:
    report = check(tmp_path, None)
    assert report.config is not None and report.config.model_training.hub == HubSettings()
    assert hub_warnings(report) == []


def test_a_token_file_is_resolved_against_the_config_s_folder(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    token = tmp_path / "secrets" / "hf_token"
    token.write_text("hf_x\n")
    token.chmod(0o600)
    report = check(tmp_path, {"token_file": "secrets/hf_token", "organization": "my-lab"})
    assert report.errors == [] and hub_warnings(report) == []
    assert report.config is not None
    assert report.config.model_training.hub == HubSettings(token_file=token, organization="my-lab")


def test_a_token_file_others_can_read_warns_like_the_admin_key(tmp_path: Path) -> None:
    token = tmp_path / "hf_token"
    token.write_text("hf_x\n")
    token.chmod(0o644)
    report = check(tmp_path, {"token_file": "hf_token"})
    assert report.config is not None  # a warning, not an error
    assert hub_warnings(report) == [
        f"model_training.hub.token_file: {token} holds a Hugging Face token, and other accounts on this machine can "
        f"read it (mode 0644); make the file yours alone: chmod 600 {token}"]
    assert "hf_x" not in str(report.warnings)


def test_a_missing_token_file_warns(tmp_path: Path) -> None:
    report = check(tmp_path, {"token_file": "nowhere/hf_token"})
    assert report.config is not None
    [warning] = hub_warnings(report)
    assert warning.startswith(f"model_training.hub.token_file: {tmp_path / 'nowhere' / 'hf_token'} cannot be read")
    assert "write access" in warning


@pytest.mark.parametrize("hub, words", [
    ("hf_token", "model_training.hub: must be a mapping of keys to values, e.g. {token_file:"),
    ({"token": "hf_x"}, "model_training.hub.token: unknown key for model_training.hub (did you mean 'token_file'?)"),
    ({"token_file": 3}, "model_training.hub.token_file: must be text"),
    ({"organization": "my lab"}, "model_training.hub.organization: 'my lab' is not a Hub user or organization name"),
    ({"organization": "a/b"}, "is not a Hub user or organization name"),
    ({"organization": "-lab"}, "is not a Hub user or organization name"),
])
def test_a_wrong_hub_section_is_an_error_that_names_the_fix(tmp_path: Path, hub: Any, words: str) -> None:
    report = check(tmp_path, hub)
    assert report.config is None
    assert any(words in e.message for e in report.errors), [e.message for e in report.errors]
