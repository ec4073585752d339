"""Value checkers and the key walker the config validator is built from (pure: no I/O).

A checker takes one YAML value and returns it converted to what the typed config holds, or raises
:class:`Invalid` with the reason and the fix. The walker :func:`check_keys` runs a table of checkers
over a mapping and reports unknown keys with a did-you-mean, so each config section is a table
instead of a branch per key. Problems carry a path *relative* to the mapping (``.port``,
``.packages[1]``); :class:`Findings` prefixes the section's path when it records them.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence, Tuple

from potato.config.schema import Issue
from potato.errors import did_you_mean

Problem = Tuple[str, str]
"""(relative key path such as ``.port`` or ``[2]``, detail text without the path)."""

Check = Callable[[object], Any]
"""A checker: returns the converted value or raises :class:`Invalid`."""


class Invalid(Exception):
    """A value is wrong. Each problem says where below the key and what to do about it."""

    def __init__(self, detail: str = "", at: str = "", problems: Sequence[Problem] | None = None) -> None:
        self.problems: list[Problem] = list(problems) if problems else [(at, detail)]
        super().__init__("; ".join(d for _, d in self.problems))


class Findings:
    """Errors and warnings collected while walking one config; messages start with their key path."""

    def __init__(self) -> None:
        self.errors: list[Issue] = []
        self.warnings: list[Issue] = []

    def error(self, path: str, detail: str, backend: str | None = None) -> None:
        self.errors.append(Issue(path, _message(path, detail), backend))

    def warn(self, path: str, detail: str, backend: str | None = None) -> None:
        self.warnings.append(Issue(path, _message(path, detail), backend))

    def warn_exact(self, path: str, message: str, backend: str | None = None) -> None:
        """A warning whose full text is fixed by the spec, not ``path: detail``."""
        self.warnings.append(Issue(path, message, backend))

    def errors_at(self, base: str, problems: Iterable[Problem], backend: str | None = None) -> None:
        for at, detail in problems:
            self.error(join_at(base, at), detail, backend)


def _message(path: str, detail: str) -> str:
    return f"{path}: {detail}" if path else detail


def join_at(base: str, at: str) -> str:
    """``base`` + relative path, without a leading dot at the top level."""
    full = base + at
    return full[1:] if full.startswith(".") else full


def key_text(key: object) -> str:
    """A mapping key as it appears in a key path (YAML allows non-text keys)."""
    return key if isinstance(key, str) else show(key)


def show(value: object) -> str:
    """A short, safe rendering of a YAML value for a message.

    Never the repr of a container (YAML aliases can make them huge or self-referencing) and never
    ``str`` of a huge int (Python refuses past 4300 digits).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 64 else "a very large number"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, dict):
        return "a mapping"
    return f"a value of type {type(value).__name__}"



def edit_distance(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of two neighbours that make ``a`` into ``b``
    (the optimal string alignment distance; pure)."""
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        earlier, before, row = before, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(before[j] + 1, row[j - 1] + 1, before[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], earlier[j - 2] + 1)
    return row[len(b)]


def misspelt(word: str, choices: Iterable[str]) -> str | None:
    """The known key ``word`` is a slip of the keyboard away from, if any: within two edits (one for
    keys of four letters or fewer, where two edits make a different word), case aside."""
    best: tuple[int, str] | None = None
    for choice in choices:
        limit = 1 if len(choice) <= 4 else 2
        distance = edit_distance(word.lower(), choice.lower())
        if distance <= limit and (best is None or distance < best[0]):
            best = (distance, choice)
    return best[1] if best else None


def check_keys(
    raw: Mapping[Any, object],
    table: Mapping[str, Check],
    what: str,
    hints: Mapping[str, str] | None = None,
    listed: Sequence[str] | None = None,
) -> tuple[dict[str, Any], list[Problem]]:
    """Run ``table`` over ``raw``: converted values of the good keys, and every problem.

    A key set to null counts as left out, so its default applies. ``hints`` replace the generic
    unknown-key text for keys that are wrong for a known reason (``packages`` on slurm). ``listed``:
    the keys an unknown key's message offers, where fewer than the table's apply (a radio scheme's).
    """
    values: dict[str, Any] = {}
    problems: list[Problem] = []
    offered = list(table) if listed is None else list(listed)
    valid = ", ".join(offered)
    note_read = getattr(raw, "note_read", None)  # potato.config.unread: the keys a table knows are read
    for key, value in raw.items():
        at = f".{key_text(key)}"
        if note_read is not None and isinstance(key, str) and key in table:
            note_read(key)
        if not isinstance(key, str):
            problems.append((at, f"keys must be text, got {show(key)}; valid keys for {what}: {valid}"))
        elif hints and key in hints:
            problems.append((at, hints[key]))
        elif key not in table:
            problems.append(
                (at, f"unknown key for {what}{did_you_mean(key, offered)}. Valid keys: {valid}")
            )
        elif value is not None:
            try:
                values[key] = table[key](value)
            except Invalid as bad:
                problems.extend((at + sub, detail) for sub, detail in bad.problems)
    return values, problems


def subset(raw: Mapping[Any, Any], keep: Callable[[Any], bool]) -> dict[Any, Any]:
    """``raw``'s keys that ``keep`` says, as the same kind of mapping: a config whose reads are noted
    (:mod:`potato.config.unread`) notes what is read from the copy too."""
    copy = getattr(raw, "subset", None)
    return copy(keep) if copy is not None else {k: v for k, v in raw.items() if keep(k)}


def mapping(value: object, example: str) -> Mapping[Any, object]:
    """``value`` if it is a mapping, else :class:`Invalid` showing the expected shape."""
    if isinstance(value, dict):
        return value
    raise Invalid(f"must be a mapping of keys to values, e.g. {example}, got {show(value)}")


def section(table: Mapping[str, Check], what: str, example: str) -> Check:
    """A checker for a nested mapping checked by ``table``; returns the converted values."""

    def check(value: object) -> dict[str, Any]:
        values, problems = check_keys(mapping(value, example), table, what)
        if problems:
            raise Invalid(problems=problems)
        return values

    return check


def anything(value: object) -> object:
    """For keys a later step checks itself."""
    return value


def boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise Invalid(f"must be true or false, got {show(value)}")


def _bounds(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum} to {maximum}"
    if minimum is not None:
        return f" of at least {minimum}"
    return ""


LARGEST = 2**31 - 1
"""Cap on any number in the config: larger ones overflow the float and C arithmetic (sleep, timeouts)
that uses them, and no setting here needs more (2**31 seconds is 68 years)."""


def _too_large(value: float) -> Invalid:
    return Invalid(f"{show(value)} is too large; use at most {LARGEST}")


def integer(minimum: int | None = None, maximum: int | None = None) -> Check:
    """Whole numbers in a range. ``true`` is not 1 here, although Python's bool is an int."""

    def check(value: object) -> int:
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or (minimum is not None and value < minimum)
            or (maximum is not None and value > maximum)
        ):
            raise Invalid(f"must be a whole number{_bounds(minimum, maximum)}, got {show(value)}")
        if value > LARGEST:
            raise _too_large(value)
        return value

    return check


def number(low: float, high: float | None = None, *, open_low: bool, open_high: bool = False) -> Check:
    """Finite numbers in a range; NaN and infinities fail every comparison or the finite test."""
    low_text = f"{'greater than' if open_low else 'at least'} {low:g}"
    high_text = "" if high is None else f" and {'less than' if open_high else 'at most'} {high:g}"

    def check(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(f"must be a number {low_text}{high_text}, got {show(value)}")
        num = float(value) if isinstance(value, float) or abs(value) < 2**1000 else math.inf
        ok = math.isfinite(num) and (num > low if open_low else num >= low)
        if ok and high is not None:
            ok = num < high if open_high else num <= high
        if not ok:
            raise Invalid(f"must be a number {low_text}{high_text}, got {show(value)}")
        if num > LARGEST:
            raise _too_large(value)
        return num

    return check


def text(*, allow_empty: bool = False, numbers: bool = False, option_safe: bool = False) -> Check:
    """Text values. ``numbers`` takes an unquoted number as its text (``account: 12345``);
    ``option_safe`` refuses a leading ``-`` and whitespace, which ssh would read as an option."""

    def check(value: object) -> str:
        if numbers and isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
            value = str(value)
        if not isinstance(value, str):
            hint = "; quote it" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
            raise Invalid(f"must be text, got {show(value)}{hint}")
        if "\x00" in value:
            raise Invalid("contains a NUL character; remove it")
        if not allow_empty and not value.strip():
            raise Invalid("is empty; set a value or remove the key")
        if option_safe and (value.startswith("-") or any(c.isspace() for c in value)):
            raise Invalid(f"{show(value)} must not start with '-' or contain spaces (ssh would read it as an option)")
        return value

    return check


def choice(options: Sequence[str], what: str) -> Check:
    def check(value: object) -> str:
        if isinstance(value, str) and value in options:
            return value
        near = did_you_mean(value, options) if isinstance(value, str) else ""
        raise Invalid(f"{show(value)} is not a valid {what}{near}; valid choices: {', '.join(options)}")

    return check


def text_list(example: str, *, unique: bool = False) -> Check:
    """A list of non-empty strings, every bad item reported with its index."""
    item_check = text()

    def check(value: object) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise Invalid(f"must be a list of strings, e.g. {example}, got {show(value)}")
        items: list[str] = []
        problems: list[Problem] = []
        for i, item in enumerate(value):
            try:
                good = item_check(item)
            except Invalid as bad:
                problems.append((f"[{i}]", bad.problems[0][1]))
                continue
            if unique and good in items:
                problems.append((f"[{i}]", f"{show(good)} appears more than once; list each only once"))
            items.append(good)
        if problems:
            raise Invalid(problems=problems)
        return tuple(items)

    return check
