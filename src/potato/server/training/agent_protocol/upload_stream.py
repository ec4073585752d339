"""An upload's body streamed to its file, chunk by chunk, within a byte limit and the disk reserve.

Apart from :mod:`routes`, which decides what a crossed limit or a full disk means for the run and
answers it (413, 507): this only moves the bytes and calls back when a limit is crossed, so that a
predictions upload of hundreds of megabytes never sits in memory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Callable, NoReturn

from potato.training.job.private import open_private

UPLOAD_CHUNK = 1 << 20
"""Bytes read and written at a time."""


def stream_to_file(stream: IO[bytes], part: Path, limit: int, length: int | None,
                   too_large: Callable[[], NoReturn], into_reserve: Callable[[int], None]) -> int:
    """Write ``stream`` to ``part`` (private to the server's user, fsynced) and return how many bytes
    came. Past ``limit`` bytes ``too_large`` is called (it raises); for a body of unknown ``length``
    ``into_reserve`` looks at the disk again every 64 MB (it raises when the reserve is reached)."""
    written = 0
    with open_private(part, "wb") as out:
        while True:
            chunk = stream.read(UPLOAD_CHUNK)
            if not chunk:
                break
            written += len(chunk)
            if written > limit:
                out.close()
                too_large()
            if length is None and written % (64 * UPLOAD_CHUNK) < len(chunk):
                into_reserve(64 * UPLOAD_CHUNK)  # a body of unknown length: look again every 64 MB
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    return written
