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
from tests.faults.matrix import fault

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


def test_an_annotator_s_sign_out_ends_every_copy_of_the_cookie(make_app: Callable[..., Any]) -> None:
    """Issue 33 item 6: after an annotator signed out, a copy of the cookie (a shared computer, a
    synced profile) still labelled in their name for 30 days; an admin's sign-out already ended it."""
    app = make_app()
    browser = app.test_client()
    assert browser.post("/login", data={"name": "ann"}).status_code == 302
    copy = app.test_client()
    cookie = browser.get_cookie(app.config["SESSION_COOKIE_NAME"])
    copy.set_cookie(cookie.key, cookie.value)
    assert copy.post("/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}}).status_code == 200
    browser.post("/logout")
    refused = copy.post("/api/label", json={"id": "r001", "labels": {"sentiment": "positive"}})
    assert refused.status_code == 401 and "Log in first" in refused.get_json()["error"]
    assert copy.get("/annotate").status_code == 302  # back to the sign-in page
    exported = app.test_client().get("/admin/api/export", headers={"X-API-Key": ADMIN_KEY}).get_data(as_text=True)
    assert "r000" in exported and "r001" not in exported
    again = app.test_client()
    assert again.post("/login", data={"name": "ann"}).status_code == 302  # signing in again works
    assert again.post("/api/label", json={"id": "r001", "labels": {"sentiment": "negative"}}).status_code == 200


def register(app: Any, name: str, password: str = "correct horse", action: str = "register") -> Any:
    return app.test_client().post("/login", json={"name": name, "password": password, "action": action})


@pytest.mark.parametrize("lookalike", ["AMY", "Amy", "ａｍｙ", "\u0430my", "am\u00fd", "\u0410MY"])
def test_a_name_that_looks_like_an_annotator_s_is_taken(make_app: Callable[..., Any], lookalike: str) -> None:
    """Issue 33 item 6: with passwords on, ``AMY``, full-width letters, a Cyrillic ``а`` and ``amý``
    registered as accounts beside ``amy``: two people the admin's progress table and the export
    cannot tell apart. Refused, naming the name they look like."""
    app = make_app(require_password=True)
    assert register(app, "amy").status_code == 200
    refused = register(app, lookalike, "another password")
    assert refused.status_code == 400, refused.get_json()
    assert "is taken" in refused.get_json()["error"] and "'amy'" in refused.get_json()["error"]
    assert register(app, "amos", "another password").status_code == 200  # a name that only starts alike


@pytest.mark.parametrize("typed", ["AMY", "ａｍｙ", "Amy"])
def test_a_name_typed_in_another_case_or_width_signs_in_to_its_account(
        make_app: Callable[..., Any], typed: str) -> None:
    """Issue 33 item 6, normalised as a user expects: case and full-width letters do not make another
    name, so they sign in to the account, under its own spelling."""
    app = make_app(require_password=True)
    register(app, "amy")
    signed_in = register(app, typed, action="sign-in")
    assert signed_in.status_code == 200 and signed_in.get_json()["user"] == "amy"
    assert register(app, typed, "wrong password", action="sign-in").status_code == 401
    assert register(app, "\u0430my", action="sign-in").status_code == 401  # a lookalike is not a spelling


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


# What a browser adds to a request by itself behind a proxy or a site that asks for them (issue 33
# item 1: each of these let another site's form ride on the session cookie).
BROWSER_AUTHORIZATION = ["Negotiate x", "Basic Zm9vOmJhcg==", "Digest username=\"a\"", "Bearer whatever"]


@pytest.mark.parametrize("authorization", BROWSER_AUTHORIZATION)
def test_an_authorization_header_does_not_let_another_site_ride_on_the_cookie(
        make_app: Callable[..., Any], authorization: str) -> None:
    """Issue 33 item 1: with an admin's and an annotator's cookie, a form from another port of the
    same host carrying an Authorization header was let through: it cancelled a run, stored labels,
    and signed the victim in under the attacker's name. Only a request that the cookie does not
    authorise may skip the origin check."""
    app = make_app(model_training={"enabled": True})
    created = app.test_client().post("/admin/training/api/runs", json={"trainer": "noop", "params": {"sleep_s": 30}},
                                     headers={"X-API-Key": ADMIN_KEY})
    assert created.status_code in (201, 202), created.get_data(as_text=True)
    run_id = created.get_json()["id"]
    browser = app.test_client()
    admin_login(browser)
    browser.post("/login", data={"name": "victim"})
    evil = {"Origin": "http://localhost:9999", "Authorization": authorization}
    cancel = browser.post(f"/admin/training/api/runs/{run_id}/cancel", headers=evil)
    assert cancel.status_code == 403 and "another site" in cancel.get_json()["error"]
    run = browser.get(f"/admin/training/api/runs/{run_id}").get_json()
    assert run["state"] == "queued" and not run.get("cancel_requested")
    label = browser.post("/api/label", json={"id": "r000", "labels": {"sentiment": "negative"}}, headers=evil)
    assert label.status_code == 403
    imported = browser.post("/admin/api/labels", json={"user": "mallory", "labels": []}, headers=evil)
    assert imported.status_code == 403
    assert browser.post("/login", data={"name": "mallory"}, headers=evil).status_code == 403
    exported = browser.get("/admin/api/export")
    assert b"mallory" not in exported.data and b"r000" not in exported.data  # nothing was stored


def test_an_admin_key_skips_the_origin_check_only_where_the_key_authorises(make_app: Callable[..., Any]) -> None:
    """Issue 33 item 1: X-API-Key is what authorises an admin route; on an annotator's route the cookie
    does, so a key there (right or wrong) is no reason to skip the origin check."""
    app = make_app()
    browser = app.test_client()
    browser.post("/login", data={"name": "victim"})
    elsewhere = {"Origin": "https://elsewhere.example", "X-API-Key": ADMIN_KEY}
    assert browser.post("/api/label", json={"id": "r000", "labels": {"sentiment": "negative"}},
                        headers=elsewhere).status_code == 403
    assert browser.post("/admin/api/labels", json={"user": "g", "labels": []}, headers=elsewhere).status_code == 200
    blank = {"Origin": "https://elsewhere.example", "X-API-Key": ""}
    admin_login(browser)
    assert browser.post("/admin/api/labels", json={"user": "g", "labels": []}, headers=blank).status_code == 403


def test_an_empty_admin_key_header_is_no_key_and_locks_nobody_out(make_app: Callable[..., Any]) -> None:
    """Issue 33 item 6: an empty ``X-API-Key:`` counted as a wrong key, so a client sending an unfilled
    header locked its whole address out of the admin pages."""
    app = make_app()
    client = app.test_client()
    for _ in range(12):
        empty = client.get("/admin/api/progress", headers={"X-API-Key": ""})
        assert empty.status_code == 401 and "X-API-Key header with" in empty.get_json()["error"]
    assert client.get("/admin/api/progress", headers={"X-API-Key": ADMIN_KEY}).status_code == 200
    admin_login(client)
    assert client.get("/admin/api/progress", headers={"X-API-Key": " "}).status_code == 200  # the session decides


def test_every_page_says_it_may_not_be_framed_or_sniffed_and_loads_nothing_inline(
        make_app: Callable[..., Any]) -> None:
    app = make_app()
    for path in ("/", "/admin/login", "/healthz"):
        response = app.test_client().get(path)
        assert response.headers["X-Frame-Options"] == "SAMEORIGIN"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        csp = response.headers["Content-Security-Policy"]
        assert "frame-ancestors 'self'" in csp and "unsafe-inline" not in csp
        assert "script-src localhost/static/;" in csp  # this server's static folder, not all of it (issue 42)
    templates = Path(__file__).resolve().parents[3] / "src" / "potato" / "server" / "templates"
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
    """A slow body must not hold a thread (issue 11): bodies with a Content-Length up to 1 MB are
    collected by length; chunked, 100-continue and large ones are decided apart (issue 20)."""
    from potato.server.serving.request_framing import BODY_PREREAD_MAX, body_wanted

    head = b"POST /api/label HTTP/1.1\r\nHost: x\r\nContent-Length: 120\r\n\r\n{\"id\""
    assert body_wanted(head) == 120
    assert body_wanted(head.replace(b"Content-Length", b"content-LENGTH")) == 120
    assert body_wanted(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == 0
    assert body_wanted(head.replace(b"120", str(BODY_PREREAD_MAX + 1).encode())) == 0
    assert body_wanted(head.replace(b"Host: x", b"Expect: 100-continue")) == 0
    assert body_wanted(head.replace(b"Host: x", b"Transfer-Encoding: chunked")) == 0
    assert body_wanted(b"POST / HTTP/1.1\r\nX-Content-Length: 5\r\n\r\n") == 0  # only the real header counts


# -- issue 20: a black-box probe under gunicorn ------------------------------------------------------

HOSTILE_NEXT = [
    "//evil.example/phish", "/\\evil.example", "/\t/evil.example/phish", "/\r\n/evil.example", "\r\n",
    "/admin\r\nSet-Cookie: x=1", "https://evil.example/", "javascript:alert(1)", "evil.example", "",
    " //evil.example", "/\u3000/evil.example", "/\u00e9v\u00efl", "\uff0f\uff0fevil.example", "/ /evil.example",
    "/%0a", "/\x00/evil.example", "/\x7f", None, ["/admin"],
]


@pytest.mark.parametrize("target", HOSTILE_NEXT)
def test_a_sign_in_follows_only_paths_on_this_server(target: Any) -> None:
    from potato.server.security import safe_next

    expected = "/admin/" if target != "/%0a" else "/%0a"  # an encoded line break is a path, not a break
    assert safe_next(target, "/admin/") == expected


@pytest.mark.parametrize("target", ["/admin/training?x=1", "/admin/", "/admin/api/progress", "/admin/training#runs"])
def test_a_sign_in_keeps_the_page_it_was_asked_from(target: str) -> None:
    from potato.server.security import safe_next

    assert safe_next(target, "/admin/") == target


@pytest.mark.parametrize("query", ["/%09/evil.example/phish", "/%0d%0a/evil.example", "%0d%0aLocation:%20//x",
                                   "/%5C/evil.example", "/%0A", "https:%2F%2Fevil.example"])
@fault("Annotators and the server",
       "A phishing link: /admin/login?next=/%09/evil.example (or //, /\\, a scheme, CR/LF)",
       "After the sign-in the browser goes to /admin/ instead",
       "The admin page; never another site, never a 500")
def test_the_admin_sign_in_never_sends_the_browser_to_another_site(make_app: Callable[..., Any], query: str) -> None:
    """The probe: ?next=/%09/evil.example/phish redirected to //evil.example/phish (browsers drop the
    tab), and an encoded line break was a 500."""
    client = make_app().test_client()
    response = client.post(f"/admin/login?next={query}", data={"key": ADMIN_KEY})
    assert response.status_code == 302
    assert response.headers["Location"] == "/admin/"


def test_the_admin_sign_in_returns_to_the_page_that_asked(make_app: Callable[..., Any]) -> None:
    client = make_app().test_client()
    response = client.post("/admin/login?next=/admin/training%3Fx%3D1", data={"key": ADMIN_KEY})
    assert response.status_code == 302 and response.headers["Location"] == "/admin/training?x=1"


def _all_at_once(count: int, send: Callable[[int], int]) -> list[int]:
    """``send(i)`` from ``count`` threads released together; their status codes."""
    import threading

    barrier = threading.Barrier(count)
    codes: list[int] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        barrier.wait()
        code = send(i)
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return codes


@fault("Tokens and secrets",
       "200 wrong admin keys sent in parallel from one address",
       "Counted and checked in one transaction: exactly 10 are tried",
       "429 with Retry-After for the rest")
def test_parallel_wrong_admin_keys_get_exactly_the_limit_tried(make_app: Callable[..., Any]) -> None:
    """The probe: 200 wrong keys at once from one address got 40 answers 401 where the limit is 10.
    Here 60 at once, through the header and the sign-in form, half to each of two apps on one project
    folder (as two gunicorn workers: two connections to one database file)."""
    apps = [make_app(), make_app()]

    def send(i: int) -> int:
        client = apps[i % 2].test_client()
        if i % 3:
            return int(client.get("/admin/api/progress", headers={"X-API-Key": f"guess-{i}"}).status_code)
        return int(client.post("/admin/login", data={"key": f"guess-{i}"}).status_code)

    codes = _all_at_once(60, send)
    assert codes.count(401) == 10 and codes.count(429) == 50
    right = apps[0].test_client().get("/admin/api/progress", headers={"X-API-Key": ADMIN_KEY})
    assert right.status_code == 429  # locked out, right key or not


def test_parallel_sign_ins_and_wrong_passwords_stop_at_their_limits(
        make_app: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same race on the annotators' throttles, with limits made small for the test."""
    from potato.server import annotate, security

    monkeypatch.setattr(annotate, "LOGINS", security.Limit("login", 12, 60.0))
    monkeypatch.setattr(annotate, "PASSWORD_FAILURES", security.Limit("password", 4, 60.0))
    app = make_app()
    codes = _all_at_once(30, lambda i: int(app.test_client().post("/login", json={"name": f"bot{i}"}).status_code))
    assert codes.count(200) == 12 and codes.count(429) == 18

    guarded = make_app(require_password=True)
    made = guarded.test_client().post("/login", json={"name": "alice", "password": "correct horse",
                                                       "action": "register"}, environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert made.status_code == 200
    codes = _all_at_once(12, lambda i: int(guarded.test_client().post(
        "/login", json={"name": "alice", "password": f"guess {i:04d}"},
        environ_base={"REMOTE_ADDR": "10.0.0.10"}).status_code))
    assert codes.count(401) == 4 and codes.count(429) == 8


def _head(request_line: str, *fields: str) -> bytes:
    return ("\r\n".join([request_line, "Host: x", *fields]) + "\r\n\r\n").encode()


@pytest.mark.parametrize(("head", "kind"), [
    (_head("GET /healthz HTTP/1.1"), "none"),
    (_head("POST /api/label HTTP/1.1", "Content-Length: 120"), "collect"),
    (_head("POST /login HTTP/1.1", "Content-Length: 0"), "none"),
    (_head("POST /login HTTP/1.1", "Transfer-Encoding: chunked"), "chunked"),
    (_head("POST /login HTTP/1.1", "Content-Length: 2000000"), "too_large"),
    (_head("POST /admin/login HTTP/1.1", "Content-Length: 2000000", "X-API-Key: k"), "too_large"),
    (_head("POST /training/agent/v1/jobs/next HTTP/1.1", "Authorization: Bearer t", "Transfer-Encoding: chunked"),
     "chunked"),
    (_head("PUT /training/agent/v1/runs/r1/predictions HTTP/1.1", "Authorization: Bearer t",
           "Content-Length: 50000000"), "upload"),
    (_head("PUT /training/agent/v1/runs/r1/predictions?x=1 HTTP/1.1", "authorization: bearer t",
           "Transfer-Encoding: chunked"), "upload"),
    (_head("PUT /training/agent/v1/runs/r1/predictions HTTP/1.1", "Content-Length: 50000000"), "too_large"),
    (_head("PUT /training/agent/v1/runs/r1/predictions HTTP/1.1", "Authorization: Basic x",
           "Content-Length: 50000000"), "too_large"),
    (_head("POST /training/agent/v1/runs/r1/events HTTP/1.1", "Authorization: Bearer t",
           "Content-Length: 5000000"), "upload"),
    (_head("POST /admin/api/labels HTTP/1.1", "X-API-Key: k", "Content-Length: 5000000"), "upload"),
    (_head("POST http://x/admin/api/labels HTTP/1.1", "X-API-Key: k", "Content-Length: 5000000"), "upload"),
    (_head("POST /admin/api/labels HTTP/1.1", "Cookie: s=1", "Content-Length: 5000000"), "too_large"),
    (_head("POST /admin/api/labels/../../login HTTP/1.1", "X-API-Key: k", "Content-Length: 5000000"), "too_large"),
    (_head("POST /login HTTP/1.1", "Content-Length: 5", "Content-Length: 5"), "bad"),
    (_head("POST /login HTTP/1.1", "Content-Length: 5", "Transfer-Encoding: chunked"), "bad"),
    (_head("POST /login HTTP/1.1", "Transfer-Encoding: gzip"), "bad"),
    (_head("POST /login HTTP/1.0", "Transfer-Encoding: chunked"), "bad"),
    (_head("POST /login HTTP/1.1", "Content-Length: -1"), "bad"),
    (_head("POST /login HTTP/1.1", "Content-Length: 1e3"), "bad"),
])
def test_the_headers_decide_what_happens_to_a_body(head: bytes, kind: str) -> None:
    """Issue 20: no thread waits on a body the server has not decided to take; only the upload routes,
    with their credentials in the headers, get one before a large or chunked body is in."""
    from potato.server.serving.request_framing import plan_body

    assert plan_body(head).kind.value == kind


def test_a_client_waiting_for_100_continue_is_answered_by_the_event_loop() -> None:
    from potato.server.serving.request_framing import plan_body, strip_expect

    head = _head("POST /login HTTP/1.1", "Expect: 100-continue", "Content-Length: 9")
    plan = plan_body(head)
    assert plan.kind.value == "collect" and plan.length == 9 and plan.expects_continue
    assert strip_expect(head) == _head("POST /login HTTP/1.1", "Content-Length: 9")
    assert not plan_body(head.replace(b"HTTP/1.1", b"HTTP/1.0")).expects_continue  # 1.0: ignored


@pytest.mark.parametrize(("body", "expected"), [
    (b"5\r\nhello\r\n0\r\n\r\n", (15, True)),
    (b"5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\nGET / HTTP/1.1", (33, True)),
    (b"5\r\nhel", (0, False)),
    (b"5\r\nhello\r\n3\r\nab", (10, False)),
    (b"5\r\nhello\r\n0\r\n", (10, False)),
    (b"", (0, False)),
])
def test_chunked_bodies_are_collected_by_their_framing(body: bytes, expected: tuple[int, bool]) -> None:
    from potato.server.serving.request_framing import chunked_end

    assert chunked_end(body) == expected
    if expected[1]:  # resumable: feeding it byte by byte ends at the same place
        pos, done = 0, False
        for end in range(len(body) + 1):
            pos, done = chunked_end(body[:end], pos)
            if done:
                break
        assert (pos, done) == expected


@pytest.mark.parametrize("body", [b"zz\r\n", b"5\r\nhelloXX", b"-1\r\n", b"9" * 5000, b"0\r\n" + b"T: x\r\n" * 1000])
def test_bad_chunk_framing_is_refused(body: bytes) -> None:
    from potato.server.serving.request_framing import chunked_end

    with pytest.raises(ValueError):
        chunked_end(body)


def test_a_thread_reading_a_body_stops_at_its_deadline() -> None:
    """Between bytes at most the body timeout; overall, the timeout plus a second per BODY_MIN_RATE."""
    import socket

    from potato.server.serving.gunicorn_worker import PacedSocket
    from potato.server.serving.request_framing import body_timeout, read_deadline
    from potato.server.security import SlowBody

    assert read_deadline(100.0, 32 * 1024, 30.0, 16 * 1024) == 132.0
    assert body_timeout({"POTATO_BODY_TIMEOUT_S": "2.5"}) == 2.5
    assert body_timeout({"POTATO_BODY_TIMEOUT_S": "nan"}) == body_timeout({}) == 30.0
    now = [0.0]
    ours, theirs = socket.socketpair()
    try:
        paced = PacedSocket(ours, 0.2, 1024, clock=lambda: now[0])
        theirs.send(b"x" * 1024)
        assert paced.recv(4096) == b"x" * 1024 and not paced.expired
        with pytest.raises(SlowBody, match="no byte"):  # nothing more comes: the idle limit
            paced.recv(4096)
        paced = PacedSocket(ours, 0.2, 1024, clock=lambda: now[0])
        theirs.send(b"y")
        assert paced.recv(1) == b"y"
        now[0] = 1.3  # 0.2 s + 1 byte at 1 KB/s: long past
        with pytest.raises(SlowBody, match="slower than"):
            paced.recv(1)
        assert paced.expired and isinstance(SlowBody(), TimeoutError)  # gunicorn's drain treats it as one
    finally:
        ours.close()
        theirs.close()


def test_a_slow_body_is_a_408_whichever_read_noticed_it(make_app: Callable[..., Any]) -> None:
    from werkzeug.exceptions import ClientDisconnected

    from potato.server.security import SlowBody, body_too_slow

    with make_app().test_request_context():
        assert body_too_slow(SlowBody("no byte for 30 s")).status_code == 408
        wrapped = ClientDisconnected()  # werkzeug's report of a read that raised
        wrapped.__context__ = SlowBody("no byte for 30 s")
        response = body_too_slow(wrapped)
        assert response.status_code == 408 and "too slowly" in response.get_json()["error"]
        assert body_too_slow(ClientDisconnected()).code == 400  # a real disconnect stays what it was
