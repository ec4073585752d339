"""The three images as the container suites run them: the tag scripts/containers built them with, the
docker CLI on the suite's engine, the agent image started as docs/containers.md starts it, and the example
project copied for the images' user."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.harness.example_project import copy_example

TAG = os.environ.get("POTATO_IMAGES", "")
DOCKER = "/usr/bin/docker"
ROOT = Path(__file__).resolve().parents[2]


def docker(*args: str, check: bool = True, timeout: float = 300, host: str = "") -> subprocess.CompletedProcess[str]:
    """The docker CLI on this suite's engine, or on the engine at ``host`` (a DOCKER_HOST)."""
    env = dict(os.environ, DOCKER_HOST=host) if host else None
    out = subprocess.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout, env=env)
    if check and out.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


def agent_container(name: str, image: str, server_url: str, token: str, *options: str, once: bool = True,
                    host: str = "") -> None:
    """``docker run -d IMAGE --server URL --backend lab`` as docs/containers.md runs the agent: the token
    passed on from this environment by name (``-e POTATO_TRAINING_TOKEN``), never on the command line."""
    env = dict(os.environ, POTATO_TRAINING_TOKEN=token, **({"DOCKER_HOST": host} if host else {}))
    started = subprocess.run([DOCKER, "run", "-d", "--name", name, *options, "-e", "POTATO_TRAINING_TOKEN", image,
                              "--server", server_url, "--backend", "lab", *(["--once"] if once else [])],
                             env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr


def project_copy(tmp_path: Path) -> Path:
    """The example project, writable by the images' user (10001)."""
    project = copy_example(tmp_path / "project")
    for path in [project, *project.rglob("*")]:
        os.chown(path, 10001, 10001)
    return project
