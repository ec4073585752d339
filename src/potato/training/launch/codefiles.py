"""Which files make up the Potato a training host runs, and their content hash.

Remote-safe: standard library only, Python 3.8. The server pushes exactly these files to an ssh
host or a login node (:mod:`potato.server.training.backends.ssh.codepush`), a hand-started SLURM agent copies
them to shared storage for its compute nodes (:func:`potato.training.slurm.job.shared_code`), and the
remote-safety test checks exactly these: what ships and what is checked cannot drift apart.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import List, Optional

PARENT_MODULES = ("__init__.py", "defaults.py", "errors.py")
"""The modules of ``potato`` itself that ``potato.training`` imports (all stdlib-only)."""

PRESENT_MARK = ("potato", "training", "worker", "__main__.py")
"""The file whose presence says a copy of the code is whole: copies are renamed into place only
when complete, and the worker's entry point is what every host runs. The ssh probe and a
hand-started SLURM agent both ask for this one path, so moving the worker cannot leave either
copying the code on every run."""


def code_root() -> str:
    """The folder holding the ``potato`` package this process runs from: the worker imports the
    same code, whether it is an installed Potato or a pushed copy under ``remote_dir/code``."""
    import potato

    return str(Path(potato.__file__).resolve().parent.parent)


def shipped_files(root: Optional[Path] = None) -> List[str]:
    """Paths (relative to ``root``, sorted) of every file that ships: Python sources only."""
    root = root or Path(code_root())
    training = sorted(str(p.relative_to(root)) for p in (root / "potato" / "training").rglob("*.py")
                      if "__pycache__" not in p.parts)
    return [f"potato/{name}" for name in PARENT_MODULES] + training


def code_hash(root: Optional[Path] = None) -> str:
    """SHA-256 over every shipped file's path and bytes: same source, same hash, on any machine."""
    root = root or Path(code_root())
    digest = hashlib.sha256()
    for rel in shipped_files(root):
        data = (root / rel).read_bytes()
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()[:16]
