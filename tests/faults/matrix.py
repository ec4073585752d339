"""The fault matrix: every test that proves how Potato behaves under a fault carries a ``fault`` mark
saying what the fault is, what happens, what the user sees and what is lost. ``pytest -m fault`` runs
them as one suite; :func:`render` turns the marks into the table in docs/reliability.md, so the
document says exactly what the tests prove (tests/unit/test_reliability_doc.py keeps it current).

Regenerate the table after changing a mark:  .venv/bin/python -m tests.faults.matrix --write
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"
START = "<!-- fault-matrix: generated from the tests' fault marks; do not edit by hand -->"
END = "<!-- end of fault-matrix -->"
AREAS = ("The agent and its reports", "Runs and their processes", "ssh hosts", "SLURM clusters",
         "The disk", "Annotators and the server", "Tokens and secrets")
"""The table's sections, in order; a mark names one of them."""


def fault(area: str, fault: str, happens: str, sees: str, lost: str = "nothing") -> pytest.MarkDecorator:
    """Mark a test as proving one row of the matrix. ``lost`` must say what is lost; for anything
    acknowledged (a stored label, a recorded event, a saved prediction) the answer must be nothing."""
    if area not in AREAS:
        raise ValueError(f"area {area!r} is not one of: {', '.join(AREAS)}")
    return pytest.mark.fault(area=area, fault=fault, happens=happens, sees=sees, lost=lost)


@dataclass(frozen=True)
class Row:
    area: str
    fault: str
    happens: str
    sees: str
    lost: str
    test: str
    """``tests/...py::test_name``"""


def _modules() -> Iterator[str]:
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if "@fault(" in path.read_text(encoding="utf-8"):
            yield ".".join(path.relative_to(ROOT).with_suffix("").parts)


def rows() -> list[Row]:
    """Every marked test, in the order of AREAS, then of files and of tests within a file."""
    found: list[tuple[int, str, int, Row]] = []
    for name in _modules():
        module = importlib.import_module(name)
        for test_name, func in inspect.getmembers(module, inspect.isfunction):
            for mark in getattr(func, "pytestmark", []):
                if mark.name == "fault" and func.__module__ == module.__name__:
                    path = Path(*name.split(".")).with_suffix(".py").as_posix()
                    row = Row(test=f"{path}::{test_name}", **mark.kwargs)
                    found.append((AREAS.index(row.area), name, inspect.getsourcelines(func)[1], row))
    return [row for *_, row in sorted(found, key=lambda f: f[:3])]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render(found: list[Row]) -> str:
    """The generated part of docs/reliability.md: one table per area."""
    out = [START, ""]
    for area in AREAS:
        mine = [r for r in found if r.area == area]
        if not mine:
            continue
        out += [f"### {area}", "", "| Fault | What happens | What the user sees | Lost | Test |",
                "| --- | --- | --- | --- | --- |"]
        for r in mine:
            path, name = r.test.split("::")
            out.append(f"| {_cell(r.fault)} | {_cell(r.happens)} | {_cell(r.sees)} | {_cell(r.lost)} | "
                       f"[`{name}`](../{path}) |")
        out.append("")
    out.append(END)
    return "\n".join(out)


def document(current: str, table: str) -> str:
    """``current`` with its generated part replaced by ``table``."""
    if START not in current or END not in current:
        raise ValueError(f"{DOC} lacks the generated part's markers {START!r} and {END!r}")
    head, rest = current.split(START, 1)
    return head + table + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite docs/reliability.md's table")
    args = parser.parse_args(argv)
    text = document(DOC.read_text(encoding="utf-8"), render(rows()))
    if args.write:
        DOC.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
