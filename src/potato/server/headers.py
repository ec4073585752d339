"""The security headers every answer of the server carries, in one place (pure).

Three senders use them: the app (``security.add_headers``: its pages and JSON), the media files
(``annotate.media``: inert files, :data:`MEDIA_POLICY`) and the worker's event loop and gunicorn's
parser (``request_framing.answer``: the 400, 408, 413, 414 and 431 sent before the app sees a
request). Those last answers carried none of them (issue 42); building each sender's headers from
:func:`security_headers` keeps the three from drifting apart.
"""

from __future__ import annotations

import re
from typing import Sequence
from urllib.parse import quote

NO_SNIFF = ("X-Content-Type-Options", "nosniff")
"""A browser takes each answer as the type it is sent as: a file sent as a PDF or an image never runs
as a script or a page, whatever its bytes are."""
REFERRER = ("Referrer-Policy", "same-origin")
FRAME_OPTIONS = ("X-Frame-Options", "SAMEORIGIN")
"""For browsers without ``frame-ancestors``; left out when other sites may frame the pages (MTurk),
as it cannot name them."""
PAGE_POLICY = ("default-src 'self'; script-src {scripts}; style-src 'self'; img-src 'self' data:; "
               "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")
"""The pages load their scripts from /static only (``{scripts}``, :func:`script_source`) and their
styles from this server; nothing inline."""
ANSWER_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
"""An answer that is no page (the event loop's errors): nothing in it may load or run anything."""
MEDIA_POLICY = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox; frame-ancestors 'self'"
"""A media file opened in a frame or a tab of its own (the PDF viewer, "Open the PDF", an image):
``sandbox`` gives it an origin of its own and no script, so even a file that is a page cannot act as
the signed-in annotator. Chromium's PDF viewer works under it; a ``sandbox`` attribute on the frame
instead would make Chromium refuse to show the PDF at all."""
_HOST = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]{1,5})?")
"""A Host header a CSP host-source can name (CSP has no syntax for IPv6 literals)."""


def script_source(host: str, static_path: str) -> str:
    """The ``script-src`` of the pages: the static folder of this server (``host/static/``), so a file
    from anywhere else on this origin (the media folder) never runs as a page's script; ``'self'`` where
    the Host cannot be written in a CSP (an IPv6 literal: there the media files' own type and
    ``nosniff`` keep them from running)."""
    if not _HOST.fullmatch(host) or not static_path.startswith("/"):
        return "'self'"
    return f"{host.lower()}{quote(static_path.rstrip('/'), safe='/-._~')}/"


def framed_by(policy: str, framers: Sequence[str]) -> str:
    """``policy`` letting ``framers`` (other sites: MTurk for a study it shows as a HIT) frame the answer too."""
    if not framers:
        return policy
    return policy.replace("frame-ancestors 'self'", "frame-ancestors 'self' " + " ".join(framers))


def page_policy(scripts: str = "'self'", form_action: Sequence[str] = (), framers: Sequence[str] = (),
                remote_images: bool = False, remote_media: bool = False) -> str:
    """The pages' Content-Security-Policy: scripts from ``scripts``, forms posting to this server and
    ``form_action``, framed by this server and ``framers``, images from https too with
    ``remote_images`` (items that are images on the web), sound and video with ``remote_media``."""
    csp = PAGE_POLICY.format(scripts=scripts)
    if form_action:
        csp = csp.replace("form-action 'self'", "form-action 'self' " + " ".join(form_action))
    if remote_images:
        csp = csp.replace("img-src 'self' data:", "img-src 'self' data: https:")
    if remote_media:
        csp = csp.replace("img-src", "media-src 'self' https:; img-src")
    return framed_by(csp, framers)


def security_headers(policy: str, framed: bool = False) -> list[tuple[str, str]]:
    """The headers an answer with ``policy`` carries; ``framed``: other sites may frame it (then no
    X-Frame-Options, which cannot name them; ``policy``'s frame-ancestors does)."""
    out = [("Content-Security-Policy", policy)]
    if not framed:
        out.append(FRAME_OPTIONS)
    return [*out, NO_SNIFF, REFERRER]
