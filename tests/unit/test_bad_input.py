"""Bad input is a clear 400, never a 500 and never a partial write, each found by probing the server."""

from __future__ import annotations

import json
from typing import Any

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
