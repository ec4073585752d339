"""Bad input is a clear 400, never a 500 and never a partial write, each found by probing the server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from potato.training.job.schemes import Scheme
from tests.conftest import ADMIN_KEY

H = {"X-API-Key": ADMIN_KEY, "Content-Type": "application/json"}


def test_nan_and_infinity_are_not_json(client: Any) -> None:
    """They were accepted in run params (201) and then made GET runs invalid JSON."""
    for bad in ('{"trainer": "noop", "params": {"sleep_s": NaN}}', '{"trainer": "noop", "params": {"sleep_s": -Infinity}}'):
        response = client.post("/admin/training/api/runs", data=bad, headers=H)
        assert response.status_code == 400, response.get_data(as_text=True)
    assert client.post("/admin/api/labels", data='{"user": "g", "labels": [], "x": Infinity}', headers=H).status_code == 400


def test_a_lone_surrogate_in_a_text_label_is_refused_and_nothing_is_stored(client: Any) -> None:
    client.post("/login", data={"name": "ann"})
    body = '{"id": "r000", "labels": {"note": "a\\ud800"}}'
    response = client.post("/api/label", data=body, content_type="application/json")
    assert response.status_code == 400
    good = client.post("/api/label", data='{"id": "r000", "labels": {"note": "fine \\ud83d\\ude00"}}',
                       content_type="application/json")
    assert good.status_code == 200  # a surrogate pair is an emoji, not an error


def test_deeply_nested_json_is_a_400_even_on_the_login_route(client: Any) -> None:
    response = client.post("/login", data="[" * 100_000, content_type="application/json")
    assert response.status_code == 400
    assert client.post("/admin/api/labels", data="[" * 100_000, headers=H).status_code == 400


def test_skip_invalid_must_be_a_json_boolean(client: Any) -> None:
    """"false" (a string) was taken as true and imported half a batch."""
    body = {"user": "gold", "skip_invalid": "false",
            "labels": [{"id": "r000", "schema": "sentiment", "label": "positive"},
                       {"id": "nope", "schema": "sentiment", "label": "positive"}]}
    response = client.post("/admin/api/labels", data=json.dumps(body), headers=H)
    assert response.status_code == 400 and "must be true or false" in response.get_json()["error"]
    assert client.get("/admin/api/labels", headers=H).get_json()["count"] == 0


def test_text_answers_have_a_length_limit_and_annotator_bodies_a_size_limit(client: Any) -> None:
    """A 60 MB text label was stored and echoed back on every view."""
    client.post("/login", data={"name": "ann"})
    long = client.post("/api/label", json={"id": "r000", "labels": {"note": "x" * 5001}})
    assert long.status_code == 400
    assert long.get_json()["error"] == "the answer to 'note' has 5001 characters; it takes at most 5000"
    assert client.post("/api/label", json={"id": "r000", "labels": {"note": "x" * 5000}}).status_code == 200
    huge = client.post("/api/label", json={"id": "r000", "labels": {"note": "x" * (2 * 1024 * 1024)}})
    assert huge.status_code == 413 and "nothing was stored" in huge.get_json()["error"]
    bad = client.post("/api/label", json={"id": "r000", "labels": {"sentiment": "y" * 10_000}})
    assert bad.status_code == 400 and len(bad.get_data()) < 500  # the error does not echo the answer


def test_numbers_past_a_float_are_400s_and_the_runs_stay_readable(client: Any) -> None:
    """1e400 read as infinity was stored in a run's params and made every later GET runs a 500
    (issue 20, found by schemathesis on the admin routes): no double holds it, so it is refused."""
    response = client.post("/admin/training/api/runs", data='{"trainer": "noop", "params": {"sleep_s": 1e400}}',
                           headers=H)
    assert response.status_code == 400 and "out of range" in response.get_json()["error"]
    listed = client.get("/admin/training/api/runs", headers=H)
    assert listed.status_code == 200 and listed.get_json()["runs"] == []


def test_integers_too_large_for_a_float_are_refused_where_a_number_is_wanted(make_project: Any) -> None:
    """A 401-digit integer overflowed float() in a run's params check and in a number scheme (500s)."""
    from potato.config import load_config
    from potato.server.training.run_requests import RunRequestError, check_run_request

    cfg = load_config(make_project(model_training={"enabled": True}))
    with pytest.raises(RunRequestError) as refused:
        check_run_request(cfg, {"trainer": "noop", "params": {"sleep_s": 10**400}},
                          {"noop": {"name": "noop", "local_only": False}})
    assert refused.value.status == 400 and "sleep_s is too large a number" in str(refused.value)
    scheme = Scheme(name="score", annotation_type="number", description="How good?")
    assert not scheme.accepts(10**400) and scheme.accepts(3)


def test_an_unexpected_failure_on_an_api_route_is_json(app: Any, client: Any) -> None:
    app.config["PROPAGATE_EXCEPTIONS"] = False  # as in production: a 500, not a test-time raise

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    for endpoint in [e for e in app.view_functions if e.endswith("api_progress")]:
        app.view_functions[endpoint] = broken
    response = client.get("/admin/api/progress", headers=H)
    assert response.status_code == 500 and response.is_json
    assert "its log says why" in response.get_json()["error"]


def test_two_runs_started_in_one_second_with_the_same_suffix_get_their_own_ids(app: Any, monkeypatch: Any) -> None:
    from potato.server.training.runs import store as runs

    suffixes = iter(["a1b2", "a1b2", "c3d4"])
    monkeypatch.setattr(runs.secrets, "token_hex", lambda n: next(suffixes))
    monkeypatch.setattr(runs.time, "time", lambda: 1800000000.0)
    store = app.extensions["potato.runs"]
    first, second = store.create("noop", ["sentiment"], "local", {}), store.create("noop", ["sentiment"], "local", {})
    assert first.id.endswith("-a1b2") and second.id.endswith("-c3d4")
    assert store.get(first.id) is not None and store.get(second.id) is not None


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/training/agent/v1/no-such-thing", 404),
    ("DELETE", "/training/agent/v1/jobs/next", 405),
    ("GET", "/admin/training/api/nothing-here", 404),
    ("PUT", "/api/label", 405),
])
def test_a_path_or_method_no_route_serves_is_json_on_the_apis(client: Any, method: str, path: str, status: int) -> None:
    """Issue 33 item 6: agents and scripts read JSON; the agent protocol answered these with the
    framework's HTML page, outside its documented errors."""
    response = client.open(path, method=method, headers=H)
    assert response.status_code == status and response.is_json, response.get_data(as_text=True)
    body = response.get_json()
    assert path in body["error"] and "documentation" in body["error"]
    if path.startswith("/training/agent/"):
        assert body["code"] == "no_such_route"
    if status == 405:
        assert response.headers["Allow"]
    assert not client.get("/no-such-page").is_json  # pages stay pages
