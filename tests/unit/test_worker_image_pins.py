"""The worker image's pins agree with torch's own metadata (so E11 cannot happen in the image).

torch 2.14.1 (the CUDA 13.0 build on PyPI) does not pin NVRTC itself: it requires
``cuda-toolkit[...,nvrtc,...]==13.0.3``, whose metadata pins ``nvidia-cuda-nvrtc==13.0.88.*``. This
test follows that chain in the real wheels' METADATA and fails when images/worker-cuda/constraints.txt
says anything else. The wheels are read where pip finds them on this machine (its find-links and
file:// indexes); elsewhere the same METADATA comes from PyPI (PEP 658, a few kB, no wheel download).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "images" / "worker-cuda" / "constraints.txt"
LINUX = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "python_version": "3.11"}


def pins(path: Path = CONSTRAINTS) -> Dict[str, Requirement]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            out[canonicalize_name(req.name)] = req
    return out


def _local_dirs() -> List[Path]:
    """Where this machine's pip finds wheels: find-links and file:// index roots."""
    config = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    values = [os.environ.get("PIP_FIND_LINKS", "")]
    values += [line.split("=", 1)[1].strip("'\"") for line in config.splitlines() if "find-links" in line or "index-url" in line]
    dirs = []
    for value in " ".join(values).split():
        path = Path(value[len("file://"):] if value.startswith("file://") else value)
        for candidate in (path, path.parent / "files", path.parent.parent / "files"):
            if candidate.is_dir() and candidate not in dirs:
                dirs.append(candidate)
    return dirs


def metadata(name: str, version: str) -> Optional[str]:
    """The METADATA text of ``name==version`` (a linux x86_64 / cp311 / any wheel), or None."""
    stem = canonicalize_name(name).replace("-", "_")

    def wanted(filename: str) -> bool:
        try:
            _, found, _, tags = parse_wheel_filename(filename)
        except ValueError:
            return False
        return found == Version(version) and any(
            t.platform in ("any", "manylinux_2_28_x86_64", "manylinux_2_24_x86_64", "manylinux2014_x86_64",
                           "manylinux_2_17_x86_64")
            and t.interpreter in ("cp311", "py3") for t in tags)

    for folder in _local_dirs():
        for wheel in sorted(folder.glob(f"{stem}-*.whl")):
            if wanted(wheel.name):
                with zipfile.ZipFile(wheel) as z:
                    inner = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
                    return z.read(inner).decode()
    try:  # PEP 691 JSON simple index + PEP 658 metadata files
        req = urllib.request.Request(f"https://pypi.org/simple/{canonicalize_name(name)}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            files = json.load(resp)["files"]
        for f in files:
            fn = f["filename"]
            if fn.endswith(".whl") and wanted(fn) and f.get("core-metadata"):
                with urllib.request.urlopen(f["url"] + ".metadata", timeout=30) as resp:
                    return resp.read().decode()
    except OSError:
        return None
    return None


def requires(text: str, extras: tuple[str, ...] = ("",)) -> List[Requirement]:
    """Requires-Dist lines that apply on linux x86_64, Python 3.11, for these extras."""
    out = []
    for line in text.splitlines():
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is None or any(req.marker.evaluate({**LINUX, "extra": e}) for e in extras):
                out.append(req)
    return out


def test_the_nvrtc_pin_is_the_one_torch_itself_requires() -> None:
    p = pins()
    torch_version = str(next(iter(p["torch"].specifier))).lstrip("=")
    torch_meta = metadata("torch", torch_version)
    if torch_meta is None:
        pytest.skip(f"torch {torch_version}'s METADATA is neither on this machine nor reachable on PyPI")
    toolkit = next(r for r in requires(torch_meta) if canonicalize_name(r.name) == "cuda-toolkit")
    assert "nvrtc" in toolkit.extras
    assert p["cuda-toolkit"].specifier == toolkit.specifier, (
        f"constraints.txt pins {p['cuda-toolkit']}, torch {torch_version} requires {toolkit}")
    toolkit_meta = metadata("cuda-toolkit", str(next(iter(toolkit.specifier))).lstrip("="))
    assert toolkit_meta is not None, "cuda-toolkit's METADATA was not found"
    nvrtc = next(r for r in requires(toolkit_meta, tuple(toolkit.extras)) if canonicalize_name(r.name) == "nvidia-cuda-nvrtc")
    assert p["nvidia-cuda-nvrtc"].specifier == nvrtc.specifier, (
        f"constraints.txt pins {p['nvidia-cuda-nvrtc']}, but torch {torch_version} gets {nvrtc} through {toolkit}")


def test_every_package_the_image_installs_is_pinned_exactly() -> None:
    for name, req in pins().items():
        spec = str(req.specifier)
        assert spec.startswith("==") and "," not in spec, f"{name} is not pinned to one version: {req}"
    assert {"torch", "transformers", "peft", "accelerate", "scikit-learn", "nvidia-cuda-nvrtc", "bitsandbytes",
            "gguf"} <= set(pins())


@pytest.mark.parametrize("constraints", ["constraints.txt", "constraints-cpu.txt"])
def test_the_bitsandbytes_pin_runs_on_the_pinned_torch(constraints: str) -> None:
    """Issue 34: the image's bitsandbytes accepts the image's torch (its own Requires-Dist says which)."""
    from importlib import metadata as installed

    p = pins(ROOT / "images" / "worker-cuda" / constraints)
    version = str(next(iter(p["bitsandbytes"].specifier))).lstrip("=")
    try:
        here = installed.version("bitsandbytes") == version
    except installed.PackageNotFoundError:
        here = False
    text = "\n".join(f"Requires-Dist: {r}" for r in installed.requires("bitsandbytes") or []) if here else \
        metadata("bitsandbytes", version)
    if text is None:
        pytest.skip(f"bitsandbytes {version}'s METADATA is neither installed here nor reachable on PyPI")
    wanted = next(r for r in requires(text) if canonicalize_name(r.name) == "torch")
    torch_version = str(next(iter(p["torch"].specifier))).lstrip("=")
    assert wanted.specifier.contains(torch_version), (
        f"{constraints} pins torch {torch_version}, but bitsandbytes {version} requires {wanted}")


def test_the_agent_image_trains_the_scikit_learn_the_worker_image_pins() -> None:
    """The slim agent image carries the default trainer's package, at the worker image's pin, so a
    run gets the same scikit-learn in either image (issue 19)."""
    dockerfile = (ROOT / "images" / "agent" / "Dockerfile").read_text()
    arg = re.search(r"^ARG SKLEARN_VERSION=(\S+)$", dockerfile, re.M)
    assert arg, "images/agent/Dockerfile has no ARG SKLEARN_VERSION"
    assert f"=={arg.group(1)}" == str(pins()["scikit-learn"].specifier)
    assert '"scikit-learn==${SKLEARN_VERSION}"' in dockerfile
