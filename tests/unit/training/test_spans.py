"""Spans (issue 23): the checks a stored span passes, BIO tags and back, and the entity-level score.

The score is compared with seqeval itself on generated tag sequences: the definition the training
page will show is the one a reader of a paper knows.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seqeval.metrics import classification_report

from potato.training.job.spans import (
    BadSpan,
    Span,
    bio_tags,
    check_spans,
    entity_scores,
    majority_spans,
    simple_tokens,
    spans_from_tags,
)

TEXT = "Ada Lovelace met Charles Babbage in London."
LABELS = ["PER", "LOC", "ORG"]


def test_spans_are_checked_against_the_text_as_shown_and_come_back_sorted() -> None:
    spans = check_spans(TEXT, [{"start": 36, "end": 42, "label": "LOC", "text": "London"},
                               {"start": 0, "end": 12, "label": "PER"}], LABELS)
    assert spans == [Span(0, 12, "PER"), Span(36, 42, "LOC")]
    assert spans[1].to_json(TEXT) == {"start": 36, "end": 42, "label": "LOC", "text": "London"}


@pytest.mark.parametrize("raw, words", [
    ({"start": 0, "end": 99, "label": "PER"}, "0-99 is not a stretch of the item's text, which has 43 characters"),
    ({"start": 5, "end": 5, "label": "PER"}, "5-5 is not a stretch"),
    ({"start": -1, "end": 3, "label": "PER"}, "-1-3 is not a stretch"),
    ({"start": "0", "end": 3, "label": "PER"}, "start must be a whole number (a character offset), got '0'"),
    ({"start": 0, "end": True, "label": "PER"}, "end must be a whole number"),
    ({"start": 0, "end": 3, "label": "DATE"}, "label 'DATE' is not one of this scheme's labels: PER, LOC, ORG"),
    ({"start": 0, "end": 3, "label": "PER", "text": "Bob"}, "the text at 0-3 is 'Ada', not 'Bob'"),
    ("Ada", 'span 1 must be an object'),
])
def test_a_bad_span_is_named_with_what_is_wrong(raw: object, words: str) -> None:
    with pytest.raises(BadSpan) as caught:
        check_spans(TEXT, [raw], LABELS)
    assert words in str(caught.value)


def test_overlaps_only_where_the_scheme_allows_them_and_never_the_same_span_twice() -> None:
    both = [{"start": 0, "end": 12, "label": "PER"}, {"start": 4, "end": 12, "label": "ORG"}]
    with pytest.raises(BadSpan, match="overlap, and this scheme does not allow overlapping spans"):
        check_spans(TEXT, both, LABELS)
    assert len(check_spans(TEXT, both, LABELS, allow_overlap=True)) == 2
    with pytest.raises(BadSpan, match="is there twice"):
        check_spans(TEXT, [both[0], dict(both[0])], LABELS, allow_overlap=True)
    with pytest.raises(BadSpan, match="must be a list"):
        check_spans(TEXT, {"start": 0}, LABELS)


def test_characters_beyond_ascii_count_as_one_offset_each() -> None:
    text = "Zoë 🙂 visited Zürich"
    start = text.index("Zürich")
    assert check_spans(text, [{"start": start, "end": start + 6, "label": "LOC", "text": "Zürich"}], LABELS) == [
        Span(start, start + 6, "LOC")]


def test_bio_tags_follow_subword_offsets_and_decode_back_to_the_same_spans() -> None:
    # A tokenizer's offsets: [CLS], "Ada", "Love", "lace", "met", ..., [SEP]
    offsets = [(0, 0), (0, 3), (4, 8), (8, 12), (13, 16), (17, 24), (25, 32), (33, 35), (36, 42), (42, 43), (0, 0)]
    spans = [Span(0, 12, "PER"), Span(17, 32, "PER"), Span(36, 42, "LOC")]
    tags, left_out = bio_tags(offsets, spans)
    assert tags == ["O", "B-PER", "I-PER", "I-PER", "O", "B-PER", "I-PER", "O", "B-LOC", "O", "O"]
    assert left_out == []
    assert [s.span for s in spans_from_tags(offsets, tags)] == spans


def test_spans_bio_cannot_hold_are_returned_as_left_out() -> None:
    offsets = simple_tokens(TEXT)
    nested = [Span(0, 12, "PER"), Span(4, 12, "ORG"), Span(12, 13, "LOC")]  # ORG inside PER; LOC on a space
    tags, left_out = bio_tags(offsets, nested)
    assert tags[:2] == ["B-PER", "I-PER"]
    assert left_out == [Span(4, 12, "ORG"), Span(12, 13, "LOC")]


def test_a_predicted_span_carries_the_mean_confidence_of_its_tokens() -> None:
    offsets = [(0, 3), (4, 12), (13, 16)]
    found = spans_from_tags(offsets, ["B-PER", "I-PER", "O"], [0.9, 0.7, 0.99])
    assert [s.span for s in found] == [Span(0, 12, "PER")] and found[0].confidence == pytest.approx(0.8)


def test_simple_tokens_are_words_and_punctuation() -> None:
    assert [TEXT[a:b] for a, b in simple_tokens(TEXT)][-3:] == ["in", "London", "."]


def test_exact_match_scores_per_label_and_micro() -> None:
    truth = [[Span(0, 12, "PER"), Span(36, 42, "LOC")], [Span(0, 3, "ORG")]]
    predicted = [[Span(0, 12, "PER"), Span(36, 41, "LOC")], [Span(0, 3, "ORG"), Span(5, 9, "PER")]]
    scores = entity_scores(truth, predicted)
    assert scores["micro"] == {"precision": 0.5, "recall": pytest.approx(2 / 3), "f1": pytest.approx(4 / 7),
                               "support": 3}
    assert scores["per_label"]["LOC"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert scores["per_label"]["PER"]["precision"] == 0.5 and scores["per_label"]["PER"]["recall"] == 1.0


TAG = st.sampled_from(["O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(TAG, min_size=1, max_size=12), st.lists(TAG, min_size=1, max_size=12))
                .map(lambda pair: (pair[0], (pair[1] + ["O"] * len(pair[0]))[:len(pair[0])])),
                min_size=1, max_size=6))
def test_the_score_is_seqevals_on_any_tag_sequences(items: list[tuple[list[str], list[str]]]) -> None:
    def spans_of(tags: list[str]) -> list[Span]:
        return [s.span for s in spans_from_tags([(i, i + 1) for i in range(len(tags))], tags)]

    truth_tags = [t for t, _ in items]
    pred_tags = [p for _, p in items]
    ours = entity_scores([spans_of(t) for t in truth_tags], [spans_of(p) for p in pred_tags])
    if not any(ours["per_label"][label]["support"] for label in ours["per_label"]):
        return  # seqeval's report needs at least one true span
    theirs = classification_report(truth_tags, pred_tags, output_dict=True, zero_division=0)
    for label, mine in ours["per_label"].items():
        for key, their_key in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score"),
                               ("support", "support")):
            assert mine[key] == pytest.approx(theirs[label][their_key]), (label, key)
    for key, their_key in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
        assert ours["micro"][key] == pytest.approx(theirs["micro avg"][their_key]), key


def test_the_target_holds_the_spans_more_than_half_of_the_annotators_marked_exactly() -> None:
    ada, lon, lon_short = Span(0, 12, "PER"), Span(36, 42, "LOC"), Span(36, 41, "LOC")
    assert majority_spans([[ada, lon], [ada, lon_short], [ada]]) == (ada,)
    assert majority_spans([[ada, lon], [ada, lon, ada]]) == (ada, lon)  # one annotator counts once per span
    assert majority_spans([[ada], []]) == ()  # two annotators who disagree give none
