"""``keyword_highlights_file`` and ``keyword_highlight_settings``: upstream's keyword highlights.

The file is read here, as :mod:`potato.config.study.assist` reads ``ai_config_file``: a keywords
file is part of the config, and a bad row is best said by ``potato validate``. A missing file is a
warning, as upstream has it: the project runs without highlights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from potato.config._checks import Check, Findings, Invalid, check_keys, mapping, number, show, text
from potato.config._files import resolve
from potato.display.keywords import Keyword, KeywordFileProblem, KeywordSettings, read_keywords

KEYS = ("keyword_highlights_file", "keyword_highlight_settings")
"""The top-level keys this module reads."""

_SETTINGS: Mapping[str, Check] = {
    "keyword_probability": number(0, 1, open_low=False),
    "random_word_probability": number(0, 1, open_low=False),
    "random_word_label": text(),
    "random_word_schema": text(),
}


def check_keywords(raw: Mapping[Any, object], task_dir: Path,
                   findings: Findings) -> tuple[tuple[Keyword, ...], KeywordSettings] | None:
    """The keywords and how they are shown; None when something is wrong (reported)."""
    settings = KeywordSettings()
    given = raw.get("keyword_highlight_settings")
    if given is not None:
        try:
            values, problems = check_keys(mapping(given, "{keyword_probability: 1.0}"), _SETTINGS,
                                          "keyword_highlight_settings")
        except Invalid as bad:
            values, problems = {}, bad.problems
        if problems:
            findings.errors_at("keyword_highlight_settings", problems)
            return None
        defaults = KeywordSettings()
        settings = KeywordSettings(
            keyword_probability=float(values.get("keyword_probability", defaults.keyword_probability)),
            random_word_probability=float(values.get("random_word_probability", defaults.random_word_probability)),
            random_word_label=str(values.get("random_word_label", defaults.random_word_label)),
            random_word_schema=str(values.get("random_word_schema", defaults.random_word_schema)))
    value = raw.get("keyword_highlights_file")
    if value is None or value == "":
        return (), settings
    if not isinstance(value, str):
        findings.error("keyword_highlights_file", f"must be a file's path, got {show(value)}")
        return None
    path = resolve(task_dir, value)
    if not path.is_file():
        findings.warn("keyword_highlights_file", f"{path} does not exist, so no keywords are highlighted; write the "
                                                 "file (word, label and schema per line, separated by tabs) or fix "
                                                 "the path (it is relative to task_dir)")
        return (), settings
    try:
        keywords = read_keywords(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        findings.error("keyword_highlights_file", f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}; "
                                                  "save it as UTF-8 text the server's account can read")
        return None
    except KeywordFileProblem as exc:
        findings.error("keyword_highlights_file", f"{path}: {exc}")
        return None
    return keywords, settings
