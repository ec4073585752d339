"""How an item's field is shown: each ``instance_display`` type as data the page draws (pure).

The page builds every field with DOM calls (``textContent``, ``createElement``), never from HTML
text, so nothing in an item can run script whatever it holds. A document's Markdown or HTML is
read here into a tree of a few harmless elements (paragraphs, headings, lists, emphasis, code,
tables, links to http(s) addresses); anything else is dropped or kept as its text.

Each type is a :class:`FieldType` registered with :func:`register_field_type`: what the page needs to
draw a field of it, the display options it honours, ignores or refuses, and whether spans may mark
it. The config check, the item API and validate's media check ask the registry, never a type's
name; the page draws a type by name (``DRAW`` in ``static/fields.js``; an unknown one as its text).
"""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence
from urllib.parse import quote, urlsplit

from potato.display.media import media_file_problem

MAX_ROWS = 1000
"""A spreadsheet shows at most this many rows (the page stays light; the item keeps them all)."""
SPEAKER_MAX = 40

Node = Any
"""A document node: a text string, or ``[tag, {attr: value}, [children]]``."""
UPSTREAM_MEDIA_PREFIX = "/media/"
"""Upstream's examples name a media file by its address on upstream's server (``/media/paper.pdf``)."""

@dataclass(frozen=True)
class FieldType:
    """One ``instance_display`` type.

    Its display options are every one upstream Potato documents for the type (its displays'
    optional_fields), each with what this server does with it: draws it (``honoured``), draws the
    field its own way so a look-only option changes nothing (``looks``), or lacks the feature the
    option turns on (``refused``, with that feature: the study would not be what its config says).
    Nothing upstream documents passes unnamed.
    """

    name: str
    draw: Callable[[Any, Mapping[str, Any], str, str], dict[str, Any]]
    """What the page needs beyond the label and type, from (the item's value, the field's display
    options, its label, where media files are served); a media type's ``src`` is added before."""
    honoured: frozenset[str] = frozenset()
    looks: frozenset[str] = frozenset()
    refused: Mapping[str, str] = field(default_factory=dict)
    media: bool = False
    """Its value may name a file under ``media_directory`` (or be an http(s) address)."""
    span_text: Callable[[Any, Mapping[str, Any]], str] | None = None
    """The text spans mark in it (``span_target``), as the page shows it and their offsets count it;
    None: spans cannot mark it."""


FIELD_KINDS: dict[str, FieldType] = {}
"""Every type a config's display field may name, in registration order."""


def register_field_type(kind: FieldType) -> None:
    """Let ``instance_display`` fields name ``kind.name``."""
    if kind.name in FIELD_KINDS and FIELD_KINDS[kind.name] != kind:
        raise ValueError(f"a display field type {kind.name!r} exists already")
    FIELD_KINDS[kind.name] = kind


def field_types() -> tuple[str, ...]:
    return tuple(FIELD_KINDS)


def span_field_types() -> tuple[str, ...]:
    """Types whose text spans can mark (``span_target``)."""
    return tuple(name for name, kind in FIELD_KINDS.items() if kind.span_text is not None)


def is_media(kind: str) -> bool:
    """Whether a ``kind`` field's value may name a file under ``media_directory``."""
    return kind in FIELD_KINDS and FIELD_KINDS[kind].media


def option_verdict(kind: str, name: str) -> tuple[str, str]:
    """What this server does with display option ``name`` of a ``kind`` field (pure): ``("use", "")``,
    ``("looks", "")`` (a look-only option it ignores), ``("refuse", <the feature it would turn on>)``,
    or ``("unknown", <upstream's options for the type>)``."""
    found = FIELD_KINDS.get(kind)
    honoured, looks, refused = (found.honoured, found.looks, found.refused) if found else (frozenset(), frozenset(), {})
    if name in honoured:
        return "use", ""
    if name in refused:
        return "refuse", refused[name]
    if name in looks:
        return "looks", ""
    known = sorted({*honoured, *looks, *refused})
    return "unknown", ", ".join(known)


def media_path(value: Any) -> str | None:
    """The file a media field names under ``media_directory``, or None where it is a web address or
    cannot be a file there (an absolute path, ``..``)."""
    if not isinstance(value, str) or not value.strip():
        return None
    if urlsplit(value).scheme:
        return None
    value = value.strip()
    if value.startswith(UPSTREAM_MEDIA_PREFIX):
        value = value[len(UPSTREAM_MEDIA_PREFIX):]
    path = PurePosixPath(value.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return None
    return str(path)


def media_problem(value: Any) -> str | None:
    """Why a media field's value cannot be shown, or None (pure)."""
    if not isinstance(value, str) or not value.strip():
        return "this item has no file or address here"
    scheme = urlsplit(value).scheme
    if scheme:
        return None if scheme in ("http", "https") else f"{scheme}: addresses are not shown; use https:// or a file"
    return None if media_path(value) else "the path leaves media_directory; name a file inside it"


INLINE_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml)[;,]")
"""An image written into the item itself, as upstream's agent-trace examples write screenshots and
charts: drawn by an ``img`` element, where even an SVG runs no script."""


def media_src(value: Any, media_url: str) -> tuple[str, str]:
    """Where the page loads a media file from, or why not (pure): an http(s) address as it is, a file
    under ``media_directory`` from the media route (``media_url``); ``("", why)`` for anything else."""
    problem = media_problem(value)
    if problem:
        return "", problem
    path = media_path(value)
    return (media_url + quote(path) if path else value), ""


def image_src(value: Any, media_url: str) -> tuple[str, str]:
    """Where the page loads an image an answer type shows from (a screenshot, a chart, a table), and
    why not where it cannot (pure): an image written into the item, or as :func:`media_src` says."""
    if isinstance(value, str) and INLINE_IMAGE.match(value):
        return value, ""
    return media_src(value, media_url)


def field_payload(kind: str, label: str, value: Any, options: Mapping[str, Any], media_url: str) -> dict[str, Any]:
    """What the page needs to draw one field of one item. ``media_url`` is where ``media_directory``'s
    files are served (``/media/``)."""
    out: dict[str, Any] = {"label": label, "type": kind}
    found = FIELD_KINDS.get(kind) or FIELD_KINDS["text"]  # an unknown type is drawn as its text
    if found.media:
        src, problem = media_src(value, media_url)
        if problem:
            return {**out, "type": "text", "text": f"[{kind} not shown: {problem}]"}
        out["src"] = src
    return {**out, **found.draw(value, options, label, media_url)}


def span_text(kind: str, value: Any, options: Mapping[str, Any]) -> str:
    """The text of a field that spans mark, as the page shows it and their offsets count it."""
    found = FIELD_KINDS.get(kind)
    return found.span_text(value, options) if found is not None and found.span_text is not None else _plain(value)


class Marked(Protocol):
    """A field spans mark (``potato.config.schema.DisplayField``)."""

    @property
    def key(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def options(self) -> Mapping[str, Any]: ...


def span_texts(text: str, data: Mapping[str, Any], fields: Sequence[Marked]) -> dict[str, str]:
    """An item's texts that spans mark, by the field name a span gives (``""``: the item's own
    ``text``); ``fields``: the other fields spans mark (``Config.span_fields``)."""
    out = {"": text}
    for f in fields:
        out[f.key] = span_text(f.type, data.get(f.key), f.options)
    return out


def _plain(value: Any) -> str:
    from potato.items import shown_text

    return "" if value is None else shown_text(value)


def _css_size(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}px"
    text = str(value).strip()
    return text if re.fullmatch(r"\d+(\.\d+)?(px|%|rem|em|vw)", text) else ""


def _turns(value: Any, options: Mapping[str, Any]) -> list[dict[str, str]]:
    return dialogue_turns(value, options.get("speaker_extraction", True) is not False,
                          str(options.get("speaker_key") or "speaker"), str(options.get("text_key") or "text"))


def dialogue_turns(value: Any, extract: bool = True, speaker_key: str = "speaker",
                   text_key: str = "text") -> list[dict[str, str]]:
    """Turns as ``{"speaker", "text"}``: from ``"Speaker: text"`` strings or objects with the speaker
    and the text under ``speaker_key`` and ``text_key`` (upstream's display options)."""
    turns = value if isinstance(value, list) else [value] if value is not None else []
    out: list[dict[str, str]] = []
    for turn in turns:
        if isinstance(turn, dict):
            out.append({"speaker": str(turn.get(speaker_key, "")), "text": _plain(turn.get(text_key, ""))})
            continue
        text = _plain(turn)
        speaker, sep, rest = text.partition(": ")
        if extract and sep and 0 < len(speaker) <= SPEAKER_MAX and "\n" not in speaker:
            out.append({"speaker": speaker, "text": rest})
        else:
            out.append({"speaker": "", "text": text})
    return out


def table(value: Any) -> tuple[list[str], list[list[str]], int]:
    """(header, rows, rows left out) of a list of objects, a list of rows (the first is the header),
    CSV text, or upstream's ``{"headers": [...], "rows": [...]}``."""
    if isinstance(value, dict) and isinstance(value.get("rows"), list):
        named = value.get("headers")
        rows_in = value["rows"]
        if all(isinstance(row, dict) for row in rows_in) and not isinstance(named, list):
            return table(rows_in)
        if isinstance(named, list):
            keys = [str(h) for h in named]
            value = [keys] + [[row.get(k) for k in keys] if isinstance(row, dict) else row for row in rows_in]
        else:
            value = rows_in
    if isinstance(value, str):
        value = list(csv.reader(io.StringIO(value)))
    if not isinstance(value, list) or not value:
        return [], [], 0
    if all(isinstance(row, dict) for row in value):
        header = list(dict.fromkeys(str(k) for row in value for k in row))
        rows = [[_plain(row.get(k)) for k in header] for row in value]
    else:
        lines = [row if isinstance(row, list) else [row] for row in value]
        header, rows = [_plain(c) for c in lines[0]], [[_plain(c) for c in row] for row in lines[1:]]
    return header, rows[:MAX_ROWS], max(0, len(rows) - MAX_ROWS)


# -- documents ----------------------------------------------------------------------------------

BLOCK_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "table", "thead",
              "tbody", "tr", "th", "td", "hr", "br"}
INLINE_TAGS = {"strong", "b", "em", "i", "code", "a", "sub", "sup", "span", "u", "s", "del"}
DROPPED_WITH_CONTENT = {"script", "style", "iframe", "object", "embed", "template", "noscript", "svg", "math",
                        "head", "title", "form", "select", "textarea", "button"}
VOID = {"br", "hr", "img", "input", "meta", "link", "source", "wbr", "area", "base", "col", "embed", "param",
        "track"}


def safe_href(href: str | None) -> str | None:
    if not href:
        return None
    return href if urlsplit(href.strip()).scheme in ("http", "https", "mailto") else None


class _Tree(HTMLParser):
    """HTML to a tree of the allowed elements: other elements give their text, and those that hold
    code or other documents (script, style, iframe...) give nothing."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root: list[Node] = []
        self.stack: list[tuple[str, list[Node]]] = [("", self.root)]
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in DROPPED_WITH_CONTENT:
            if tag not in VOID:
                self.skipping += 1
            return
        if self.skipping or (tag not in BLOCK_TAGS and tag not in INLINE_TAGS):
            return
        kept: dict[str, str] = {}
        if tag == "a":
            href = safe_href(dict(attrs).get("href"))
            if href:
                kept["href"] = href
        children: list[Node] = []
        self.stack[-1][1].append([tag, kept, children])
        if tag not in VOID:
            self.stack.append((tag, children))

    def handle_endtag(self, tag: str) -> None:
        if tag in DROPPED_WITH_CONTENT:
            self.skipping = max(0, self.skipping - 1)
            return
        if self.skipping:
            return
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        if not self.skipping and data:
            self.stack[-1][1].append(data)


def sanitise_html(source: str) -> list[Node]:
    parser = _Tree()
    parser.feed(source)
    parser.close()
    return parser.root


_INLINE = re.compile(r"(\*\*(?P<strong>.+?)\*\*|__(?P<strong2>.+?)__|\*(?P<em>[^*]+?)\*|_(?P<em2>[^_]+?)_"
                     r"|`(?P<code>[^`]+)`|\[(?P<text>[^\]]+)\]\((?P<href>[^)\s]+)\))")


def inline(text: str) -> list[Node]:
    """Markdown's emphasis, code and links in one line of text."""
    out: list[Node] = []
    pos = 0
    for match in _INLINE.finditer(text):
        if match.start() > pos:
            out.append(text[pos:match.start()])
        groups = match.groupdict()
        if groups["strong"] or groups["strong2"]:
            out.append(["strong", {}, inline(groups["strong"] or groups["strong2"])])
        elif groups["em"] or groups["em2"]:
            out.append(["em", {}, inline(groups["em"] or groups["em2"])])
        elif groups["code"]:
            out.append(["code", {}, [groups["code"]]])
        else:
            href = safe_href(groups["href"])
            out.append(["a", {"href": href}, inline(groups["text"])] if href else groups["text"])
        pos = match.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def markdown(source: str) -> list[Node]:
    """The Markdown people write in documents: headings, paragraphs, lists, quotes, fenced code, rules.
    Raw HTML in it is shown as text (a document that is HTML is read as HTML, sanitised)."""
    blocks: list[Node] = []
    lines = source.replace("\r\n", "\n").split("\n")
    i = 0
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            blocks.append(["p", {}, inline(" ".join(s.strip() for s in paragraph))])
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            code: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            blocks.append(["pre", {}, [["code", {}, ["\n".join(code)]]]])
        elif not stripped:
            flush()
        elif heading := re.match(r"(#{1,6})\s+(.*)", stripped):
            flush()
            blocks.append([f"h{len(heading.group(1))}", {}, inline(heading.group(2).rstrip("#").strip())])
        elif re.fullmatch(r"(-{3,}|\*{3,}|_{3,})", stripped):
            flush()
            blocks.append(["hr", {}, []])
        elif re.match(r"([-*+]|\d+[.)])\s+", stripped):
            flush()
            ordered = stripped[0].isdigit()
            items: list[Node] = []
            while i < len(lines) and re.match(r"\s*([-*+]|\d+[.)])\s+", lines[i]):
                items.append(["li", {}, inline(re.sub(r"^\s*([-*+]|\d+[.)])\s+", "", lines[i]))])
                i += 1
            blocks.append(["ol" if ordered else "ul", {}, items])
            continue
        elif stripped.startswith(">"):
            flush()
            quoted: list[str] = []
            while i < len(lines) and lines[i].strip().startswith(">"):
                quoted.append(lines[i].strip()[1:].strip())
                i += 1
            blocks.append(["blockquote", {}, markdown("\n".join(quoted))])
            continue
        else:
            paragraph.append(line)
        i += 1
    flush()
    return blocks


def pdf_pages(data: bytes) -> int | None:
    """How many pages a PDF has, from its page objects (None when it holds none that can be counted:
    compressed object streams need the viewer's own count)."""
    count = len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data))
    return count or None


def display_problems(fields: Sequence[tuple[int, str, str]], items: Iterable[tuple[str, Mapping[str, Any]]],
                     media: Path | None, limit: int = 5, private: Path | None = None) -> list[tuple[str, str]]:
    """(key path, problem) for media files the items name that the server would not show: not in
    ``media`` (None when the config has no media_directory), reached through a link, in ``private``
    (the output folder), or a pdf field's file that is no PDF (:func:`potato.display.media.media_file_problem`,
    the server's own rules, issue 42); at most ``limit``, so a wrong folder is a few lines, not one
    per item. ``fields``: (index, key, type) of each display field; ``items``: (id, fields) of each item."""
    out: list[tuple[str, str]] = []
    for item_id, data in items:
        for index, key, kind in fields:
            path = media_path(data.get(key)) if is_media(kind) else None
            if path is None:
                continue
            at = f"instance_display.fields[{index}]"
            if media is None:
                out.append((at, f"item {item_id!r} names the file {path!r}, but the config has no media_directory; "
                                "set media_directory: <the folder of the files>"))
            else:
                problem = media_file_problem(media, path, kind, private)
                if problem is not None:
                    out.append((at, f"item {item_id!r} names {path!r}, which {problem.why}"))
            if len(out) >= limit:
                return out
    return out


# -- the built-in types ---------------------------------------------------------------------------

def _image(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    out: dict[str, Any] = {"alt": str(options.get("alt_text") or label or "image"),
                           "zoomable": options.get("zoomable", True) is not False}
    if options.get("max_width"):
        out["max_width"] = _css_size(options["max_width"])
    return out


def _played(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    """A sound or a video with the browser's own player: its controls (unless ``controls: false``),
    ``autoplay`` (muted, as browsers allow it) and ``loop``; a video ``max_width`` wide at most."""
    out: dict[str, Any] = {"controls": options.get("controls", True) is not False, "autoplay": options.get("autoplay") is True,
                           "loop": options.get("loop") is True}
    if options.get("max_width"):
        out["max_width"] = _css_size(options["max_width"])
    return out


def _dialogue_text(value: Any, options: Mapping[str, Any]) -> str:
    """A dialogue's turns one per line, ``Speaker: text`` (turn numbers are drawn beside it, never in it)."""
    return "\n".join(f"{t['speaker']}: {t['text']}" if t["speaker"] else t["text"] for t in _turns(value, options))


def _spreadsheet(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    header, rows, more = table(value)
    return {"header": header, "rows": rows, "more": more}


def _document(value: Any, options: Mapping[str, Any], label: str, media_url: str) -> dict[str, Any]:
    source = value if isinstance(value, str) else _plain(value)
    fmt = str(options.get("format") or ("html" if source.lstrip().startswith("<") else "markdown"))
    return {"blocks": sanitise_html(source) if fmt == "html" else markdown(source)}


_BOXES = "drawing bounding boxes on it"
_LINKS = "anchors and links across a PDF's pages (annotation_mode: link)"

for _kind in (
        FieldType("text", lambda value, options, label, media_url: {"text": _plain(value)},
                  looks=frozenset({"collapsible", "max_height", "preserve_whitespace"}),
                  span_text=lambda value, options: _plain(value)),
        FieldType("image", _image, honoured=frozenset({"max_width", "zoomable", "alt_text"}),
                  looks=frozenset({"max_height", "object_fit"}), media=True),
        FieldType("audio", _played, honoured=frozenset({"controls", "autoplay", "loop"}), media=True),
        FieldType("video", _played, honoured=frozenset({"controls", "autoplay", "loop", "max_width"}),
                  looks=frozenset({"max_height"}), media=True),
        FieldType("dialogue", lambda value, options, label, media_url: {"turns": _turns(value, options),
                                                             "numbered": options.get("show_turn_numbers") is True},
                  honoured=frozenset({"speaker_extraction", "show_turn_numbers", "speaker_key", "text_key",
                                      "per_turn_ratings"}),
                  looks=frozenset({"alternating_shading", "indent_replies", "max_indent_depth", "show_reply_lines",
                                   "show_timestamps", "timestamp_format", "turn_meta_fields", "meta_key", "depth_key",
                                   "reply_to_key"}),
                  span_text=_dialogue_text),
        FieldType("code", lambda value, options, label, media_url: {"code": value if isinstance(value, str) else _plain(value),
                                                         "language": str(options.get("language") or "")},
                  honoured=frozenset({"language"}),
                  looks=frozenset({"show_line_numbers", "max_height", "max_width", "wrap_lines", "highlight_lines",
                                   "start_line", "theme", "copy_button"}),
                  # Spans mark the code as it is written; marked, it is drawn as plain text, unhighlighted.
                  span_text=lambda value, options: value if isinstance(value, str) else _plain(value)),
        FieldType("spreadsheet", _spreadsheet,
                  looks=frozenset({"show_headers", "max_height", "max_width", "striped", "hoverable", "sortable",
                                   "filterable", "selectable", "compact", "border_style", "header_style",
                                   "custom_class", "custom_css"}),
                  refused={"annotation_mode": "annotating a table's rows, cells or ranges"}),
        FieldType("document", _document, honoured=frozenset({"format"}),
                  looks=frozenset({"collapsible", "max_height", "show_outline", "preserve_structure", "style_theme"}),
                  refused={"annotation_mode": "spans or bounding boxes on a document field", "bbox_min_size": _BOXES,
                           "show_bbox_labels": _BOXES}),
        FieldType("pdf", lambda value, options, label, media_url: {},
                  looks=frozenset({"view_mode", "max_height", "max_width", "text_layer", "show_page_controls",
                                   "initial_page", "zoom", "thumbnail_sidebar"}),
                  refused={"annotation_mode": "spans, bounding boxes or links on a PDF",
                           "extracted_content": "text extracted from a PDF to mark spans on", "bbox_min_size": _BOXES,
                           "bbox_colors": _BOXES, "show_bbox_labels": _BOXES, "anchor_labels": _LINKS,
                           "link_types": _LINKS, "enable_text_anchors": _LINKS, "enable_region_anchors": _LINKS,
                           "anchor_schema": _LINKS, "link_schema": _LINKS,
                           "ocr": "reading scanned PDFs (OCR) to mark them"},
                  media=True)):
    register_field_type(_kind)


from potato.display import traces  # noqa: E402,F401  (registers the trace types, which use the above)
