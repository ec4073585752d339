"""What Potato copies to a training host, as one tar stream: the files
:func:`potato.training.launch.codefiles.shipped_files` names, under their content hash.

The host keeps each version under ``remote_dir/code/<hash>`` and reuses it until the source
changes. :func:`shipped_files` is also the list the remote-safety test checks, so what ships and
what is checked cannot drift apart.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from potato.training.launch.codefiles import code_hash, code_root, shipped_files

__all__ = ["code_archive", "code_hash", "shipped_files"]


def code_archive(root: Path | None = None) -> bytes:
    """The shipped files as one uncompressed tar (a few hundred kB): one stream to the host."""
    root = root or Path(code_root())
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
