"""The config's plain top-level keys: which ones Potato reads, their values, and their warnings.

Apart from the sections (schemes, model_training, ...) because these keys are judged before any
section and each on its own: the project name, the item files, the folders, the admin key (and how
guessable it is), and the switches. Unknown top-level keys are sorted here too, into upstream
features, slips of the keyboard and keys this server merely does not read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from potato.config.study import assist as assist_keys
from potato.config.study import crowdsourcing as crowd_keys
from potato.config import _page as page_keys
from potato.config.study import phases as phase_keys
from potato.config.training.backends import BACKEND_KINDS
from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    boolean,
    check_keys,
    key_text,
    misspelt,
    show,
    subset,
    text,
    text_list,
)
from potato.config import _keywords as keyword_keys
from potato.config.study import chat as chat_keys
from potato.config.study import judging as judge_keys
from potato.config.upstream import TOP_LEVEL as UPSTREAM_KEYS
from potato.config.upstream import OUR_OWN, unsupported_message
from potato.errors import did_you_mean

TOP_LEVEL_KEYS = (
    "annotation_task_name",
    "task_dir",
    "data_files",
    "item_properties",
    "output_annotation_dir",
    "admin_api_key",
    "annotation_schemes",
    "debug",
    "trust_proxy",
    "model_training",
    "active_learning",
    "validation",
    *page_keys.KEYS,
    *crowd_keys.KEYS,
    *phase_keys.KEYS,
    *assist_keys.KEYS,
    *keyword_keys.KEYS,
    *chat_keys.KEYS,
    *judge_keys.KEYS,
)
"""Top-level keys Potato reads; others only warn, as released configs carry many more."""

_REQUIRED = {
    "annotation_task_name": 'missing; name the project, e.g. annotation_task_name: "Review Sentiment"',
    "data_files": 'missing; list the item files (json, jsonl or csv), e.g. data_files: ["data/reviews.json"]',
    "annotation_schemes": (
        "missing; add at least one scheme, e.g. annotation_schemes: [{annotation_type: radio, "
        "name: sentiment, labels: [positive, negative]}]"
    ),
}


def check_top_level(raw: Mapping[Any, object], path: Path, findings: Findings,
                    file_mode: int | None = None) -> dict[str, Any]:
    """The plain top-level keys' checked values; each problem, and the admin key's warnings, reported.
    ``file_mode`` is the config file's ``st_mode`` (None when it was not read from a file)."""
    _warn_unknown_top_level(raw, findings)
    simple = subset(raw, lambda k: k in _TOP_TABLE)
    values, problems = check_keys(simple, _TOP_TABLE, "the config")
    for key, fix in _REQUIRED.items():
        if raw.get(key) is None:
            problems.append((f".{key}", fix))
    findings.errors_at("", problems)
    if raw.get("admin_api_key") is None:
        findings.warn(
            "admin_api_key",
            "not set; admin routes are closed without it. Set admin_api_key to a long random secret to use "
            "the admin pages and the training API",
        )
    elif isinstance(values.get("admin_api_key"), str):
        _warn_weak_key(values["admin_api_key"], findings)
        if file_mode is not None and file_mode & 0o044:
            findings.warn("admin_api_key", f"{path.name} holds the admin key, and other accounts on this machine can "
                                           f"read it (mode {file_mode & 0o777:04o}); make the file yours alone: "
                                           f"chmod 600 {path}")
    return values


def _data_files(value: object) -> tuple[str, ...]:
    """``data_files``: a list of files; one file as a plain string is accepted too."""
    if isinstance(value, str):
        return (text()(value),)
    if isinstance(value, list):  # upstream's {path, encoding} entries: UTF-8 ones are plain paths here
        problems = []
        for i, entry in enumerate(value):
            if isinstance(entry, dict) and "path" in entry:
                encoding = str(entry.get("encoding", "utf-8")).lower().replace("_", "-")
                # upstream names the format as format or type; a .json file may hold JSON lines here too
                key = "format" if "format" in entry else "type"
                named, suffix = entry.get(key), Path(str(entry["path"])).suffix.lstrip(".").lower()
                family = {"jsonl": "json"}
                if named is not None and family.get(str(named).lower(), str(named).lower()) != family.get(suffix, suffix):
                    problems.append((f"[{i}].{key}", f"is {show(named)}, but this server reads a file by its "
                                                     f"extension (.{suffix}); give the file the extension of its "
                                                     "format (.json, .jsonl, .csv or .tsv) and remove " + key))
                elif encoding in ("utf-8", "utf8", "utf-8-sig"):
                    value = [*value[:i], entry["path"], *value[i + 1:]]
                else:
                    problems.append((f"[{i}]", f"is read as {entry.get('encoding')}, and this server reads items as "
                                               "UTF-8; convert the file (e.g. iconv -f " + str(entry.get("encoding")) +
                                               " -t utf-8) and list its path"))
        if problems:
            raise Invalid(problems=problems)
    files: tuple[str, ...] = text_list('["data/reviews.json"]')(value)
    if not files:
        raise Invalid('is empty; list at least one item file, e.g. data_files: ["data/reviews.json"]')
    return files


def _admin_key(value: object) -> str:
    key: str = text(allow_empty=True)(value)
    if not key.strip():
        raise Invalid("is empty, which would be a key anyone can send; set a long random secret or remove the key")
    return key


_TOP_TABLE: Mapping[str, Check] = {
    "annotation_task_name": text(),
    "task_dir": text(),
    "data_files": _data_files,
    "output_annotation_dir": text(),
    "admin_api_key": _admin_key,
    "debug": boolean,
    "trust_proxy": boolean,
}


WEAK_KEYS = frozenset({"change-me", "changeme", "change_me", "admin", "password", "secret", "potato", "test",
                       "example", "letmein", "12345678", "123456", "qwerty", "your-key-here", "key"})
"""Keys from examples and habits: anyone guesses them first."""
MIN_KEY_LENGTH = 16


def _warn_weak_key(key: str, findings: Findings) -> None:
    weak = key.strip().lower() in WEAK_KEYS
    if weak or len(key) < MIN_KEY_LENGTH:
        why = "is an example key that anyone would try first" if weak else (
            f"has only {len(key)} characters; a guessable key opens the admin pages and the training API")
        findings.warn("admin_api_key", f"{why}. Set a long random secret, e.g. the output of "
                                       "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'")


def switched_off(value: object) -> bool:
    """An upstream feature block that says it is off: ``{on: false}`` (YAML reads an unquoted ``on`` as
    true, the key) or ``{enabled: false}``, or plain ``false``. Upstream skips it; so may this server."""
    if value is False:
        return True
    if not isinstance(value, dict):
        return False
    for key in ("on", True, "enabled"):
        if key in value:
            return value[key] is False
    return False


def _warn_unknown_top_level(raw: Mapping[Any, object], findings: Findings) -> None:
    """Upstream Potato's features by name (an error where they change access, storage or what annotators
    see). Any other unknown key a slip of the keyboard from a known one (``model_trainng``) is an error:
    as a warning, the config "was valid" and the server started without the section. Keys further off
    only warn, as upstream configs carry many keys this server does not read."""
    for key in raw:
        if isinstance(key, str) and key in UPSTREAM_KEYS:
            value = raw[key]
            if isinstance(value, str) and value.strip() in OUR_OWN.get(key, ()):
                continue  # upstream's own page: here, this server's
            feature = UPSTREAM_KEYS[key]
            if switched_off(value):
                findings.warn(key, f"is turned off, so upstream Potato does not use it either ({feature.what}); it "
                                   "is ignored")
                continue
            own = f" (set {key}: {OUR_OWN[key][0]} for this server's own page)" if key in OUR_OWN else ""
            (findings.error if feature.error else findings.warn)(key, unsupported_message(key, feature.what) + own)
        elif key not in TOP_LEVEL_KEYS:
            slip = misspelt(key, TOP_LEVEL_KEYS) if isinstance(key, str) else None
            if slip is not None:
                findings.error(key_text(key), f"not a known key; did you mean '{slip}'? As written, it is ignored: "
                                              f"correct the spelling")
                continue
            near = did_you_mean(key, TOP_LEVEL_KEYS) if isinstance(key, str) else ""
            findings.warn(key_text(key), f"unknown key, ignored{near}")


def warn_debug(backend_types: Mapping[str, str | None], findings: Findings) -> None:
    """Requests through the ssh socket arrive as loopback, and debug gives loopback admin access.

    One warning per backend, so an acknowledgement that names a backend covers that backend only.
    """
    for name, btype in backend_types.items():
        kind = BACKEND_KINDS.get(btype) if btype is not None else None
        if kind is not None and kind.ssh_socket:
            findings.warn(
                "debug",
                f"true while model_training.backends.{name} is a{'n' if btype == 'ssh' else ''} {btype} backend. "
                "Requests through its ssh socket reach the server as loopback requests, and a server with "
                "debug: true gives loopback requests admin access, so anyone using that account on the "
                "remote host gets admin access while a run goes on. Turn debug off while training over ssh",
                name,
            )
