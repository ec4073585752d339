"""C2, C3: annotators log in by name and label; admins read progress and export with the key."""

from __future__ import annotations

import json
from typing import Any

from potato.server.annotate import target_position


def _login(client: Any, name: str = "alice") -> None:
    resp = client.post("/login", data={"name": name})
    assert resp.status_code == 302


def _label(client: Any, item_id: str, value: Any, go: str = "next_unlabelled", schema: str = "sentiment") -> dict[str, Any]:
    resp = client.post("/api/label", json={"id": item_id, "labels": {schema: value}, "go": go})
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()


def test_target_position_moves() -> None:
    calls = []

    def unlabelled(start: int, backwards: bool) -> Any:
        calls.append((start, backwards))
        return 7

    assert target_position("next", 3, 10, unlabelled) == (4, None)
    assert target_position("next", 9, 10, unlabelled) == (9, "That was the last item.")
    assert target_position("item:10", 2, 10, unlabelled) == (9, None)  # "Go to item" 10, as the page counts
    assert target_position("item:11", 2, 10, unlabelled) == (2, "There is no item 11; items are numbered 1 to 10.")
    assert target_position("item:x", 2, 10, unlabelled)[0] == 2
    assert target_position("prev", 0, 10, unlabelled) == (0, None)
    assert target_position("next_unlabelled", 9, 10, unlabelled) == (7, None)
    assert target_position("prev_unlabelled", 0, 10, unlabelled) == (7, None)
    assert calls == [(0, False), (9, True)]  # searches start beside the current item, wrapping
    assert target_position("next_unlabelled", 2, 10, lambda s, b: None) == (2, "Every item is labelled.")
    assert "valid: next, prev" in str(target_position("sideways", 2, 10, unlabelled)[1])


def test_next_unlabelled_query_wraps_and_reports_done(app: Any) -> None:
    project = app.extensions["potato"]
    store = project.labels
    from potato.labels import Label

    store.save([Label("u", f"r{i:03d}", "sentiment", "positive") for i in (0, 1, 3)])
    assert store.next_unlabelled("u", 0) == 2
    assert store.next_unlabelled("u", 3) == 4
    assert store.next_unlabelled("u", 1, backwards=True) == 39  # wraps to the end
    assert store.next_unlabelled("nobody", 5) == 5
    assert store.labelled_count("u") == 3
    store.save([Label("u", f"r{i:03d}", "sentiment", "positive") for i in range(40)])
    assert store.next_unlabelled("u", 0) is None and store.next_unlabelled("u", 0, backwards=True) is None


def test_login_page_then_annotation_page_with_first_item(client: Any) -> None:
    assert client.get("/").status_code == 200
    assert client.get("/annotate").status_code == 302  # not logged in
    _login(client)
    page = client.get("/annotate").get_data(as_text=True)
    assert "r000" in page and "Signed in as <strong>alice</strong>" in page
    assert 'data-key="1"' in page and "<kbd>1</kbd>" in page


def test_bad_login_name(client: Any) -> None:
    assert client.post("/login", data={"name": "   "}).status_code == 400
    assert client.post("/login", data={"name": "x" * 65}).status_code == 400
    assert client.post("/login", json=["not", "an", "object"]).status_code == 400
    assert client.post("/login", json={"name": 7}).status_code == 400
    assert client.post("/login", json={"name": "kim"}).get_json() == {"user": "kim"}


def test_label_returns_next_item_and_progress(client: Any) -> None:
    _login(client)
    body = _label(client, "r000", "positive")
    assert body["saved"] is True
    assert body["item"]["id"] == "r001" and body["item"]["done"] == 1 and body["item"]["total"] == 40
    body = _label(client, "r001", "negative", go="prev")
    assert body["item"]["id"] == "r000" and body["item"]["labels"] == {"sentiment": "positive"}
    assert body["item"]["labelled"] is True


def test_relabel_and_clear(client: Any, app: Any) -> None:
    _login(client)
    _label(client, "r000", "positive")
    _label(client, "r000", "negative", go="stay")
    _label(client, "r000", ["price"], go="stay", schema="aspects")
    store = app.extensions["potato"].labels
    assert {k: v.value for k, v in store.for_item("alice", "r000").items()} == {"sentiment": "negative", "aspects": ["price"]}
    _label(client, "r000", None, go="stay")
    assert set(store.for_item("alice", "r000")) == {"aspects"}


def test_invalid_answers_are_refused_and_store_nothing(client: Any, app: Any) -> None:
    _login(client)
    resp = client.post("/api/label", json={"id": "r000", "labels": {"sentiment": "meh"}})
    assert resp.status_code == 400 and "valid: positive, negative" in resp.get_json()["error"]
    resp = client.post("/api/label", json={"id": "r000", "labels": {"mood": "x"}})
    assert resp.status_code == 400 and "unknown schema 'mood'" in resp.get_json()["error"]
    resp = client.post("/api/label", json={"id": "zzz", "labels": {"sentiment": "positive"}})
    assert resp.status_code == 400
    assert client.post("/api/label", json=[1, 2]).status_code == 400
    assert client.post("/api/label", data="not json").status_code == 400
    assert client.post("/api/label", json={"id": "r000", "labels": "positive"}).status_code == 400
    assert app.extensions["potato"].labels.count() == 0


def test_api_needs_login(client: Any) -> None:
    resp = client.post("/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}})
    assert resp.status_code == 401


def test_resume_on_next_unlabelled_item_after_coming_back(client: Any, app: Any) -> None:
    _login(client)
    for i in range(3):
        _label(client, f"r{i:03d}", "positive")
    client.post("/logout")
    _login(client)
    page = client.get("/annotate").get_data(as_text=True)
    first = json.loads(page.split('<script id="first-item" type="application/json">')[1].split("</script>")[0])
    assert first["id"] == "r003" and first["done"] == 3


def test_goto_and_move(client: Any) -> None:
    _login(client)
    assert client.get("/api/item/5").get_json()["item"]["id"] == "r004"
    assert client.get("/api/item/41").status_code == 404
    _label(client, "r001", "negative")
    moved = client.get("/api/move?go=next_unlabelled&from=0").get_json()
    assert moved["item"]["id"] == "r002"


def test_two_annotators_are_independent(app: Any) -> None:
    a, b = app.test_client(), app.test_client()
    _login(a, "alice")
    _login(b, "bob")
    _label(a, "r000", "positive")
    assert b.get("/api/item/1").get_json()["item"]["labels"] == {}


def test_span_sources_believe_a_run_id_only_on_a_span_that_run_suggested() -> None:
    """Issue 23: per-span provenance. The answer is the suggestion's only when nothing was changed."""
    from potato.server.annotate import span_sources

    per = {"start": 0, "end": 3, "label": "PER", "text": "Ada"}
    loc = {"start": 12, "end": 16, "label": "LOC", "text": "Oslo"}
    shown = {"run_id": "r1", "label": [{**per, "confidence": 0.9}, {**loc, "confidence": 0.8}]}
    sent = [{**per, "run_id": "r1"}, {**loc, "run_id": "r1"}]
    assert span_sources([per, loc], sent, shown, "r1") == ([{**per, "run_id": "r1"}, {**loc, "run_id": "r1"}], True)
    # one of two accepted: per-span provenance, the answer is the annotator's
    assert span_sources([per], [{**per, "run_id": "r1"}], shown, "r1") == ([{**per, "run_id": "r1"}], False)
    # a claim for a span the run never suggested, a claim for another run, no suggestion shown
    moved = {**per, "end": 2, "text": "Ad"}
    assert span_sources([moved], [{**moved, "run_id": "r1"}], shown, "r1") == ([moved], False)
    assert span_sources([per], [{**per, "run_id": "r1"}], shown, "r2") == ([per], False)
    assert span_sources([per], [{**per, "run_id": "r1"}], None, "r1") == ([per], False)
    # the model said there is nothing to mark, and the annotator agreed
    assert span_sources([], [], {"run_id": "r1", "label": []}, "r1") == ([], True)


def test_provenance_believes_a_claimed_suggestion_only_when_it_is_what_was_sent() -> None:
    """Provenance for classes and spans through one function: an accepted suggestion is the run's
    only when that run's suggestion shown is the answer; an edited one is the annotator's own."""
    from potato.server.annotate import provenance
    from potato.labels import LabelSource

    human = {"source": LabelSource.HUMAN, "run_id": None}
    shown = {"run_id": "r1", "label": "positive", "confidence": 0.9}
    assert provenance("positive", "positive", shown, "r1", spans=False) == (
        "positive", {"source": LabelSource.SUGGESTION, "run_id": "r1"})
    assert provenance("negative", "negative", shown, "r1", spans=False) == ("negative", human)  # changed
    assert provenance("positive", "positive", shown, "r2", spans=False) == ("positive", human)  # another run
    assert provenance("positive", "positive", None, "r1", spans=False) == ("positive", human)  # none shown
    assert provenance("positive", "positive", shown, None, spans=False) == ("positive", human)  # not accepted
    per = {"start": 0, "end": 3, "label": "PER", "text": "Ada"}
    spans_shown = {"run_id": "r1", "label": [{**per, "confidence": 0.9}]}
    assert provenance([per], [{**per, "run_id": "r1"}], spans_shown, "r1", spans=True) == (
        [{**per, "run_id": "r1"}], {"source": LabelSource.SUGGESTION, "run_id": "r1"})
