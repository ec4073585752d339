"""Keys of a config that the validator neither reads nor names: what a study would lose unseen.

A project moved over from upstream Potato must find each of its keys honoured or named as a
feature this server lacks. Most levels of the config are checked against a table of known keys
(:func:`potato.config._checks.check_keys`), whose unknown keys are errors; but a value taken as it
is (a layout, a field's options) is read key by key later, and a key nothing asks for there passes
silently. :func:`unread_keys` validates a config whose mappings note every key asked for, and
lists the keys that were neither asked for nor named by a finding: ``scripts/upstream-census
--unread`` counts them over upstream's examples, and a test holds the example project to none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from potato.config._checks import key_text
from potato.config.schema import Report


class Noted(dict):  # type: ignore[type-arg]
    """A mapping of the config that notes each key the validator asks for (get, [], in, pop).

    Walking its items does not count: checking a level's keys against a table walks them all, and
    :func:`check_keys` notes the ones its table knows itself."""

    def __init__(self, data: dict[Any, Any], path: str, reads: set[str]) -> None:
        super().__init__({key: noted(value, _at(path, key), reads) for key, value in data.items()})
        self._path = path
        self._reads = reads

    def note_read(self, key: Any) -> None:
        self._reads.add(_at(self._path, key))

    def __getitem__(self, key: Any) -> Any:
        self.note_read(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self.note_read(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.note_read(key)
        return super().__contains__(key)

    def pop(self, key: Any, *default: Any) -> Any:
        self.note_read(key)
        return super().pop(key, *default)

    def subset(self, keep: Any) -> Noted:
        """The keys ``keep`` says, noting reads as this mapping does (:func:`potato.config._checks.subset`)."""
        out = Noted.__new__(Noted)
        dict.__init__(out, {key: dict.__getitem__(self, key) for key in dict.keys(self) if keep(key)})
        out._path, out._reads = self._path, self._reads
        return out

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self.note_read(key)
        return super().setdefault(key, default)


def noted(value: Any, path: str, reads: set[str]) -> Any:
    """``value`` with every mapping in it a :class:`Noted` (lists keep their places as ``[i]``)."""
    if isinstance(value, dict):
        return Noted(value, path, reads)
    if isinstance(value, list):
        return [noted(v, f"{path}[{i}]", reads) for i, v in enumerate(value)]
    return value


def _at(path: str, key: Any) -> str:
    return f"{path}.{key_text(key)}" if path else key_text(key)


def key_paths(value: Any, path: str = "") -> Iterator[str]:
    """Every key path in ``value``, parents before their children (pure)."""
    if isinstance(value, dict):
        for key, child in value.items():
            at = _at(path, key)
            yield at
            yield from key_paths(child, at)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from key_paths(child, f"{path}[{i}]")


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top + ".") or path.startswith(top + "[")


def unread_keys(raw: Any, config_path: Path) -> tuple[Report, list[str]]:
    """Validate ``raw`` as ``potato validate`` does, and list its keys that nothing read or named: a
    key counts as read when the validator asked for it or for a key below it, and as named when a
    finding is about it or about a key above it."""
    from potato.config.validate import validate

    reads: set[str] = set()
    report = validate(noted(raw, "", reads), config_path)
    named = [issue.path for issue in (*report.errors, *report.warnings) if issue.path]
    found = []
    for path in key_paths(raw):
        if path in reads or any(_within(read, path) for read in reads):
            continue
        if any(_within(path, top) for top in named):
            continue
        found.append(path)
    return report, found
