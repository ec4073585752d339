"""The files in helm-less-manifests/ say what works: configs validate, commands and paths exist."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import yaml

from potato.training.agent.startup import parser as agent_parser

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "helm-less-manifests"


def test_the_slurm_example_validates_in_a_project(make_project: Callable[..., Path]) -> None:
    example = yaml.safe_load((MANIFESTS / "slurm" / "backend.yaml").read_text())
    path = make_project(model_training=example["model_training"])
    out = subprocess.run([sys.executable, "-m", "potato", "validate", str(path), "--strict"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_compose_file_builds_from_the_repository_s_dockerfiles() -> None:
    compose: Any = yaml.safe_load((MANIFESTS / "compose.yaml").read_text())
    for service in compose["services"].values():
        build = service["build"]
        assert (MANIFESTS / build["context"] / build["dockerfile"]).is_file()
    agent = compose["services"]["agent"]["command"]
    args = agent_parser().parse_args([a.replace("${POTATO_AGENT_BACKEND:-lab}", "lab") for a in agent])
    assert args.server == "http://server:8000" and "POTATO_TRAINING_TOKEN" in compose["services"]["agent"]["environment"]


def _exec_start(unit: str) -> list[str]:
    text = (MANIFESTS / "systemd" / unit).read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    return shlex.split(line.split("=", 1)[1])


def test_the_agent_unit_takes_its_token_from_a_credential_and_its_flags_are_the_agent_s() -> None:
    argv = _exec_start("potato-agent.service")
    assert argv[1:3] == ["-m", "potato.training.agent"]
    args = agent_parser().parse_args(argv[3:])
    assert args.token_file == "${CREDENTIALS_DIRECTORY}/token" and args.workdir == "/var/lib/potato-agent"
    text = (MANIFESTS / "systemd" / "potato-agent.service").read_text()
    assert re.search(r"^LoadCredential=token:/etc/potato/agent-token$", text, re.M)
    assert "RestartPreventExitStatus=3" in text  # the agent's exit code for a rejected token


def test_the_server_unit_validates_then_starts_with_the_cli_s_options() -> None:
    argv = _exec_start("potato-server.service")
    assert argv[0] == "/opt/potato/bin/potato" and argv[1] == "start"
    usage = subprocess.run([sys.executable, "-m", "potato", "start", "--help"], capture_output=True, text=True,
                           timeout=60).stdout
    for flag in (a for a in argv[2:] if a.startswith("--")):
        assert flag in usage
