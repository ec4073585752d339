"""Who may do what: annotators by name in the session, admins by key (C3, R21)."""

from __future__ import annotations

import functools
import hmac
import ipaddress
from typing import Any, Callable, TypeVar, cast

from flask import abort, jsonify, redirect, request, session, url_for

from potato.server.project import current_project

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


def is_admin() -> bool:
    config = current_project().config
    if key_matches(request.headers.get("X-API-Key"), config.admin_api_key):
        return True
    if session.get("admin") is True:
        return True
    # R21: a debug server trusts loopback; `potato validate` warns when that meets ssh training.
    return config.debug and _is_loopback(request.remote_addr)


def admin_required(view: F) -> F:
    """401 for API clients; a redirect to the key form for people in a browser."""

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if is_admin():
            return view(*args, **kwargs)
        wants_html = "text/html" in request.headers.get("Accept", "") and "/api/" not in request.path
        if wants_html:
            return redirect(url_for("admin.login", next=request.path))
        return jsonify(error="Admin access needs the X-API-Key header with the project's admin_api_key."), 401

    return cast(F, wrapped)


def current_user() -> str | None:
    user = session.get("user")
    return user if isinstance(user, str) else None


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
    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if current_user() is None:
            if request.path.startswith("/api/"):
                return jsonify(error="Log in first: POST /login with your name."), 401
            return redirect(url_for("annotate.index"))
        return view(*args, **kwargs)

    return cast(F, wrapped)
