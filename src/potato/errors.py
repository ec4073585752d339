"""The exceptions a user must act on. Each message is the fix; each class carries its exit code.

Only :func:`potato.cli.main` turns one into a process exit; library code raises and never prints.
Every error whose text reaches a person derives from :class:`PotatoError`, wherever it is defined
(defined next to the code that raises it, so that modules shipped to training hosts stay small);
:func:`user_errors` finds them all, so no list here goes stale.

Exceptions that are signals between two places in the code, never shown as they are, stay outside
this tree: config checking's ``Invalid`` (collected into a :class:`ConfigError`), the recorder's
RunStopped, ReportAhead and WriteRateExceeded (answered as HTTP statuses), BadJson and SlowBody (HTTP
400 and 408), SlowReader (a connection the server ends), and the BaseExceptions Cancelled and
Interrupted (a stop, not an error).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from typing import Iterable, Sequence


class PotatoError(Exception):
    """Base of every error whose message a user reads and acts on."""

    exit_code = 1


class ConfigError(PotatoError):
    """The project config is invalid; the message lists every problem with its key path."""

    def __init__(self, problems: Sequence[str], path: str = "") -> None:
        self.problems: list[str] = list(problems)
        head = f"{path} is not a valid Potato config" if path else "The config is not valid"
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{head}:\n{lines}\nFix these keys and run `potato validate {path or 'config.yaml'}`.")


class DataError(PotatoError):
    """An item data file cannot be loaded: names the file and line."""


class LabelImportError(PotatoError):
    """Labels to import are invalid; nothing was stored. Lists each bad line."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems: list[str] = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(
            f"{len(self.problems)} invalid label line(s); nothing was imported:\n{lines}\n"
            "Fix these lines, or pass --skip-invalid to import the valid lines only."
        )


class TrainingError(PotatoError):
    """A training request cannot be served (unknown trainer, schema or backend)."""


class DatabaseTooNew(PotatoError):
    """The project database was written by a newer Potato; this one leaves it untouched."""

    def __init__(self, path: str, version: int, known: int) -> None:
        super().__init__(
            f"{path} was written by a newer Potato (database schema {version}; this Potato knows up to {known}), so "
            "this one does not open it and has not changed it. Upgrade Potato (pip install -U potato-annotation) "
            "or start the newer version again.")


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'python'?)`` for a near miss, else an empty string: one wording for every
    message that names a key or a value that is not known (the config, an import, a SLURM file)."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def user_errors(package: str = "potato") -> list[type[PotatoError]]:
    """Every :class:`PotatoError` subclass in ``package``, by module and name. Imports each of its
    modules first (one whose optional packages are missing is passed over), so an error defined
    next to the code that raises it is found wherever that is."""
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(getattr(root, "__path__", []), f"{package}."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # running it is its import
        try:
            importlib.import_module(info.name)
        except ImportError:
            continue
    found: set[type[PotatoError]] = set()
    todo: list[type[PotatoError]] = [PotatoError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found and sub.__module__.split(".")[0] == package.split(".")[0]:
                found.add(sub)
                todo.append(sub)
    return sorted(found, key=lambda cls: (cls.__module__, cls.__qualname__))
