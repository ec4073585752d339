"""What the server does for every request, whichever blueprint serves it: headers that keep its pages
out of other sites' frames and scripts, a same-origin check on writes a browser makes with the
session cookie, throttles on failed admin keys and on logins per client address, sign-ins that send
the browser on only to this server's own pages, a 408 for a body that arrives too slowly, and admin
sessions the server can end (docs/security.md says what it promises).

The cookie-authenticated paths are the browser's. A request skips the origin check only when what
authorises it is not a cookie: an ``X-API-Key`` on a route that takes the key, or the agent
protocol's bearer tokens. Merely carrying some header is not enough: a browser adds
``Authorization`` by itself behind a proxy or site that uses Basic, Digest or Negotiate, and the
cookie would then authorise a request another site made (issue 33).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

from flask import Flask, Response, current_app, has_request_context, jsonify, request, session
from flask.sessions import SecureCookieSessionInterface
from werkzeug.exceptions import ClientDisconnected
from werkzeug.middleware.proxy_fix import ProxyFix

from potato.db import Database
from potato.server.headers import page_policy, script_source, security_headers
from potato.project import Project

log = logging.getLogger(__name__)

UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
_REFUSED: set[tuple[str, str]] = set()
"""(origin, host) pairs already logged; a burst of refused requests logs one line."""
SESSION_DAYS = 30
"""How long a sign-in lasts, an admin's or an annotator's."""


@dataclass(frozen=True)
class Limit:
    """At most ``count`` events of one kind per client address within ``window_s``."""

    kind: str
    count: int
    window_s: float


ADMIN_KEY_FAILURES = Limit("admin-key", 10, 300.0)
"""Wrong admin keys (the login form or ``X-API-Key``): 10 per address per 5 minutes, then 429."""
PASSWORD_FAILURES = Limit("password", 20, 300.0)
"""Wrong annotator passwords per address per 5 minutes (a class mistyping is far below it)."""
LOGINS = Limit("login", 120, 60.0)
"""Annotator sign-ins per address per minute: a classroom behind one NAT signs in at once, a script
making thousands of users does not get far."""


@dataclass(frozen=True)
class Attempt:
    """What :meth:`Throttle.take` made of one attempt."""

    wait: int | None = None
    """Seconds the address must wait: it had used up the limit, and the attempt was not tried."""
    counted: bool = False
    """The attempt was recorded and counts against the limit."""


def retry_seconds(oldest_at: float, window_s: float, now: float) -> int:
    """Seconds until the oldest event still in the window leaves it (pure; at least 1)."""
    return max(1, math.ceil(oldest_at + window_s - now))


class Throttle:
    """Counts events per (kind, address) in the database, so every gunicorn worker sees them all.

    Counting and recording are one write transaction (:meth:`take`): two threads, or two worker
    processes, can never both see the last free place. Reading the count and recording the event
    in two steps let 200 parallel guesses through as 40 tried keys instead of 10 (issue 20).
    """

    def __init__(self, db: Database, clock: Any = time.time) -> None:
        self.db = db
        self.clock = clock

    def wait(self, limit: Limit, addr: str) -> int | None:
        """Seconds until ``addr`` may try again; None when it is under the limit. A look only: what
        counts goes through :meth:`take`."""
        now = self.clock()
        rows = self._recent(self.db.conn, limit, addr, now)
        return retry_seconds(rows[-1][0], limit.window_s, now) if len(rows) >= limit.count else None

    def take(self, limit: Limit, addr: str, counts: Callable[[], bool] | None = None) -> Attempt:
        """One atomic step: when ``addr`` has used up ``limit``, refuse (``wait``) without calling
        ``counts``; otherwise record the attempt, unless ``counts`` says it does not count (a right
        admin key, a sign-in with an unusable name). ``counts`` runs inside the database's write
        lock, so it must be quick: a key comparison, not a password hash."""
        now = self.clock()
        with self.db.transaction() as conn:
            rows = self._recent(conn, limit, addr, now)
            if len(rows) >= limit.count:
                return Attempt(wait=retry_seconds(rows[-1][0], limit.window_s, now))
            if counts is not None and not counts():
                return Attempt()
            conn.execute("INSERT INTO throttle (kind, addr, at) VALUES (?, ?, ?)", (limit.kind, addr, now))
            conn.execute("DELETE FROM throttle WHERE kind = ? AND at < ?", (limit.kind, now - limit.window_s))
        return Attempt(counted=True)

    def attempt(self, limit: Limit, addr: str, failed: bool) -> Attempt:
        """One try of something only failures count against (an admin key): a success only looks
        (a plain read, no write lock: every admin API call passes here), a failure is counted by
        :meth:`take`, atomically. A locked-out address gets ``wait`` either way."""
        if not failed:
            return Attempt(wait=self.wait(limit, addr))
        return self.take(limit, addr)

    @staticmethod
    def _recent(conn: sqlite3.Connection, limit: Limit, addr: str, now: float) -> list[Any]:
        """The newest events of ``addr`` within the window, at most as many as the limit."""
        return conn.execute(
            "SELECT at FROM throttle WHERE kind = ? AND addr = ? AND at > ? ORDER BY at DESC LIMIT ?",
            (limit.kind, addr, now - limit.window_s, limit.count)).fetchall()


class SlowBody(TimeoutError):
    """A request's body did not arrive in time (raised by the gunicorn worker's reads; the app
    answers 408). A TimeoutError, so gunicorn's own reads treat it as the timeout it is."""


def body_too_slow(exc: Exception) -> Any:
    """408 for a body that stopped arriving or arrived too slowly; werkzeug reports a failed read
    as ClientDisconnected (400), with the SlowBody as its context."""
    if not isinstance(exc, SlowBody) and not isinstance(exc.__context__, SlowBody):
        return exc
    response = jsonify(error=f"The request's body arrived too slowly ({exc.__context__ or exc}); nothing "
                             "was stored. Send it again.")
    response.status_code = 408  # the worker closes the connection
    return response


def too_many(seconds: int, what: str) -> Response:
    response = jsonify(error=f"Too many {what} from your address; try again in {seconds} seconds.")
    response.status_code = 429
    response.headers["Retry-After"] = str(seconds)
    return response


def client_addr() -> str:
    """The client's address: the socket's, or the proxy's X-Forwarded-For with ``trust_proxy``."""
    return request.remote_addr or "unknown"


# -- admin sessions ----------------------------------------------------------------------------------

def key_fingerprint(secret_key: bytes, admin_key: str) -> str:
    """Which admin key a session was opened with, without storing the key: a new key ends old sessions."""
    return hmac.new(secret_key, admin_key.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


class SessionRecords:
    """Sessions as records on the server, so that signing out ends every copy of the cookie: the
    cookie holds only a random id, and the session is whatever row that id names. ``owner`` is
    what the session was opened for (an admin key's fingerprint, an annotator's name)."""

    def __init__(self, db: Database, table: str, owner_column: str, clock: Any = time.time) -> None:
        self.db = db
        self.table = table
        self.owner_column = owner_column
        self.clock = clock

    def open(self, owner: str) -> str:
        sid = secrets.token_urlsafe(24)
        now = self.clock()
        self.db.write([(f"INSERT INTO {self.table} (id, {self.owner_column}, created_at) VALUES (?, ?, ?)",
                        (sid, owner, now)),
                       (f"DELETE FROM {self.table} WHERE created_at < ?", (now - SESSION_DAYS * 86400,))])
        return sid

    def owner_of(self, sid: object) -> str | None:
        """Who the session ``sid`` is for, or None when there is no such session (never opened,
        ended, or older than SESSION_DAYS)."""
        if not isinstance(sid, str) or not sid:
            return None
        row = self.db.conn.execute(f"SELECT {self.owner_column}, created_at FROM {self.table} WHERE id = ?",
                                   (sid,)).fetchone()
        if row is None or self.clock() - row[1] >= SESSION_DAYS * 86400:
            return None
        return str(row[0])

    def close(self, sid: object) -> None:
        if isinstance(sid, str):
            self.db.write([(f"DELETE FROM {self.table} WHERE id = ?", (sid,))])


class AdminSessions(SessionRecords):
    """Admin sessions, each tied to the key it was opened with: a new key ends the old sessions."""

    def __init__(self, db: Database, secret_key: bytes, clock: Any = time.time) -> None:
        super().__init__(db, "admin_sessions", "key_fingerprint", clock)
        self.secret_key = secret_key

    def open_with(self, admin_key: str) -> str:
        return self.open(key_fingerprint(self.secret_key, admin_key))

    def valid(self, sid: object, admin_key: str | None) -> bool:
        owner = self.owner_of(sid)
        return bool(owner and admin_key) and hmac.compare_digest(
            owner or "", key_fingerprint(self.secret_key, admin_key or ""))


class AnnotatorSessions(SessionRecords):
    """Annotators' sessions: signing out ends every copy of the cookie, as an admin's sign-out does."""

    def __init__(self, db: Database, clock: Any = time.time) -> None:
        super().__init__(db, "annotator_sessions", "user", clock)


def admin_sessions(app: Flask) -> AdminSessions:
    sessions: AdminSessions = app.extensions["potato.admin_sessions"]
    return sessions


def annotator_sessions(app: Flask) -> AnnotatorSessions:
    sessions: AnnotatorSessions = app.extensions["potato.annotator_sessions"]
    return sessions


def throttle(app: Flask) -> Throttle:
    found: Throttle = app.extensions["potato.throttle"]
    return found


# -- the request checks -----------------------------------------------------------------------------

def safe_next(target: object, fallback: str) -> str:
    """Where a sign-in may send the browser next (pure): ``target`` when it is a path on this server,
    else ``fallback``. Browsers drop tabs and line breaks from a URL and read ``\\`` as ``/``, so
    ``/\\t/evil.example`` and ``/\\evil.example`` are ``//evil.example``, another site; a line break
    in a ``Location`` header cannot even be sent. So: printable ASCII only (no space, no control
    character, no backslash), one leading ``/`` and not two, no scheme and no host."""
    if not isinstance(target, str) or not target.startswith("/") or target.startswith("//"):
        return fallback
    if any(not "!" <= char <= "~" or char == "\\" for char in target):
        return fallback
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else fallback


def same_origin() -> bool:
    """A browser says where a write comes from (Origin, else Referer); it must be this server's own
    host and port. A request naming neither is not a browser's form or script, so it passes."""
    origin = request.headers.get("Origin") or request.headers.get("Referer")
    if not origin:
        return True
    if origin == "null":  # sandboxed frames, file: pages: never this server's own pages
        return False
    return urlsplit(origin).netloc.lower() == request.host.lower()


KEY_AUTHORISED = "potato_key_authorised"
"""Attribute set on a view that is authorised by the ``X-API-Key`` header whenever one is sent
(``auth.admin_required``), never by the cookie beside it."""
COOKIELESS_BLUEPRINTS = frozenset({"agent_api"})
"""Blueprints whose every route is authorised by a bearer token and never reads the session."""


def authorised_without_cookie() -> bool:
    """Whether what authorises this request is not the browser's cookie: the agent protocol's routes
    (bearer tokens only), or a non-empty ``X-API-Key`` sent to a route that takes it. A browser
    cannot add either on its own: a custom header from another site needs a CORS preflight this
    server never grants."""
    if request.blueprint in COOKIELESS_BLUEPRINTS:
        return True
    view = current_app.view_functions.get(request.endpoint or "")
    return bool((request.headers.get("X-API-Key") or "").strip()) and getattr(view, KEY_AUTHORISED, False)


def check_origin() -> Response | None:
    if request.method not in UNSAFE_METHODS:
        return None
    if authorised_without_cookie():
        return None
    if same_origin():
        return None
    origin = request.headers.get("Origin") or request.headers.get("Referer") or ""
    if (origin, request.host) not in _REFUSED:  # once per pair: an attack or a proxy that rewrites Host
        _REFUSED.add((origin, request.host))
        log.warning("refused a %s to %s from %s: its origin is not this server's host %s. Behind a reverse proxy, "
                    "pass the Host header unchanged (nginx: proxy_set_header Host $host).",
                    request.method, request.path, urlsplit(origin).netloc or origin, request.host)
    response = jsonify(error="Refused: this request came from another site. Use the page on this server, or "
                             "send the X-API-Key header from a script.")
    response.status_code = 403
    return response


def framers(app: Flask) -> tuple[str, ...]:
    """Other sites that may show these pages in a frame (MTurk, for a study it shows as a HIT)."""
    return tuple(app.extensions.get("potato.framed_by", ()))


def policy(app: Flask, form_action: tuple[str, ...] = ()) -> str:
    """The pages' Content-Security-Policy (:func:`potato.server.headers.page_policy`), with the sites a
    page's form may post to besides this one. Scripts come from this server's static folder only, never
    from elsewhere on it (the media folder), issue 42."""
    scripts = script_source(request.host, request.script_root + (app.static_url_path or "/static")) \
        if has_request_context() else "'self'"
    return page_policy(scripts, form_action, framers(app), bool(app.extensions.get("potato.remote_images")),
                       bool(app.extensions.get("potato.remote_media")))


def add_headers(response: Response) -> Response:
    """Every answer's security headers (:func:`potato.server.headers.security_headers`); a view that
    set its own policy (a media file's, a crowdsourcing page's) keeps it."""
    headers = response.headers
    for name, value in security_headers(policy(current_app), framed=bool(framers(current_app))):
        headers.setdefault(name, value)
    return response


class SessionInterface(SecureCookieSessionInterface):
    """The cookie is ``Secure`` whenever the request came over https (directly, or through a proxy
    the config trusts), so a cookie set over https is never sent back over plain http."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(app.config.get("SESSION_COOKIE_SECURE")) or request.is_secure

    def get_cookie_samesite(self, app: Flask) -> str | None:
        """In another site's frame (MTurk's) a Lax cookie is never sent back, so the participant could
        not stay signed in; there it is SameSite=None, which browsers take only with Secure (https)."""
        if framers(app) and self.get_cookie_secure(app):
            return "None"
        return super().get_cookie_samesite(app)

    def get_cookie_partitioned(self, app: Flask) -> bool:
        """A framed study's cookie is kept apart for each site that frames it (CHIPS), which browsers
        that block third-party cookies still send."""
        return bool(framers(app) and self.get_cookie_secure(app))


def init_app(app: Flask, project: Project) -> None:
    config = project.config
    digest = hashlib.sha256(str(config.output_annotation_dir).encode()).hexdigest()[:10]
    app.config["SESSION_COOKIE_NAME"] = f"potato-{digest}"  # two projects on one host keep their sessions
    app.session_interface = SessionInterface()
    if config.trust_proxy:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1, x_host=1)  # type: ignore[method-assign]
    secret = app.secret_key if isinstance(app.secret_key, bytes) else str(app.secret_key).encode()
    app.extensions["potato.admin_sessions"] = AdminSessions(project.db, secret)
    app.extensions["potato.annotator_sessions"] = AnnotatorSessions(project.db)
    app.extensions["potato.throttle"] = Throttle(project.db)
    app.register_error_handler(SlowBody, body_too_slow)
    app.register_error_handler(ClientDisconnected, body_too_slow)
    if any(f.type == "image" for f in config.page.display_fields):
        app.extensions["potato.remote_images"] = True
    if any(f.type in ("audio", "video") for f in config.page.display_fields):
        app.extensions["potato.remote_media"] = True
    app.before_request(check_origin)
    app.after_request(add_headers)


def end_admin_session(app: Flask) -> None:
    admin_sessions(app).close(session.pop("admin_session", None))
    session.pop("admin", None)


def start_annotator_session(app: Flask, user: str) -> None:
    """Sign ``user`` in in this browser; an admin signed in in the same browser stays signed in."""
    end_annotator_session(app)
    session["user"] = user
    session["user_session"] = annotator_sessions(app).open(user)
    session.permanent = True


def end_annotator_session(app: Flask) -> None:
    """Sign the annotator out: the record goes, so a copy of the cookie no longer works either."""
    annotator_sessions(app).close(session.pop("user_session", None))
    session.pop("user", None)
