"""Links between the spans of an item (pure): upstream's ``span_link``, relations such as WORKS_FOR or
a dependency arc between spans another scheme marked (its ``span_schema``).

This server keeps spans by position, not by an id, so a link names its spans by position too
(``start``, ``end``, ``label`` and, on a field other than the item's text, ``field``), each checked
against the item's texts and stored with the words it covers. A link is kept only while every span
it joins is still marked: the page drops the links of a span it removes, and the server drops any
left (:func:`pruned`) whenever the spans and links are saved together.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from potato.training.job.schemes import LinkType, Scheme
from potato.training.job.spans import BadSpan, Texts, texts_of


class BadLink(ValueError):
    """A link that does not fit its link type or the item's spans; the message says why."""


def span_key(span: Mapping[str, Any]) -> tuple[int, int, str, str]:
    """What identifies a marked span: where it is, its label and its field."""
    return (span.get("start", -1), span.get("end", -1), str(span.get("label", "")), str(span.get("field", "")))


def _allowed(label: str, allowed: Sequence[str]) -> bool:
    return not allowed or label in allowed


def stored_links(value: Sequence[Mapping[str, Any]], types: Sequence[LinkType], spans: Scheme,
                 texts: str | Texts) -> list[dict[str, Any]] | None:
    """Links as stored: each ``{"link_type", "spans": [span, ...], "direction"}``, its spans checked as
    ``spans`` (the span scheme) checks its own over the item's ``texts`` and written with the words
    they cover; a link given twice is kept once. None when no link is left."""
    by_name = {t.name: t for t in types}
    out: list[dict[str, Any]] = []
    for link in value:
        kind = by_name.get(link["link_type"])
        if kind is None:
            raise BadLink(f"{link['link_type']!r} is not a link type here (its types: {', '.join(by_name)})")
        try:
            joined = [spans.check_spans([span], texts)[0] for span in link["spans"]]
        except BadSpan as bad:
            raise BadLink(f"a {kind.name} link joins a span that is not one here: {bad}") from None
        if len({tuple(s) for s in joined}) < 2:
            raise BadLink(f"a {kind.name} link joins at least two different spans")
        first, last = joined[0], joined[-1]
        if not _allowed(first.label, kind.sources):
            raise BadLink(f"a {kind.name} link starts at a span labelled {', '.join(kind.sources)}, not {first.label}")
        if not _allowed(last.label, kind.targets):
            raise BadLink(f"a {kind.name} link ends at a span labelled {', '.join(kind.targets)}, not {last.label}")
        by_field = texts_of(texts)
        stored = {"link_type": kind.name, "spans": [s.to_json(by_field.get(s.field, "")) for s in joined],
                  "direction": "directed" if kind.directed else "undirected"}
        if stored not in out:
            out.append(stored)
    return out or None


def pruned(links: Sequence[Mapping[str, Any]], spans: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    """The ``links`` whose every span is among the ``spans`` marked now."""
    marked = {span_key(span) for span in spans or ()}
    return [link for link in links if all(span_key(span) in marked for span in link.get("spans", ()))]
