"""Safe extraction of run bundles and artifact archives.

stdlib-only and Python 3.8-safe: the agent uses it on remote hosts, where an archive from the
network must not be able to write outside its folder.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path
from typing import Optional

from potato.errors import PotatoError

MAX_RATIO = 200
"""A bundle (JSON lines of texts, gzipped) expands 5-20 times; 200 times is a bomb, not a bundle."""
MIN_CAP = 256 * 1024 * 1024
"""Below this a small archive may expand as far as it likes (a few MB of labels and items)."""


class UnsafeArchive(PotatoError):
    """A bundle member would land outside the extraction folder, or the bundle expands absurdly."""


def extract_archive(archive: Path, dest: Path, max_bytes: Optional[int] = None) -> None:
    """Extract plain files and folders only; refuse absolute paths, ``..``, links and devices, and an
    archive whose files add up to more than ``max_bytes`` (default: 200 times its size, at least
    256 MB) before anything is written. Files are created new, never through a link, in a fresh
    folder that replaces ``dest`` only when complete (an agent that restarts extracts again)."""
    final = dest
    dest = final.with_name(final.name + ".part")
    shutil.rmtree(str(dest), ignore_errors=True)
    dest.mkdir(parents=True)
    root = dest.resolve()
    size = archive.stat().st_size
    cap = max_bytes if max_bytes is not None else max(MIN_CAP, MAX_RATIO * size)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            expanded = sum(m.size for m in members if m.isfile())
            if expanded > cap:
                raise UnsafeArchive(f"{archive}: its files add up to {expanded} bytes from {size} bytes packed, over "
                                    f"the {cap}-byte limit; it is not a bundle Potato made")
            for member in members:
                target = (root / member.name).resolve()
                if not (member.isfile() or member.isdir()):
                    raise UnsafeArchive(f"{archive}: member {member.name!r} is not a plain file or folder")
                if target != root and root not in target.parents:
                    raise UnsafeArchive(f"{archive}: member {member.name!r} would be written outside {final}")
            for member in members:
                target = root / member.name
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(member)
                if src is None:
                    continue
                fd = os.open(str(target), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
                with src, os.fdopen(fd, "wb") as out:
                    while True:
                        chunk = src.read(1 << 20)
                        if not chunk:
                            break
                        out.write(chunk)
    except BaseException:
        shutil.rmtree(str(dest), ignore_errors=True)
        raise
    shutil.rmtree(str(final), ignore_errors=True)
    os.replace(str(dest), str(final))
