"""What the server does for every request, whichever blueprint serves it: headers that keep its pages
out of other sites' frames and scripts, a same-origin check on writes a browser makes with the
session cookie, throttles on failed admin keys and on logins per client address, and admin sessions
the server can end (docs/security.md says what it promises).

The cookie-authenticated paths are the browser's; the ``X-API-Key`` header and the agents' bearer
tokens are not sent by a browser on its own, so requests carrying them skip the origin check.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, jsonify, request, session
from flask.sessions import SecureCookieSessionInterface
from werkzeug.middleware.proxy_fix import ProxyFix

from potato.db import Database
from potato.project import Project

log = logging.getLogger(__name__)

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'self'")
"""The pages load their scripts and styles from /static only; nothing inline."""
UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
_REFUSED: set[tuple[str, str]] = set()
"""(origin, host) pairs already logged; a burst of refused requests logs one line."""
ADMIN_SESSION_DAYS = 30


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


class Throttle:
    """Counts events per (kind, address) in the database, so every gunicorn worker sees them all."""

    def __init__(self, db: Database, clock: Any = time.time) -> None:
        self.db = db
        self.clock = clock

    def retry_after(self, limit: Limit, addr: str) -> int | None:
        """Seconds until ``addr`` may try again; None when it is under the limit."""
        now = self.clock()
        rows = self.db.conn.execute(
            "SELECT at FROM throttle WHERE kind = ? AND addr = ? AND at > ? ORDER BY at DESC LIMIT ?",
            (limit.kind, addr, now - limit.window_s, limit.count)).fetchall()
        if len(rows) < limit.count:
            return None
        return max(1, math.ceil(rows[-1][0] + limit.window_s - now))

    def note(self, limit: Limit, addr: str) -> None:
        now = self.clock()
        self.db.write([("INSERT INTO throttle (kind, addr, at) VALUES (?, ?, ?)", (limit.kind, addr, now)),
                       ("DELETE FROM throttle WHERE kind = ? AND at < ?", (limit.kind, now - limit.window_s))])


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


class AdminSessions:
    def __init__(self, db: Database, secret_key: bytes, clock: Any = time.time) -> None:
        self.db = db
        self.secret_key = secret_key
        self.clock = clock

    def open(self, admin_key: str) -> str:
        sid = secrets.token_urlsafe(24)
        self.db.write([("INSERT INTO admin_sessions (id, key_fingerprint, created_at) VALUES (?, ?, ?)",
                        (sid, key_fingerprint(self.secret_key, admin_key), self.clock())),
                       ("DELETE FROM admin_sessions WHERE created_at < ?",
                        (self.clock() - ADMIN_SESSION_DAYS * 86400,))])
        return sid

    def valid(self, sid: object, admin_key: str | None) -> bool:
        if not isinstance(sid, str) or not admin_key:
            return False
        row = self.db.conn.execute("SELECT key_fingerprint, created_at FROM admin_sessions WHERE id = ?",
                                   (sid,)).fetchone()
        return bool(row) and hmac.compare_digest(row[0], key_fingerprint(self.secret_key, admin_key)) \
            and self.clock() - row[1] < ADMIN_SESSION_DAYS * 86400

    def close(self, sid: object) -> None:
        if isinstance(sid, str):
            self.db.write([("DELETE FROM admin_sessions WHERE id = ?", (sid,))])


def admin_sessions(app: Flask) -> AdminSessions:
    sessions: AdminSessions = app.extensions["potato.admin_sessions"]
    return sessions


def throttle(app: Flask) -> Throttle:
    found: Throttle = app.extensions["potato.throttle"]
    return found


# -- the request checks -----------------------------------------------------------------------------

def same_origin() -> bool:
    """A browser says where a write comes from (Origin, else Referer); it must be this server's own
    host and port. A request naming neither is not a browser's form or script, so it passes."""
    origin = request.headers.get("Origin") or request.headers.get("Referer")
    if not origin:
        return True
    if origin == "null":  # sandboxed frames, file: pages: never this server's own pages
        return False
    return urlsplit(origin).netloc.lower() == request.host.lower()


def check_origin() -> Response | None:
    if request.method not in UNSAFE_METHODS:
        return None
    if request.headers.get("X-API-Key") or request.headers.get("Authorization"):
        return None  # not something a browser adds by itself
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


def add_headers(response: Response) -> Response:
    headers = response.headers
    headers.setdefault("Content-Security-Policy", CSP)
    headers.setdefault("X-Frame-Options", "SAMEORIGIN")
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "same-origin")
    return response


class SessionInterface(SecureCookieSessionInterface):
    """The cookie is ``Secure`` whenever the request came over https (directly, or through a proxy
    the config trusts), so a cookie set over https is never sent back over plain http."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(app.config.get("SESSION_COOKIE_SECURE")) or request.is_secure


def init_app(app: Flask, project: Project) -> None:
    config = project.config
    digest = hashlib.sha256(str(config.output_annotation_dir).encode()).hexdigest()[:10]
    app.config["SESSION_COOKIE_NAME"] = f"potato-{digest}"  # two projects on one host keep their sessions
    app.session_interface = SessionInterface()
    if config.trust_proxy:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1, x_host=1)  # type: ignore[method-assign]
    secret = app.secret_key if isinstance(app.secret_key, bytes) else str(app.secret_key).encode()
    app.extensions["potato.admin_sessions"] = AdminSessions(project.db, secret)
    app.extensions["potato.throttle"] = Throttle(project.db)
    app.before_request(check_origin)
    app.after_request(add_headers)


def end_admin_session(app: Flask) -> None:
    admin_sessions(app).close(session.pop("admin_session", None))
    session.pop("admin", None)
