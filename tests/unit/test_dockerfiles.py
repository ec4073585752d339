"""What every image promises, read from its Dockerfile (the images themselves run in tests/containers)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = ["images/server/Dockerfile", "images/agent/Dockerfile", "images/worker-cuda/Dockerfile"]


def instructions(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_the_top_level_dockerfile_is_the_server_image() -> None:
    assert instructions(ROOT / "Dockerfile") == instructions(ROOT / "images/server/Dockerfile")


@pytest.mark.parametrize("name", DOCKERFILES)
def test_each_image_takes_its_base_as_an_argument_and_ends_as_a_non_root_user(name: str) -> None:
    lines = instructions(ROOT / name)
    assert lines[0].startswith("ARG BASE_IMAGE=python:3.11-slim")
    assert sum(line.startswith("FROM ${BASE_IMAGE}") for line in lines) == 2  # a build stage, then the image
    users = [line for line in lines if line.startswith("USER ")]
    assert users and users[-1] == "USER 10001"
    labels = "\n".join(lines)
    for key in ("org.opencontainers.image.source", "org.opencontainers.image.version"):
        assert key in labels
    assert "pip install --no-cache-dir" in labels or "install.sh" in labels


def test_the_server_image_has_a_healthcheck_on_healthz() -> None:
    text = (ROOT / "images/server/Dockerfile").read_text()
    assert "HEALTHCHECK" in text and "/healthz" in text


def test_the_apptainer_image_uses_the_docker_image_s_recipe() -> None:
    definition = (ROOT / "images/worker-cuda/apptainer.def").read_text()
    assert "sh /src/images/install.sh /src /src/images/constraints.txt" in definition
    assert "install.sh" in (ROOT / "images/worker-cuda/Dockerfile").read_text()


@pytest.mark.parametrize("name", DOCKERFILES)
def test_each_image_is_labelled_with_the_packages_version(name: str) -> None:
    """One number (issue 19): scripts/containers passes it as VERSION; the default says the same."""
    import potato

    assert f"ARG VERSION={potato.__version__}" in instructions(ROOT / name)
    assert '--build-arg "VERSION=$version"' in (ROOT / "scripts" / "containers").read_text()
