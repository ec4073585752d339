"""How a worker run can fail: one exception per cause, each with its result reason and exit code.

Remote-safe: standard library (and :mod:`potato.errors`, itself stdlib-only) on Python 3.8. The
worker turns these into ``result.json`` and ``exit_code``; trainers raise them (or let the
worker map a ``MemoryError`` or ``ImportError``).
"""

from __future__ import annotations

import sys
from typing import Sequence

from potato.errors import PotatoError
from potato.training.results import ExitCode, Reason


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
    """SPEC E4: the interpreter that runs the worker lacks a package the trainer needs."""

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
        elif self.missing:
            fix = (f"no module named '{self.missing.split('.', 1)[0]}'; install it in the interpreter that runs "
                   f"the worker ({exe} -m pip install {pip_name(self.missing)})")
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
