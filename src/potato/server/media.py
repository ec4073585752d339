"""``/media/<name>``: the files of ``media_directory`` (an item's image or PDF), for signed-in
annotators only, each as the inert file it is (:mod:`potato.display.media`, issue 42).

Every answer here carries :data:`potato.server.headers.MEDIA_POLICY` (``sandbox``: a file opened in
the PDF frame or a tab of its own gets an origin of its own and runs nothing) and ``nosniff`` (a file
is only ever the type it is sent as, so no page of this server can load one as its script). A file
found through a link, in the output folder, or not there at all is a 404, and the log says why.
"""

from __future__ import annotations

import logging
import os
import unicodedata
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Flask, abort, current_app, render_template, request
from werkzeug.wsgi import wrap_file

from potato.config._page import codebook_page
from potato.display.fields import markdown, media_path, pdf_pages, sanitise_html
from potato.display.media import PDF_HEAD, MediaFileError, MediaMissing, NotAPdf, Served, is_pdf, open_media, served_as
from potato.server.auth import login_required
from potato.server.context import Project, current_project
from potato.server.headers import MEDIA_POLICY, framed_by, security_headers
from potato.server.security import framers

log = logging.getLogger(__name__)

bp = Blueprint("media", __name__)
CODEBOOK_MAX = 2 * 1024 * 1024
"""The most of a codebook file read (a codebook longer than this is a PDF's job)."""

MEDIA_URL = "/media/"
MAX_AGE_S = 3600
"""How long a browser keeps a media file (private: it is for signed-in annotators)."""
_REFUSED: set[str] = set()
"""Names already logged as refused: an item shown to many annotators logs one line."""
REFUSED_KEPT = 1024
"""...at most this many: names a client makes up must not grow the set without end."""
PAGES_KEPT = 256
"""PDFs whose page count is kept (by file and version), so showing an item does not read its PDF."""
NOT_A_PDF = -1
_PAGES: dict[tuple[str, str, int, int, int], int | None] = {}


def content_disposition(served: Served, name: str) -> str:
    """The ``Content-Disposition`` of the media file ``name`` (pure): inline where the browser may show
    it, attachment (saved, never shown) otherwise, with its file name in ASCII and, where it has other
    letters, in UTF-8 too (RFC 6266)."""
    base = PurePosixPath(name).name
    plain = unicodedata.normalize("NFKD", base).encode("ascii", "ignore").decode("ascii")
    plain = "".join(c for c in plain if c.isprintable() and c not in '"\\') or "file"
    value = f'{"inline" if served.inline else "attachment"}; filename="{plain}"'
    if plain != base:
        value += f"; filename*=UTF-8''{quote(base, safe='')}"
    return value


@bp.get(MEDIA_URL + "<path:name>")
@login_required
def media(name: str) -> Any:
    """A file of ``media_directory``, sent as :func:`potato.display.media.served_as` says, with ranges (the
    PDF viewer reads a large PDF in parts)."""
    project = current_project()
    folder = project.config.media_directory
    path = media_path(name)
    if folder is None or path is None:
        abort(404)
    try:
        file, info = open_media(folder, path, project.config.output_annotation_dir)
    except MediaFileError as exc:
        if path not in _REFUSED:
            if len(_REFUSED) >= REFUSED_KEPT:
                _REFUSED.clear()
            _REFUSED.add(path)
            log.warning("not serving /media/%s: %s", path, exc)
        abort(404)
    try:
        # pread leaves the file's offset at 0: gunicorn sends the file from its offset (sendfile), and
        # a buffered read and seek(0) would leave that at the end of what the buffer took.
        served = served_as(path, os.pread(file.fileno(), PDF_HEAD, 0))
    except OSError:
        file.close()
        raise
    response = current_app.response_class(wrap_file(request.environ, file), mimetype=served.mimetype,
                                          direct_passthrough=True)
    response.content_length = info.st_size
    response.last_modified = datetime.fromtimestamp(info.st_mtime, timezone.utc)
    response.set_etag(f"{info.st_ino:x}-{info.st_mtime_ns:x}-{info.st_size:x}")
    response.cache_control.private = True
    response.cache_control.max_age = MAX_AGE_S
    response.headers["Content-Disposition"] = content_disposition(served, path)
    others = framers(current_app)
    for header, value in security_headers(framed_by(MEDIA_POLICY, others), framed=bool(others)):
        response.headers[header] = value
    answer = response.make_conditional(request.environ, accept_ranges=True, complete_length=info.st_size)
    if request.method == "HEAD" or answer.status_code == 304:
        file.close()  # no body is sent, so nothing else would close it
    return answer


def pdf_field_pages(project: Project, path: str) -> int | None:
    """How many pages the PDF ``path`` of ``media_directory`` has (None: not countable from its page
    objects, the viewer counts them), read once per version of the file; raises the
    :class:`~potato.display.media.MediaFileError` that says why it cannot be shown (a link, not a PDF, ...)."""
    folder = project.config.media_directory
    if folder is None:
        raise MediaMissing(path, Path("(no media_directory)"))
    file, info = open_media(folder, path, project.config.output_annotation_dir)
    key = (str(folder), path, info.st_ino, info.st_mtime_ns, info.st_size)
    with file:
        if key not in _PAGES:
            data = file.read()
            if len(_PAGES) >= PAGES_KEPT:
                _PAGES.clear()
            _PAGES[key] = pdf_pages(data) if is_pdf(data[:PDF_HEAD]) else NOT_A_PDF
    pages = _PAGES[key]
    if pages == NOT_A_PDF:
        raise NotAPdf(path)
    return pages


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)


@bp.get("/codebook")
@login_required
def codebook() -> Any:
    """The study's codebook when it is a page of media_directory (``annotation_codebook_url:
    /media/<file>.html`` or ``.md``): read into harmless elements as a document field is, so a
    codebook that is a whole HTML page is read here and never runs in this server's origin."""
    project = current_project()
    name = codebook_page(project.config.page.codebook_url)
    path = media_path(name) if name else None
    folder = project.config.media_directory
    if folder is None or path is None:
        abort(404)
    try:
        file, _ = open_media(folder, path, project.config.output_annotation_dir)
    except MediaFileError as exc:
        log.warning("not showing the codebook /media/%s: %s", path, exc)
        abort(404)
    with file:
        source = file.read(CODEBOOK_MAX).decode("utf-8", errors="replace")
    blocks = markdown(source) if path.lower().endswith((".md", ".markdown")) else sanitise_html(source)
    return render_template("codebook.html", title=project.config.annotation_task_name, blocks=blocks,
                           label_keys=())
