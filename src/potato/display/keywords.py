"""Upstream Potato's keyword highlights (``keyword_highlights_file``), the pure part: the admin's
words, read from a TSV file, found in an item's text.

Each row names a word (``*`` stands for any letters: ``disappoint*``), the label it speaks for and
the scheme of that label. Matches are whole words, whatever their case. Upstream's
``keyword_highlight_settings`` are for studies of the highlights themselves: each match is shown
with ``keyword_probability`` and, with ``random_word_probability``, other words are marked as
distractors; both drawn from a seed of the annotator and the item, so a page shows the same marks
every time that annotator sees that item.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from dataclasses import dataclass
from typing import Any, Sequence

WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Keyword:
    word: str
    """As the file has it, ``*`` included."""
    label: str
    schema: str

    @property
    def pattern(self) -> re.Pattern[str]:
        return _pattern(self.word)


@functools.lru_cache(maxsize=4096)
def _pattern(word: str) -> re.Pattern[str]:
    """Compiled once per word: every page an annotator sees looks for every keyword."""
    body = r"\w*".join(re.escape(piece) for piece in word.split("*"))
    start = "" if word.startswith("*") else r"\b"
    end = "" if word.endswith("*") else r"\b"
    return re.compile(start + body + end, re.IGNORECASE)


@dataclass(frozen=True)
class KeywordSettings:
    """``keyword_highlight_settings`` (upstream's defaults)."""

    keyword_probability: float = 1.0
    random_word_probability: float = 0.0
    random_word_label: str = "distractor"
    random_word_schema: str = "keyword"


class KeywordFileProblem(ValueError):
    """A row of the keywords file that cannot be read; the message names the line and the fix."""


def read_keywords(text: str) -> tuple[Keyword, ...]:
    """The rows of a ``Word<TAB>Label<TAB>Schema`` file; the header row and blank lines are skipped."""
    out: list[Keyword] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = [cell.strip() for cell in line.split("\t")]
        if number == 1 and [c.lower() for c in cells[:3]] == ["word", "label", "schema"]:
            continue
        if len(cells) != 3 or not all(cells):
            raise KeywordFileProblem(f"line {number} has {len(cells)} column(s), {show_line(line)}; each row is "
                                     "word, label and schema separated by tabs, e.g. great<TAB>positive<TAB>sentiment")
        if not WORD.search(cells[0].replace("*", "")):
            raise KeywordFileProblem(f"line {number}: {cells[0]!r} has no letters to find; write a word, with * for "
                                     "any letters (disappoint*)")
        out.append(Keyword(cells[0], cells[1], cells[2]))
    return tuple(out)


def show_line(line: str, limit: int = 60) -> str:
    shown = line.replace("\t", "<TAB>")
    return repr(shown if len(shown) <= limit else shown[:limit] + "...")


def find_keywords(text: str, keywords: Sequence[Keyword], settings: KeywordSettings, user: str,
                  item_id: str) -> list[dict[str, Any]]:
    """The marks on ``text``: ``{start, end, text, label, schema, keyword}`` in code points, in order,
    none overlapping (an earlier, then longer, match wins)."""
    rng = random.Random(hashlib.md5(f"{user}:{item_id}".encode("utf-8")).hexdigest())  # noqa: S324 - a seed
    found: list[dict[str, Any]] = []
    for keyword in keywords:
        for match in keyword.pattern.finditer(text):
            if match.end() > match.start():
                found.append({"start": match.start(), "end": match.end(), "text": match.group(0),
                              "label": keyword.label, "schema": keyword.schema, "keyword": keyword.word})
    found.sort(key=lambda m: (m["start"], -(m["end"] - m["start"])))
    marks: list[dict[str, Any]] = []
    for mark in found:
        if marks and mark["start"] < marks[-1]["end"]:
            continue
        if settings.keyword_probability >= 1.0 or rng.random() < settings.keyword_probability:
            marks.append(mark)
    if settings.random_word_probability > 0:
        taken = [(m["start"], m["end"]) for m in found]
        for match in WORD.finditer(text):
            if any(s < match.end() and match.start() < e for s, e in taken):
                continue
            if rng.random() < settings.random_word_probability:
                marks.append({"start": match.start(), "end": match.end(), "text": match.group(0),
                              "label": settings.random_word_label, "schema": settings.random_word_schema,
                              "keyword": None})
        marks.sort(key=lambda m: m["start"])
    return marks
