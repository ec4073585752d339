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


class TrainerImportError(WorkerError):
    """SPEC E4: the interpreter that runs the worker lacks a package the trainer needs."""

    exit_code = int(ExitCode.IMPORT)
    reason = Reason.IMPORT

    def __init__(self, trainer: str, error: ImportError, requires: Sequence[str] = (),
                 python: str | None = None) -> None:
        self.trainer = trainer
        self.missing: str | None = error.name if isinstance(error, ModuleNotFoundError) else None
        exe = python or sys.executable or "python3"
        if self.missing:
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
