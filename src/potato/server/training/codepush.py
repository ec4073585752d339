"""What Potato copies to a training host: the ``potato.training`` package and the three stdlib
modules of ``potato`` it imports, named by a content hash (D2, R18).

The host keeps each version under ``remote_dir/code/<hash>`` and reuses it until the source
changes. :func:`shipped_files` is also the list the remote-safety test checks, so what ships and
what is checked cannot drift apart.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

from potato.training.supervise import code_root

PARENT_MODULES = ("__init__.py", "defaults.py", "errors.py")
"""The modules of ``potato`` itself that ``potato.training`` imports (all stdlib-only)."""


def package_root() -> Path:
    """The folder that holds the ``potato`` package."""
    return Path(code_root())


def shipped_files(root: Path | None = None) -> list[str]:
    """Paths (relative to ``root``, sorted) of every file that ships: Python sources only."""
    root = root or package_root()
    training = sorted(str(p.relative_to(root)) for p in (root / "potato" / "training").rglob("*.py")
                      if "__pycache__" not in p.parts)
    return [f"potato/{name}" for name in PARENT_MODULES] + training


def code_hash(root: Path | None = None) -> str:
    """SHA-256 over every shipped file's path and bytes: same source, same hash, on any server."""
    root = root or package_root()
    digest = hashlib.sha256()
    for rel in shipped_files(root):
        data = (root / rel).read_bytes()
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()[:16]


def code_archive(root: Path | None = None) -> bytes:
    """The shipped files as one uncompressed tar (a few hundred kB): one stream to the host."""
    root = root or package_root()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel in shipped_files(root):
            data = (root / rel).read_bytes()
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
