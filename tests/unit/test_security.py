"""What the server promises in docs/security.md, each the way the problem was found: admin sessions
that end, writes from other sites refused, headers on every page, guessing throttled per address."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from potato.config import load_config
from potato.server import close_app, create_app
from tests.conftest import ADMIN_KEY

APPS: list[Any] = []


@pytest.fixture
def make_app(make_project: Callable[..., Path]) -> Iterator[Callable[..., Any]]:
    def _make(**overrides: Any) -> Any:
        application = create_app(load_config(make_project(**overrides)), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
        APPS.append(application)
        return application

    yield _make
    while APPS:
        close_app(APPS.pop())


def admin_login(client: Any, key: str = ADMIN_KEY, **headers: str) -> Any:
    return client.post("/admin/login", data={"key": key}, headers=headers)


def test_logout_ends_the_admin_session_for_every_copy_of_the_cookie(make_app: Callable[..., Any]) -> None:
    app = make_app()
    browser = app.test_client()
    assert admin_login(browser).status_code == 302
    stolen = app.test_client()
    cookie = browser.get_cookie(app.config["SESSION_COOKIE_NAME"])
    stolen.set_cookie(cookie.key, cookie.value)
    assert stolen.get("/admin/api/progress").status_code == 200
    browser.post("/admin/logout")
    assert stolen.get("/admin/api/progress").status_code == 401  # the copy ended with the session


def test_a_new_admin_key_ends_the_sessions_opened_with_the_old_one(
        make_app: Callable[..., Any], make_project: Callable[..., Path]) -> None:
    app = make_app()
    browser = app.test_client()
    admin_login(browser)
    cookie = browser.get_cookie(app.config["SESSION_COOKIE_NAME"])
    close_app(APPS.pop())
    rekeyed = make_app(admin_api_key="a-brand-new-admin-key-42")  # same project folder, same secret_key
    later = rekeyed.test_client()
    later.set_cookie(cookie.key, cookie.value)
    assert later.get("/admin/api/progress").status_code == 401


def test_writes_from_another_site_are_refused_and_the_page_s_own_pass(make_app: Callable[..., Any]) -> None:
    app = make_app()
    browser = app.test_client()
    admin_login(browser)
    evil = {"Origin": "http://localhost:9999"}  # a same-site page on another port
    assert browser.post("/admin/logout", headers=evil).status_code == 403
    assert browser.get("/admin/api/progress").status_code == 200  # still signed in
    refused = app.test_client().post("/login", data={"name": "victim"}, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403 and "another site" in refused.get_json()["error"]
    assert app.test_client().post("/login", data={"name": "ann"}, headers={"Origin": "null"}).status_code == 403
    own = app.test_client().post("/login", data={"name": "ann"}, headers={"Origin": "http://localhost"})
    assert own.status_code == 302
    by_referer = app.test_client().post("/login", data={"name": "ann"},
                                        headers={"Referer": "http://localhost/?next=x"})
    assert by_referer.status_code == 302
    # A script with the key is not a browser's cross-site form.
    api = app.test_client().post("/admin/api/labels", json={"user": "g", "labels": []},
                                 headers={"X-API-Key": ADMIN_KEY, "Origin": "https://elsewhere.example"})
    assert api.status_code == 200


def test_every_page_says_it_may_not_be_framed_or_sniffed_and_loads_nothing_inline(
        make_app: Callable[..., Any]) -> None:
    app = make_app()
    for path in ("/", "/admin/login", "/healthz"):
        response = app.test_client().get(path)
        assert response.headers["X-Frame-Options"] == "SAMEORIGIN"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        csp = response.headers["Content-Security-Policy"]
        assert "frame-ancestors 'self'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    templates = Path(__file__).resolve().parents[2] / "src" / "potato" / "server" / "templates"
    for page in templates.glob("*.html"):  # what the CSP allows: no inline script, no style attribute
        text = page.read_text()
        assert "<script>" not in text and " style=" not in text and " onclick=" not in text, page.name


def test_the_cookie_is_per_project_and_secure_over_https(
        make_app: Callable[..., Any], make_project: Callable[..., Path], tmp_path: Path) -> None:
    app = make_app()
    plain = app.test_client().post("/login", data={"name": "ann"})
    assert "Secure" not in plain.headers["Set-Cookie"]
    https = app.test_client().post("/login", data={"name": "ann"}, base_url="https://localhost")
    assert "; Secure" in https.headers["Set-Cookie"]
    forwarded = {"X-Forwarded-Proto": "https"}
    assert "Secure" not in app.test_client().post("/login", data={"name": "a"}, headers=forwarded).headers["Set-Cookie"]
    name = app.config["SESSION_COOKIE_NAME"]
    close_app(APPS.pop())
    behind = make_app(trust_proxy=True)
    assert "; Secure" in behind.test_client().post("/login", data={"name": "a"}, headers=forwarded).headers["Set-Cookie"]
    other = tmp_path / "other" / "config.yaml"
    other.parent.mkdir()
    raw = yaml.safe_load((tmp_path / "project" / "config.yaml").read_text())
    raw.update(task_dir=str(tmp_path / "project"), output_annotation_dir=str(tmp_path / "other" / "out"))
    other.write_text(yaml.safe_dump(raw))
    second = create_app(load_config(other), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    APPS.append(second)
    assert second.config["SESSION_COOKIE_NAME"] != name  # two projects on one host: two cookies


def test_admin_key_guessing_is_throttled_per_address_with_a_retry_time(make_app: Callable[..., Any]) -> None:
    app = make_app()
    client = app.test_client()
    for _ in range(10):
        assert client.get("/admin/api/progress", headers={"X-API-Key": "guess"}).status_code == 401
    blocked = client.get("/admin/api/progress", headers={"X-API-Key": ADMIN_KEY})
    assert blocked.status_code == 429 and 1 <= int(blocked.headers["Retry-After"]) <= 300
    assert "try again in" in blocked.get_json()["error"]
    form = admin_login(client)
    assert form.status_code == 429 and "Too many wrong keys" in form.get_data(as_text=True)
    elsewhere = app.test_client().get("/admin/api/progress", headers={"X-API-Key": ADMIN_KEY},
                                      environ_base={"REMOTE_ADDR": "10.0.0.7"})
    assert elsewhere.status_code == 200  # per address


def test_mass_sign_ins_from_one_address_are_throttled(make_app: Callable[..., Any]) -> None:
    app = make_app()
    client = app.test_client()
    codes = [client.post("/login", json={"name": f"bot{i}"}).status_code for i in range(125)]
    assert codes[:120] == [200] * 120 and codes[120:] == [429] * 5


def test_the_favicon_is_served(make_app: Callable[..., Any]) -> None:
    response = make_app().test_client().get("/favicon.ico")
    assert response.status_code == 200 and response.headers["Content-Type"] == "image/svg+xml"


def test_which_bodies_the_event_loop_collects() -> None:
    """A slow body must not hold a thread (issue 11); chunked, 100-continue and large ones still go to
    their thread as they are."""
    from potato.server.gunicorn_worker import BODY_PREREAD_MAX, body_wanted

    head = b"POST /api/label HTTP/1.1\r\nHost: x\r\nContent-Length: 120\r\n\r\n{\"id\""
    assert body_wanted(head) == 120
    assert body_wanted(head.replace(b"Content-Length", b"content-LENGTH")) == 120
    assert body_wanted(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == 0
    assert body_wanted(head.replace(b"120", str(BODY_PREREAD_MAX + 1).encode())) == 0
    assert body_wanted(head.replace(b"Host: x", b"Expect: 100-continue")) == 0
    assert body_wanted(head.replace(b"Host: x", b"Transfer-Encoding: chunked")) == 0
    assert body_wanted(b"POST / HTTP/1.1\r\nX-Content-Length: 5\r\n\r\n") == 0  # only the real header counts
