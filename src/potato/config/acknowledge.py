"""``validation.acknowledge`` entries that quiet known warnings (pure: no I/O).

An entry is a case-sensitive substring of a warning's text, at least
:data:`potato.defaults.ACKNOWLEDGE_MIN_CHARS` long so that a word like ``time`` cannot quiet every
warning by accident. An entry that names a backend (``backends.cluster``) acknowledges that backend's
warnings only, so acknowledging one cluster's long jobs leaves a second cluster's warning standing.
An entry that cannot match (not text, too short, or matching nothing) becomes a warning itself:
a stale acknowledgement should be noticed, not kept forever.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from potato import defaults
from potato.config._checks import show
from potato.config.schema import Issue

_EXAMPLE = '"model_training.backends.cluster.time is"'


def entry_backend(entry: str, backend_names: Iterable[str]) -> str | None:
    """The backend an entry names, or None.

    An entry names backend N when it contains ``backends.N`` followed by ``.`` or the entry's end.
    The longest such N wins, so an entry ending in ``backends.cluster`` names ``cluster`` and
    not ``cluster2``, and ``backends.a.b.time`` names ``a.b`` when both ``a`` and ``a.b`` exist.
    """
    best: str | None = None
    for name in backend_names:
        needle = f"backends.{name}"
        start = entry.find(needle)
        while start != -1:
            end = start + len(needle)
            if end == len(entry) or entry[end] == ".":
                if best is None or len(name) > len(best):
                    best = name
                break
            start = entry.find(needle, start + 1)
    return best


def apply_acknowledge(
    entries: Sequence[object], warnings: Sequence[Issue], backend_names: Iterable[str]
) -> tuple[list[Issue], list[Issue]]:
    """Split ``warnings`` into (remaining, acknowledged) by ``entries``.

    ``remaining`` ends with one new warning per entry that acknowledged nothing; those new
    warnings are never acknowledgeable themselves (they are made after matching).
    """
    names = list(backend_names)
    matched: set[int] = set()
    unusable: list[Issue] = []
    for index, entry in enumerate(entries):
        path = f"validation.acknowledge[{index}]"
        hits, problem = _match(entry, warnings, names)
        matched.update(hits)
        if problem is not None:
            unusable.append(Issue(path, f"{path}: {problem}"))
    remaining = [w for i, w in enumerate(warnings) if i not in matched]
    acknowledged = [w for i, w in enumerate(warnings) if i in matched]
    return remaining + unusable, acknowledged


def _match(entry: object, warnings: Sequence[Issue], names: list[str]) -> tuple[list[int], str | None]:
    """Indices of the warnings ``entry`` acknowledges, and why it acknowledges none (if so)."""
    minimum = defaults.ACKNOWLEDGE_MIN_CHARS
    if not isinstance(entry, str):
        return [], (
            f"{show(entry)} is not text; write part of the warning to acknowledge as a quoted string of at "
            f"least {minimum} characters, e.g. {_EXAMPLE}"
        )
    if len(entry) < minimum:
        return [], (
            f"{show(entry)} has {len(entry)} characters; an entry needs at least {minimum} so it cannot match "
            f"warnings by accident. Quote more of the warning, e.g. {_EXAMPLE}"
        )
    backend = entry_backend(entry, names)
    hits = [
        i
        for i, warning in enumerate(warnings)
        if entry in warning.message and (backend is None or warning.backend == backend)
    ]
    if hits:
        return hits, None
    scope = f" of backend '{backend}'" if backend is not None else ""
    return [], (
        f"{show(entry)} matches no warning{scope} (matching is case-sensitive); copy part of a warning's text "
        "as `potato validate` prints it, or remove the entry"
    )
