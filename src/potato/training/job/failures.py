"""How a worker run can fail: one exception per cause, each with its result reason and exit code.

Remote-safe: standard library (and :mod:`potato.errors`, itself stdlib-only) on Python 3.8. The
worker turns these into ``result.json`` and ``exit_code``; trainers raise them (or let the
worker map a ``MemoryError`` or ``ImportError``).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from typing import Dict, List, Optional, Sequence, Set

from potato.errors import PotatoError
from potato.training.job.results import ExitCode, Reason


class WorkerError(PotatoError):
    """A run that cannot finish; the message is what the run page shows, with the fix."""

    exit_code = int(ExitCode.ERROR)
    reason = Reason.ERROR


class BadJob(WorkerError):
    """``job.json`` or the bundle beside it is missing or invalid, or a trainer parameter is wrong."""

    exit_code = int(ExitCode.BAD_JOB)
    reason = Reason.BAD_JOB


class ModelNotFound(BadJob):
    """The trainer's base model is neither on the machine nor downloadable from it (no network)."""


class NoLabels(WorkerError):
    """A schema has no labelled training item, so there is nothing to learn from."""

    exit_code = int(ExitCode.ERROR)
    reason = Reason.NO_LABELS


class OutOfMemory(WorkerError):
    """The trainer ran out of memory (``max_ram_mb``, the machine's RAM or the GPU's memory)."""

    exit_code = int(ExitCode.OOM)
    reason = Reason.OOM


PIP_NAMES = {"sklearn": "scikit-learn", "PIL": "pillow", "yaml": "pyyaml", "cv2": "opencv-python"}
"""Module name -> pip name where the two differ (the fix text names what to install)."""


def pip_name(module: str) -> str:
    """The pip distribution that provides ``module`` (its top-level package), as far as we know."""
    top = module.split(".", 1)[0]
    return PIP_NAMES.get(top, top)


def module_name(package: str) -> str:
    """The module a pip ``package`` provides (``scikit-learn`` -> ``sklearn``), the inverse of :func:`pip_name`."""
    for module, pip in PIP_NAMES.items():
        if pip == package:
            return module
    return package


def missing_packages(packages: Sequence[str]) -> List[str]:
    """Those of the pip ``packages`` this interpreter cannot import, in their order. Looked up by
    name without importing them (torch takes seconds), so a check can name every one at once."""
    out = []
    for package in packages:
        try:
            found = importlib.util.find_spec(module_name(package)) is not None
        except (ImportError, ValueError):  # a parent package missing, or a module without a spec
            found = False
        if not found:
            out.append(package)
    return out


DISTRIBUTION = "potato-annotation"
"""Potato's pip name. Where this interpreter has it installed, one of its extras brings a trainer's
packages in one command (pyproject.toml: train-sklearn, train-text, train-llm)."""


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed_requirements() -> Optional[List[str]]:
    """Potato's requirements where pip installed it into this interpreter (its metadata in this
    interpreter's site-packages, so ``pip install 'potato-annotation[extra]'`` adds to it); None for
    code that merely lies on the path (copied to a host, a source tree)."""
    import site
    import sysconfig
    from pathlib import Path

    try:
        from importlib import metadata

        paths = sysconfig.get_paths()
        places = {Path(paths[key]).resolve() for key in ("purelib", "platlib") if key in paths}
        if site.ENABLE_USER_SITE and isinstance(site.getusersitepackages(), str):
            places.add(Path(site.getusersitepackages()).resolve())
        # every copy on the path: a source tree's egg-info may come first (an editable install's src/)
        for dist in metadata.Distribution.discover(name=DISTRIBUTION):
            if Path(str(dist.locate_file(""))).resolve() in places:
                return list(dist.requires or [])
    except Exception:  # metadata this Python cannot read
        pass
    return None


def extra_for(packages: Sequence[str]) -> Optional[str]:
    """The smallest extra of the installed Potato that brings every one of ``packages``; None where
    this interpreter has no installed Potato (code copied to a host) or no extra brings them all."""
    requirements = _installed_requirements()
    if requirements is None:
        return None
    extras: Dict[str, Set[str]] = {}
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        extra = re.search(r"extra\s*==\s*[\"']([^\"']+)[\"']", marker)
        name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
        if extra and name:
            extras.setdefault(extra.group(1), set()).add(_normalized(name.group(1)))
    wanted = {_normalized(p) for p in packages}
    fitting = sorted((len(names), extra) for extra, names in extras.items() if wanted <= names)
    return fitting[0][1] if fitting else None


def install_command(python: str, packages: Sequence[str]) -> str:
    """``<python> -m pip install`` of Potato's extra that brings ``packages``, else of the packages."""
    extra = extra_for(packages)
    if extra:
        return f"{python} -m pip install '{DISTRIBUTION}[{extra}]'"
    return f"{python} -m pip install {' '.join(packages)}"


IMAGE_FILE = "/etc/potato-image"
"""Written by Potato's container images: the image's name, so a fix never says ``pip install``
inside a container (what is installed there is gone when the container stops)."""

GPU_MODULES = frozenset({"torch", "transformers", "peft", "accelerate", "tokenizers", "safetensors"})
"""What the GPU trainers import: the potato-worker-cuda image has them, the slim agent image does not."""


def image_name(path: str = IMAGE_FILE) -> str | None:
    """The Potato image this process runs in (its first line), or None outside one."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().strip() or None
    except OSError:
        return None


def image_fix(image: str, module: str) -> str:
    """What to do when a Potato image lacks ``module``: another image, never a pip install in it."""
    top = module.split(".", 1)[0]
    if top in GPU_MODULES and image != "potato-worker-cuda":
        return (f"the image {image} has the CPU trainers only; run the agent on the GPU image instead "
                "(potato-agent built with --build-arg BASE_IMAGE=potato-worker-cuda, see docs/containers.md)")
    return (f"the image {image} does not include it; build an image FROM {image} that installs "
            f"{pip_name(module)} (a package installed in a running container is gone when it stops)")


class TrainerImportError(WorkerError):
    """The interpreter that runs the worker lacks a package the trainer needs."""

    exit_code = int(ExitCode.IMPORT)
    reason = Reason.IMPORT

    def __init__(self, trainer: str, error: ImportError, requires: Sequence[str] = (),
                 python: str | None = None, image: str | None = None) -> None:
        self.trainer = trainer
        self.missing: str | None = error.name if isinstance(error, ModuleNotFoundError) else None
        exe = python or sys.executable or "python3"
        image = image if image is not None else image_name()
        if self.missing and image:
            fix = f"no module named '{self.missing.split('.', 1)[0]}'; {image_fix(image, self.missing)}"
        elif image:
            fix = f"{error}; {image_fix(image, (requires or ('its packages',))[0])}"
        elif self.missing:  # name every package the trainer lacks at once, not one per failed run
            first = pip_name(self.missing)
            others = [p for p in missing_packages(requires) if p != first]
            also = f" ({', '.join(others)} {'is' if len(others) == 1 else 'are'} missing too)" if others else ""
            fix = (f"no module named '{self.missing.split('.', 1)[0]}'{also}; install {'them' if others else 'it'} "
                   f"in the interpreter that runs the worker ({install_command(exe, [first, *others])})")
        else:
            packages = " ".join(requires) or "<the trainer's packages>"
            fix = (f"{error}; install or upgrade its packages in the interpreter that runs the worker "
                   f"({exe} -m pip install -U {packages})")
        super().__init__(f"Trainer '{trainer}' could not be imported: {fix}")


class Cancelled(BaseException):
    """The run was asked to stop (SIGTERM); raised by trainers at their next step boundary.

    A ``BaseException`` (like ``KeyboardInterrupt``) on purpose: trainer and library code that
    catches ``Exception`` to retry or log must not swallow a stop request.
    """

    exit_code = int(ExitCode.CANCELLED)
    reason = Reason.CANCELLED
