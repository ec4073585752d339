"""Safe extraction of run bundles and artifact archives.

stdlib-only and Python 3.8-safe: the agent uses it on remote hosts, where an archive from the
network must not be able to write outside its folder.
"""

from __future__ import annotations

import tarfile
from pathlib import Path


class UnsafeArchive(Exception):
    """A bundle member would land outside the extraction folder."""


def extract_archive(archive: Path, dest: Path) -> None:
    """Extract plain files and folders only; refuse absolute paths, ``..``, links and devices."""
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            target = (root / member.name).resolve()
            if not (member.isfile() or member.isdir()):
                raise UnsafeArchive(f"{archive}: member {member.name!r} is not a plain file or folder")
            if target != root and root not in target.parents:
                raise UnsafeArchive(f"{archive}: member {member.name!r} would be written outside {dest}")
        for member in members:
            target = root / member.name
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            if src is None:
                continue
            with src, target.open("wb") as out:
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    out.write(chunk)
