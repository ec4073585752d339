"""A real, tiny file system for the tests of a disk that fills up (root only: it mounts a tmpfs)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest


def tmpfs(tmp_path: Path, size: str) -> Iterator[Path]:
    """A real, tiny file system of ``size`` (``4m``) at ``tmp_path/disk``, unmounted afterwards (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)
