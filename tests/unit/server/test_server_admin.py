"""C3 and issue 4: admin routes need the key; export and the labels API."""

from __future__ import annotations

from typing import Any

import pytest

ADMIN_ROUTES = ["/admin/api/progress", "/admin/api/export", "/admin/api/labels"]


@pytest.mark.parametrize("route", ADMIN_ROUTES)
@pytest.mark.parametrize("key", [None, "", "wrong", "test-admin-key-012345678"])
def test_admin_routes_refuse_without_the_right_key(client: Any, route: str, key: Any) -> None:
    headers = {} if key is None else {"X-API-Key": key}
    assert client.get(route, headers=headers).status_code == 401


def test_admin_page_redirects_browser_to_key_form(client: Any) -> None:
    resp = client.get("/admin/", headers={"Accept": "text/html"})
    assert resp.status_code == 302 and "/admin/login" in resp.headers["Location"]
    assert client.post("/admin/login", data={"key": "nope"}).status_code == 401
    resp = client.post("/admin/login?next=//evil.example.org", data={"key": "test-admin-key-0123456789"})
    assert resp.status_code == 302 and resp.headers["Location"] == "/admin/"
    assert "Progress" in client.get("/admin/").get_data(as_text=True)


def test_the_key_form_sends_the_browser_back_to_the_page_with_its_query(client: Any) -> None:
    """A closing note's find: after the key form a page lost its query string (next= had the path only)."""
    plain = client.get("/admin/", headers={"Accept": "text/html"})
    assert plain.headers["Location"].endswith("next=/admin/")  # no stray '?'
    resp = client.get("/admin/training/?view=runs&x=1", headers={"Accept": "text/html"})
    assert resp.status_code == 302
    back = client.post(resp.headers["Location"], data={"key": "test-admin-key-0123456789"})
    assert back.status_code == 302 and back.headers["Location"] == "/admin/training/?view=runs&x=1"


def test_progress_and_export(client: Any, admin_headers: dict[str, str]) -> None:
    client.post("/login", data={"name": "alice"})
    client.post("/api/label", json={"id": "r000", "labels": {"sentiment": "positive", "note": "ok"}})
    progress = client.get("/admin/api/progress", headers=admin_headers).get_json()
    assert progress["labels"] == 2 and progress["items"] == 40
    assert progress["annotators"][0]["user"] == "alice" and progress["annotators"][0]["items"] == 1
    lines = client.get("/admin/api/export", headers=admin_headers).get_data(as_text=True).splitlines()
    assert len(lines) == 2 and '"schema": "note"' in lines[0] and '"source": "human"' in lines[0]


def test_labels_api_stores_and_refuses_whole_bad_batch(client: Any, admin_headers: dict[str, str], app: Any) -> None:
    good = {"id": "r000", "schema": "sentiment", "label": "positive"}
    bad = {"id": "r001", "schema": "sentiment", "label": "meh"}
    resp = client.post("/admin/api/labels", json={"user": "gold", "labels": [good, bad]}, headers=admin_headers)
    assert resp.status_code == 400
    assert resp.get_json()["problems"] == [
        "labels[1]: 'meh' is not a valid label for 'sentiment'; expected one of: positive, negative"
    ]
    assert app.extensions["potato"].labels.count() == 0
    resp = client.post("/admin/api/labels", json={"user": "gold", "labels": [good, bad], "skip_invalid": True},
                       headers=admin_headers)
    assert resp.get_json() == {"stored": 1, "new": 1, "changed": 0, "unchanged": 0, "skipped": 1,
                               "problems": resp.get_json()["problems"]}
    # Same batch again changes nothing (idempotent).
    before = client.get("/admin/api/labels", headers=admin_headers).get_json()
    client.post("/admin/api/labels", json={"user": "gold", "labels": [good]}, headers=admin_headers)
    after = client.get("/admin/api/labels", headers=admin_headers).get_json()
    assert before == after and after["count"] == 1
    assert after["labels"][0]["source"] == "import"


def test_labels_api_filters_and_needs_key(client: Any, admin_headers: dict[str, str]) -> None:
    labels = [{"id": "r000", "schema": "sentiment", "label": "positive"},
              {"id": "r000", "schema": "aspects", "label": ["price"]}]
    client.post("/admin/api/labels", json={"user": "u1", "labels": labels}, headers=admin_headers)
    client.post("/admin/api/labels", json={"user": "u2", "labels": labels[:1]}, headers=admin_headers)
    assert client.get("/admin/api/labels?user=u1", headers=admin_headers).get_json()["count"] == 2
    assert client.get("/admin/api/labels?schema=sentiment", headers=admin_headers).get_json()["count"] == 2
    assert client.post("/admin/api/labels", json={"user": "x", "labels": labels}).status_code == 401


def test_labels_api_rejects_malformed_bodies(client: Any, admin_headers: dict[str, str]) -> None:
    assert client.post("/admin/api/labels", data="nope", headers=admin_headers).status_code == 400
    assert client.post("/admin/api/labels", json={"user": "", "labels": []}, headers=admin_headers).status_code == 400
    assert client.post("/admin/api/labels", json={"user": "u", "labels": {}}, headers=admin_headers).status_code == 400


def test_imported_label_shows_on_annotation_page(client: Any, admin_headers: dict[str, str]) -> None:
    client.post("/admin/api/labels", json={"user": "alice", "labels": [{"id": "r000", "schema": "sentiment", "label": "negative"}]},
                headers=admin_headers)
    client.post("/login", data={"name": "alice"})
    item = client.get("/api/item/1").get_json()["item"]
    assert item["labels"] == {"sentiment": "negative"} and item["labelled"] is True
