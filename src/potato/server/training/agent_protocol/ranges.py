"""The ``Range`` header of a bundle download, read as RFC 9110 has a server read it.

A pure function apart from the route that serves the bundle (:func:`routes.run_bundle`), which hands
werkzeug the range as it is read here: werkzeug's own reading answers an HTML 416 to any header it
cannot parse. Tested on its own, header by header (tests/unit/server/training/runs/test_bundle_range.py).
"""

from __future__ import annotations

import re
from typing import Literal, Optional

UNSATISFIABLE: Literal["unsatisfiable"] = "unsatisfiable"
_INT_RANGE = re.compile(r"([0-9]+)-([0-9]*)")
_SUFFIX_RANGE = re.compile(r"-([0-9]+)")


def byte_range(header: Optional[str], size: int) -> Optional[tuple[int, int]] | Literal["unsatisfiable"]:
    """What a ``Range`` header asks of a file of ``size`` bytes, as RFC 9110 (14.2) has a server read
    it (pure): None to ignore it and send the whole file (no header, another unit, a header that does
    not parse, such as ``bytes=abc`` or ``bytes=5-2``, and several ranges, which a server may answer
    whole); ``(first, last)``, inclusive, for the one range asked for, cut to the file (a suffix longer
    than the file is all of it); :data:`UNSATISFIABLE` when that range holds no byte of the file
    (it starts at or past the end, or ``bytes=-0``)."""
    if not header:
        return None
    unit, sep, ranges = header.partition("=")
    if not sep or unit.strip().lower() != "bytes":
        return None
    specs = [spec.strip(" \t") for spec in ranges.split(",")]
    specs = [spec for spec in specs if spec]  # a list may hold empty elements (RFC 9110 5.6.1)
    if len(specs) != 1:
        return None
    spec = specs[0]
    if (whole := _INT_RANGE.fullmatch(spec)) is not None:
        first = int(whole[1])
        last = int(whole[2]) if whole[2] else size - 1
        if whole[2] and last < first:
            return None  # an invalid range-spec: the header is ignored
        return (first, min(last, size - 1)) if first < size else UNSATISFIABLE
    if (suffix := _SUFFIX_RANGE.fullmatch(spec)) is not None:
        length = int(suffix[1])
        return (max(0, size - length), size - 1) if length > 0 and size > 0 else UNSATISFIABLE
    return None
