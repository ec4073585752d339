"""Issue 33 item 10: the annotation page keeps the item shown in its address (``/annotate?item=<id>``),
so a reload shows that item again instead of the first unlabelled one; an id that is not one of the
annotator's items starts the page where a sign-in does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from potato.config import load_config
from potato.server import close_app, create_app


def _first_item(client: Any, query: str = "") -> dict[str, Any]:
    resp = client.get("/annotate" + query)
    assert resp.status_code == 200
    page = resp.get_data(as_text=True)
    return dict(json.loads(page.split('<script id="first-item" type="application/json">')[1].split("</script>")[0]))


def test_a_reload_shows_the_item_in_the_address(client: Any) -> None:
    assert client.post("/login", data={"name": "alice"}).status_code == 302
    assert client.post("/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}}).status_code == 200
    assert _first_item(client)["id"] == "r001"  # no item named: the first unlabelled, as before
    assert _first_item(client, "?item=r007")["id"] == "r007"  # skipped, unlabelled: still the one shown
    assert _first_item(client, "?item=r000")["labels"] == {"sentiment": "positive"}
    for unknown in ("?item=nope", "?item=", "?item=r0001"):
        assert _first_item(client, unknown)["id"] == "r001"


def test_an_item_of_another_annotator_is_not_shown(make_project: Callable[..., Path]) -> None:
    """A project that assigns items: another annotator's item in the address starts where a sign-in does."""
    app = create_app(load_config(make_project(n_items=6, max_annotations_per_user=2, max_annotations_per_item=1)),
                     {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        ann, ben = app.test_client(), app.test_client()
        for client, name in ((ann, "ann"), (ben, "ben")):
            assert client.post("/login", data={"name": name}).status_code == 302
        assert _first_item(ann)["id"] == "r000"
        assert _first_item(ben)["id"] == "r001"
        assert _first_item(ann, "?item=r001")["id"] == "r000"
        assert _first_item(ann, "?item=r005")["id"] == "r000"  # assigned to nobody yet
    finally:
        close_app(app)
