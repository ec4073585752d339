"""Who may do what: annotators by name in the session, admins by key."""

from __future__ import annotations

import functools
import hmac
import ipaddress
from typing import Any, Callable, TypeVar, cast

from flask import abort, current_app, g, jsonify, redirect, request, session, url_for

from potato.server.context import current_project
from potato.server.security import (ADMIN_KEY_FAILURES, KEY_AUTHORISED, admin_sessions, annotator_sessions,
                                     client_addr, end_annotator_session, throttle,
                                     too_many)

F = TypeVar("F", bound=Callable[..., Any])

USER_NAME_MAX = 64


def key_matches(given: str | None, expected: str | None) -> bool:
    """Constant-time comparison; no key configured means no key matches."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _is_loopback(addr: str | None) -> bool:
    try:
        return addr is not None and ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False


def admin_session_valid() -> bool:
    """The browser's admin session: one the server opened with the current key and has not ended."""
    return admin_sessions(current_app).valid(session.get("admin_session"), current_project().config.admin_api_key)


def admin_required(view: F) -> F:
    """The ``X-API-Key`` header (wrong keys are throttled per address: 429), or an admin session; 401
    for API clients otherwise, a redirect to the key form for people in a browser."""

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        config = current_project().config
        # An empty header is no key at all (a client that sends the header with nothing in it, a
        # template left unfilled): it is not counted as a wrong guess, and the session decides.
        given = (request.headers.get("X-API-Key") or "").strip() or None
        if given is not None:
            # A locked-out address gets 429 whatever it sends; a wrong key is counted in the same
            # transaction that found a free place for it.
            attempt = throttle(current_app).attempt(ADMIN_KEY_FAILURES, client_addr(),
                                                    failed=not key_matches(given, config.admin_api_key))
            if attempt.wait is not None:
                return too_many(attempt.wait, "wrong admin keys")
            if not attempt.counted:
                return view(*args, **kwargs)
            return jsonify(error="The X-API-Key header does not hold the project's admin_api_key."), 401
        # a debug server trusts loopback; `potato validate` warns when that meets ssh training.
        if admin_session_valid() or (config.debug and _is_loopback(request.remote_addr)):
            return view(*args, **kwargs)
        wants_html = "text/html" in request.headers.get("Accept", "") and "/api/" not in request.path
        if wants_html:
            # the query too: signed in, the browser comes back to the page as it was asked for
            return redirect(url_for("admin.login", next=request.full_path.rstrip("?")))
        return jsonify(error="Admin access needs the X-API-Key header with the project's admin_api_key."), 401

    setattr(wrapped, KEY_AUTHORISED, True)  # security.check_origin: a key sent here is what authorises
    return cast(F, wrapped)


def current_user() -> str | None:
    """The signed-in annotator: the name in the cookie, while the session record the cookie names is
    still there for that name (signing out removes it, ending every copy of the cookie). Looked up
    once per request."""
    if "potato_user" in g:
        found: str | None = g.potato_user
        return found
    user = session.get("user")
    found = None
    if isinstance(user, str):
        owner = annotator_sessions(current_app).owner_of(session.get("user_session"))
        found = user if owner is not None and hmac.compare_digest(owner.encode("utf-8"), user.encode("utf-8")) else None
    g.potato_user = found
    return found


def session_user() -> str:
    """The logged-in annotator; only called behind ``login_required``."""
    user = current_user()
    if user is None:
        abort(401)
    return user


def clean_user_name(raw: str) -> str | None:
    """A login name as stored, or None when it is unusable (empty, too long, control characters)."""
    name = " ".join(raw.split())
    if not name or len(name) > USER_NAME_MAX or not name.isprintable():
        return None
    return name


def login_required(view: F) -> F:
    """A signed-in annotator who may still sign in: taking a name off ``user_config.users`` ends
    that annotator's session at their next request."""

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        user = current_user()
        if user is not None and not current_project().config.access.may_sign_in(user):
            end_annotator_session(current_app)
            g.potato_user = user = None
        if user is None:
            if request.path.startswith("/api/"):
                return jsonify(error="Log in first: POST /login with your name."), 401
            return redirect(url_for("annotate.index"))
        return view(*args, **kwargs)

    return cast(F, wrapped)
