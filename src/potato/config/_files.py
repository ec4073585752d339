"""The validator's only looks beyond the YAML value: paths and file modes.

Kept apart so the checks stay pure. Paths are made absolute against the config's folder (and ``~``,
the home folder); the output folder and the Hub token file are looked at only for their mode, never
for what they hold, and what is wrong with them is a warning.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from potato.config._checks import Findings


def resolve(base: Path, value: str) -> Path:
    """An absolute path; ``~/`` means the home folder. No file system access beyond the cwd."""
    if value == "~" or value.startswith("~/"):
        value = os.path.expanduser(value)
    return Path(os.path.abspath(os.path.join(str(base), value)))


def warn_open_folder(folder: Path, findings: Findings) -> None:
    """An output folder made beforehand (a volume, a ``mkdir``) that other accounts can open. Potato
    makes what it writes there its user's alone, but the folder's listing and anything put there by
    hand stay open to them. Only the folder's mode is looked at; a missing folder is made 0700."""
    try:
        mode = os.stat(folder).st_mode
    except OSError:
        return
    if mode & 0o077:
        findings.warn("output_annotation_dir", f"other accounts on this machine can open {folder} (mode "
                                               f"{mode & 0o777:04o}); make it yours alone: chmod 700 {shlex.quote(str(folder))}")


def warn_token_file(path: Path, findings: Findings) -> None:
    """A token file that other accounts can read, or that is not there: each a warning, as for the
    config that holds the admin key. The one look beyond the config file itself: at the file's mode,
    never at what it holds."""
    where = "model_training.hub.token_file"
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        findings.warn(where, f"{path} cannot be read ({exc.strerror or exc}); pushing a model to the Hugging Face "
                             "Hub fails until it holds a token with write access (from "
                             "https://huggingface.co/settings/tokens); chmod 600 it")
        return
    if mode & 0o044:
        findings.warn(where, f"{path} holds a Hugging Face token, and other accounts on this machine can read it "
                             f"(mode {mode & 0o777:04o}); make the file yours alone: chmod 600 {path}")


def read_project_file(base: Path, value: str, at: str, fix: str, findings: Findings) -> tuple[Path, str] | None:
    """A file the config names (relative to ``base``) and its text; None, with an error at ``at`` that
    names the file and ``fix``, when it cannot be read."""
    path = resolve(base, value)
    try:
        return path, path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        findings.error(at, f"cannot read {path} ({getattr(exc, 'strerror', None) or exc}); {fix}")
        return None
