"""Issue 33 item 6: the bundle's ``Range`` read as RFC 9110 (14.2, 15.5.17) says, and every error
of the route a JSON error of the contract. A header that does not parse or names an invalid range is
ignored (200, the whole bundle), several ranges too; a suffix longer than the bundle is all of it; only
a range with no byte of the bundle is a 416, with ``Content-Range: bytes */<size>`` and a code from the
contract's enum (it was werkzeug's HTML page, for all of these)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from potato.config import load_config
from potato.server.training.agent_protocol.ranges import UNSATISFIABLE, byte_range
from potato.server.training.runs.tokens import BackendTokens
from tests.conftest import ADMIN_KEY

SPEC = yaml.safe_load((Path(__file__).resolve().parents[5] / "docs" / "agent-protocol.yaml").read_text())
CODES = set(SPEC["components"]["schemas"]["ErrorCode"]["enum"])


@pytest.mark.parametrize("header, expected", [
    (None, None),
    ("", None),
    ("bytes=100-", (100, 999)),
    ("bytes=0-0", (0, 0)),
    ("bytes=999-", (999, 999)),
    ("bytes=10-5000", (10, 999)),  # a last byte past the end is the end
    ("bytes=-10", (990, 999)),
    ("bytes=-5000", (0, 999)),  # a suffix longer than the file: all of it
    ("Bytes=1-2", (1, 2)),  # the unit is case-insensitive
    ("bytes=1-2,", (1, 2)),  # a list may hold empty elements
    ("bytes=1000-", UNSATISFIABLE),  # starts at the end
    ("bytes=5000-6000", UNSATISFIABLE),
    ("bytes=-0", UNSATISFIABLE),  # asks for no byte
    ("bytes=5-2", None),  # invalid: ignored
    ("bytes=abc", None),
    ("bytes=", None),
    ("bytes=--1", None),
    ("bytes=1-2-3", None),
    ("bytes=١-٢", None),  # digits are ASCII digits
    ("items=0-1", None),  # another unit
    ("bytes=0-1,5-6", None),  # several ranges: answered whole
    ("bytes=0-1, 2000-3000", None),
])
def test_a_range_header_is_read_as_rfc_9110_says(header: str | None, expected: Any) -> None:
    assert byte_range(header, 1000) == expected


class Got:
    """A read and closed answer (a test client's file answer holds the file open until closed)."""

    def __init__(self, client: Any, url: str, headers: dict[str, str]) -> None:
        with client.get(url, headers=headers) as response:
            self.status_code = response.status_code
            self.headers = response.headers
            self.data = response.get_data()
            self.is_json = response.is_json
            self.json = response.get_json(silent=True)


@pytest.fixture
def agent_app(make_project: Callable[..., Path]) -> Iterator[Any]:
    from potato.server import close_app, create_app

    config = load_config(make_project(model_training={"enabled": True, "backends": {"lab": {"type": "agent"}}}))
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    yield application
    close_app(application)


@pytest.fixture
def bundle_run(agent_app: Any) -> tuple[Any, str, dict[str, str], bytes]:
    """(client, bundle URL, the run token's header, the bundle) of a run an agent has claimed."""
    client = agent_app.test_client()
    backend_token = BackendTokens(agent_app.extensions["potato"].db).issue("lab")
    r = client.post("/admin/training/api/runs", headers={"X-API-Key": ADMIN_KEY},
                    json={"trainer": "noop", "schemas": ["sentiment"], "backend": "lab"})
    assert r.status_code == 201, r.get_json()
    r = client.post("/training/agent/v1/jobs/next", headers={"Authorization": f"Bearer {backend_token}"},
                    json={"backend": "lab", "wait_s": 0})
    assert r.status_code == 200, r.get_json()
    job = r.get_json()
    url = f"/training/agent/v1/runs/{job['run_id']}/bundle"
    auth = {"Authorization": f"Bearer {job['run_token']}"}
    whole = Got(client, url, auth)
    assert whole.status_code == 200 and len(whole.data) == job["bundle"]["size"]
    return client, url, auth, whole.data


@pytest.mark.parametrize("header", ["bytes=5-2", "bytes=abc", "bytes=0-1,5-6", "bytes=0-9, 20-29", "lines=1-2"])
def test_a_range_that_does_not_parse_or_asks_several_ranges_gets_the_whole_bundle(
        bundle_run: tuple[Any, str, dict[str, str], bytes], header: str) -> None:
    client, url, auth, bundle = bundle_run
    r = Got(client, url, {**auth, "Range": header})
    assert r.status_code == 200 and r.data == bundle
    assert "Content-Range" not in r.headers and r.headers["Cache-Control"] == "no-store"


def test_a_suffix_longer_than_the_bundle_is_all_of_it_and_a_resume_the_rest(
        bundle_run: tuple[Any, str, dict[str, str], bytes]) -> None:
    client, url, auth, bundle = bundle_run
    size = len(bundle)
    r = Got(client, url, {**auth, "Range": f"bytes=-{size + 100}"})
    assert r.status_code == 206 and r.data == bundle
    assert r.headers["Content-Range"] == f"bytes 0-{size - 1}/{size}"
    r = Got(client, url, {**auth, "Range": "bytes=100-"})
    assert r.status_code == 206 and r.data == bundle[100:]
    r = Got(client, url, {**auth, "Range": "bytes=-10"})
    assert r.status_code == 206 and r.data == bundle[-10:]


@pytest.mark.parametrize("first", ["-0", "{size}-", "{size}-{over}", "{over}-"])
def test_a_range_with_no_byte_of_the_bundle_is_a_json_416(bundle_run: tuple[Any, str, dict[str, str], bytes],
                                                          first: str) -> None:
    client, url, auth, bundle = bundle_run
    size = len(bundle)
    r = Got(client, url, {**auth, "Range": "bytes=" + first.format(size=size, over=size + 10)})
    assert r.status_code == 416 and r.is_json, r.data[:200]
    body = r.json
    assert body["code"] == "range_not_satisfiable" and body["code"] in CODES
    assert body["error"].startswith(f"The range asked for holds no byte of the bundle ({size} bytes)")
    assert r.headers["Content-Range"] == f"bytes */{size}"


def test_if_range_with_another_etag_sends_the_whole_bundle_even_for_a_range_past_the_end(
        bundle_run: tuple[Any, str, dict[str, str], bytes]) -> None:
    """RFC 9110 13.1.5: a Range under a failed If-Range is ignored."""
    client, url, auth, bundle = bundle_run
    size = len(bundle)
    r = Got(client, url, {**auth, "Range": f"bytes={size}-", "If-Range": '"0000"'})
    assert r.status_code == 200 and r.data == bundle
    etag = Got(client, url, auth).headers["ETag"]
    r = Got(client, url, {**auth, "Range": "bytes=10-", "If-Range": etag})
    assert r.status_code == 206 and r.data == bundle[10:]


def test_an_error_the_app_answers_around_a_route_is_json_with_a_code_of_the_enum(
        make_project: Callable[..., Path]) -> None:
    """Issue 33 item 6: a body over the app's limit (64 MB; 2 KB here) on an agent route was the app's
    JSON without a ``code``, which the contract's Error requires."""
    from potato.server import close_app, create_app

    config = load_config(make_project(model_training={"enabled": True, "backends": {"lab": {"type": "agent"}}}))
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True, "MAX_CONTENT_LENGTH": 2048})
    try:
        token = BackendTokens(application.extensions["potato"].db).issue("lab")
        r = application.test_client().post("/training/agent/v1/jobs/next", data=b"{" + b" " * 4096 + b"}",
                                           headers={"Authorization": f"Bearer {token}",
                                                    "Content-Type": "application/json"})
        assert r.status_code == 413 and r.is_json
        assert r.get_json()["code"] == "too_large" and "too_large" in CODES
        assert r.get_json()["error"].startswith("The request is larger than this route takes")
    finally:
        close_app(application)
