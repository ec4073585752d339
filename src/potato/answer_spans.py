"""A question's answer marked in its passage (pure): upstream's ``extractive_qa``, SQuAD-style. The
answer names its stretch of the passage by offsets (code points, as this server's spans count them)
and says what it holds; both are checked against the passage here, so a stored answer is always the
passage's own words. An unanswerable question is stored as upstream stores it: no text, -1 and -1.
"""

from __future__ import annotations

from typing import Any, Mapping

UNANSWERED = {"answer_text": "", "start": -1, "end": -1, "unanswerable": True}


class BadAnswerSpan(ValueError):
    """An answer that is not the passage's words where it says; the message says what is there."""


def stored_answer_span(value: Mapping[str, Any], passage: str) -> dict[str, Any]:
    """``value`` as stored: the unanswerable answer as upstream writes it, else the stretch of
    ``passage`` it names, refused unless it holds the text given."""
    if value["unanswerable"]:
        return dict(UNANSWERED)
    start, end = value["start"], value["end"]
    if end > len(passage):
        raise BadAnswerSpan(f"the passage has {len(passage)} characters; an answer ending at {end} is past its end")
    said = passage[start:end]
    if said != value["answer_text"]:
        raise BadAnswerSpan(f"characters {start} to {end} of the passage are {said!r}, not {value['answer_text']!r}; "
                            "mark the answer in the passage again")
    return {"answer_text": said, "start": start, "end": end, "unanswerable": False}
