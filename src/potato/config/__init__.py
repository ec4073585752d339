"""Project configuration: load, validate and report.

:func:`load_config` is what the server and CLI use: the typed :class:`Config` or a
:class:`~potato.errors.ConfigError` that lists every problem. :func:`load_report` is what
``potato validate`` uses: errors, warnings and acknowledged warnings, never an exception.
Callers that print warnings at start take them from :func:`load_report`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union

import yaml

from potato.config.training.backends import BackendKind, polled, register_backend_kind
from potato.config.acknowledge import apply_acknowledge
from potato.config.schema import Config, Issue, Report
from potato.config.validate import validate
from potato.errors import ConfigError

__all__ = [
    "BackendKind",
    "Config",
    "Issue",
    "Report",
    "apply_acknowledge",
    "format_report",
    "load_config",
    "load_report",
    "polled",
    "register_backend_kind",
    "report_to_json",
    "validate",
]

PathLike = Union[str, Path]


def load_report(path: PathLike) -> Report:
    """Read and validate a config file; an unreadable file or bad YAML is an error in the report."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return _failed(source, f"{source}: is not UTF-8 text (byte {exc.start}); save the file as UTF-8")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return _failed(source, f"{source}: cannot read the config file: {reason}; check the path and permissions")
    try:
        raw = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        return _failed(source, _yaml_message(source, exc))
    except yaml.YAMLError as exc:
        return _failed(source, f"{source}: is not valid YAML: {exc}")
    except (ValueError, RecursionError) as exc:
        # PyYAML lets these escape: an integer over Python's 4300-digit limit, nesting too deep to parse.
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return _failed(source, f"{source}: cannot be read as YAML: {what}; simplify the file")
    try:
        mode: int | None = os.stat(path).st_mode
    except OSError:
        mode = None
    return validate(raw, Path(path), mode)


def _yaml_message(source: str, exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = " ".join(p for p in (exc.context, exc.problem) if p) or "syntax error"
    return (
        f"{source}{where}: YAML syntax error: {problem}. Fix the YAML there (check the indentation, and quote "
        "values that contain ': ' or ' #')"
    )


def _failed(source: str, message: str) -> Report:
    return Report(None, [Issue(source, message)], source=source)


def load_config(path: PathLike) -> Config:
    """The typed config of ``path``; :class:`ConfigError` listing every error when it is invalid."""
    report = load_report(path)
    if report.errors or report.config is None:
        raise ConfigError([issue.message for issue in report.errors], str(path))
    return report.config


def format_report(report: Report, strict: bool) -> str:
    """The text ``potato validate`` prints: errors, warnings, acknowledged warnings, then a verdict."""
    lines: list[str] = [f"error: {i.message}" for i in report.errors]
    lines += [f"warning: {i.message}" for i in report.warnings]
    lines += [f"acknowledged: {i.message}" for i in report.acknowledged]
    name = report.source or "The config"
    if report.errors:
        lines.append(f"{name} has {len(report.errors)} error(s).")
    elif strict and report.warnings:
        lines.append(f"{name} fails --strict: {len(report.warnings)} unacknowledged warning(s).")
    elif report.warnings:
        lines.append(
            f"{name} is valid, with {len(report.warnings)} warning(s) (--strict fails on unacknowledged warnings)."
        )
    else:
        lines.append(f"{name} is valid.")
    return "\n".join(lines)


def _issue_json(issue: Issue) -> dict[str, object]:
    return {"path": issue.path, "message": issue.message, "backend": issue.backend}


def report_to_json(report: Report) -> dict[str, object]:
    """The ``potato validate --json`` object."""
    return {
        "valid": report.ok,
        "strict_valid": report.strict_ok(),
        "errors": [_issue_json(i) for i in report.errors],
        "warnings": [_issue_json(i) for i in report.warnings],
        "acknowledged": [_issue_json(i) for i in report.acknowledged],
    }
