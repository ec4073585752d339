"""Upstream's keyword highlights (issue 44, item 4): the admin's TSV of words, found in an item's
text as whole words whatever their case, ``*`` for any letters, and the research settings that
show a share of them or add distractors, the same for an annotator and item every time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from potato.display.keywords import Keyword, KeywordFileProblem, KeywordSettings, find_keywords, read_keywords
from tests.unit.test_upstream_configs import messages, report_of, upstream

TSV = "Word\tLabel\tSchema\ngreat\tpositive\tsentiment\ndisappoint*\tnegative\tsentiment\nnot great\tnegative\tsentiment\n"
TEXT = "Great value, though the box was disappointing. Not great packaging; greatness aside."


def test_the_file_is_read_by_rows() -> None:
    assert read_keywords(TSV) == (Keyword("great", "positive", "sentiment"),
                                  Keyword("disappoint*", "negative", "sentiment"),
                                  Keyword("not great", "negative", "sentiment"))
    with pytest.raises(KeywordFileProblem, match=r"^line 2 has 2 column\(s\), 'great<TAB>positive'; each row is word"):
        read_keywords("Word\tLabel\tSchema\ngreat\tpositive\n")
    with pytest.raises(KeywordFileProblem, match=r"line 1: '\*' has no letters to find"):
        read_keywords("*\tpositive\tsentiment\n")


def test_whole_words_any_case_with_wildcards_and_the_longer_match_first() -> None:
    marks = find_keywords(TEXT, read_keywords(TSV), KeywordSettings(), "ana", "r1")
    assert [(m["text"], m["label"], m["keyword"]) for m in marks] == [
        ("Great", "positive", "great"), ("disappointing", "negative", "disappoint*"),
        ("Not great", "negative", "not great")]  # "greatness" is no whole word "great"
    assert all(TEXT[m["start"]:m["end"]] == m["text"] for m in marks)


def test_offsets_count_code_points() -> None:
    [mark] = find_keywords("🙂 great", (Keyword("great", "positive", "s"),), KeywordSettings(), "ana", "r1")
    assert (mark["start"], mark["end"]) == (2, 7)


def test_a_share_of_keywords_and_distractors_the_same_each_time() -> None:
    keywords = read_keywords(TSV)
    some = KeywordSettings(keyword_probability=0.5, random_word_probability=0.3)
    first = find_keywords(TEXT, keywords, some, "ana", "r1")
    assert first == find_keywords(TEXT, keywords, some, "ana", "r1")  # stable for the annotator and item
    distractors = [m for m in first if m["label"] == "distractor"]
    assert all(m["schema"] == "keyword" and m["keyword"] is None for m in distractors)
    draws = [find_keywords(TEXT, keywords, some, f"user{n}", "r1") for n in range(40)]
    shown = sum(1 for marks in draws for m in marks if m["keyword"]) / (40 * 3)
    assert 0.3 < shown < 0.7  # about half of the three keywords
    assert any(m["label"] == "distractor" for marks in draws for m in marks)
    assert find_keywords(TEXT, keywords, KeywordSettings(keyword_probability=0.0), "ana", "r1") == []


def test_the_config_reads_the_file_beside_it(tmp_path: Path) -> None:
    from potato.config.validate import validate

    def report(**top: Any) -> Any:
        return validate(upstream(task_dir=str(tmp_path), **top), tmp_path / "config.yaml")

    missing = report(keyword_highlights_file="data/keywords.tsv")
    assert missing.errors == [] and missing.config.keywords == ()
    assert (f"keyword_highlights_file: {tmp_path / 'data' / 'keywords.tsv'} does not exist, so no keywords are "
            "highlighted; write the file (word, label and schema per line, separated by tabs) or fix the path (it "
            "is relative to task_dir)") in messages(missing.warnings)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "keywords.tsv").write_text(TSV, encoding="utf-8")
    found = report(keyword_highlights_file="data/keywords.tsv", keyword_highlight_settings={"keyword_probability": 0.8})
    assert found.errors == [] and len(found.config.keywords) == 3
    assert found.config.keyword_settings.keyword_probability == 0.8
    (tmp_path / "data" / "keywords.tsv").write_text("great positive sentiment\n", encoding="utf-8")
    assert messages(report(keyword_highlights_file="data/keywords.tsv").errors)[0].startswith(
        f"keyword_highlights_file: {tmp_path / 'data' / 'keywords.tsv'}: line 1 has 1 column(s)")
    assert messages(report_of(upstream(keyword_highlight_settings={"keyword_probability": 2})).errors) == [
        "keyword_highlight_settings.keyword_probability: must be a number at least 0 and at most 1, got 2"]
