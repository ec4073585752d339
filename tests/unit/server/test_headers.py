"""The security headers, from one place for the app, the media files and the worker's own answers
(issue 42): the pages take scripts from the static folder only, not from the media folder."""

from __future__ import annotations

import pytest

from potato.server.headers import (ANSWER_POLICY, MEDIA_POLICY, framed_by, page_policy, script_source,
                                   security_headers)


@pytest.mark.parametrize(("host", "static", "source"), [
    ("127.0.0.1:8000", "/static", "127.0.0.1:8000/static/"),
    ("Annotate.Example.org", "/potato/static", "annotate.example.org/potato/static/"),
    ("localhost", "/a b/static/", "localhost/a%20b/static/"),
    ("[::1]:8000", "/static", "'self'"),  # CSP cannot name an IPv6 literal
    ("evil; script-src *", "/static", "'self'"),
    ("x:8000", "static", "'self'"),
])
def test_scripts_come_from_the_static_folder_of_this_host(host: str, static: str, source: str) -> None:
    assert script_source(host, static) == source


def test_the_page_policy_names_its_scripts_forms_framers_and_images() -> None:
    policy = page_policy("h/static/", ("https://www.mturk.com",), ("https://worker.mturk.com",), True)
    assert "script-src h/static/;" in policy and "'unsafe-inline'" not in policy
    assert "form-action 'self' https://www.mturk.com;" in policy
    assert policy.endswith("frame-ancestors 'self' https://worker.mturk.com")
    assert "img-src 'self' data: https:;" in policy
    assert page_policy() == ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                             "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")


def test_every_answer_gets_the_same_four_headers() -> None:
    assert security_headers(ANSWER_POLICY) == [
        ("Content-Security-Policy", ANSWER_POLICY), ("X-Frame-Options", "SAMEORIGIN"),
        ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "same-origin")]
    framed = security_headers(framed_by(MEDIA_POLICY, ["https://worker.mturk.com"]), framed=True)
    assert [name for name, _ in framed] == ["Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy"]
    assert "sandbox" in MEDIA_POLICY.split("; ") and "script-src" not in MEDIA_POLICY
    assert framed[0][1].endswith("frame-ancestors 'self' https://worker.mturk.com")
