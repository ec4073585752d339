"""What an agent's uploads and reports must not lose (issue 33, items 2, 5 and the half-close of
item 6), under gunicorn, the way the probe found each:

- an empty ``PUT .../predictions`` answered ``{"received_bytes": 0}``, and the run's result then made
  it the source of the suggestions annotators see, with none: the earlier runs' suggestions vanished;
- ``seq=10`` then ``seq=5``: both answered 200, events 5-9 were dropped as a resend, and run.log said
  they never arrived;
- a predictions upload cut off with a half-close (``shutdown(SHUT_WR)``) got no answer at all.

Each test talks the agent protocol by hand, as another person's agent (or a broken one) would.
"""

from __future__ import annotations

import json
import socket
from typing import Any, Dict, List

import pytest
import requests

from tests.faults.matrix import fault
from tests.harness.agentprotocol import SUCCEEDED, V1, events_of, post, predictions, put, run_of, run_to_the_end
from tests.harness.agentprotocol import claimed  # noqa: F401 - the fixture
from tests.harness.agentsetup import Setup
from tests.harness.agentsetup import make_setup  # noqa: F401 - the fixture
from tests.harness.runs import H, TERMINAL, label_all, wait

pytestmark = pytest.mark.integration


def suggestions(s: Setup, run_id: str) -> Dict[str, Any]:
    return requests.get(f"{s.server.url}/admin/training/api/runs/{run_id}/suggestions", headers=H, timeout=30).json()


def annotators_see(s: Setup, item: int) -> Dict[str, Any]:
    """The suggestions an annotator sees on an item (the annotation page's data)."""
    session = requests.Session()
    session.post(s.server.url + "/login", data={"name": "new"}, timeout=30)
    got: Dict[str, Any] = session.get(f"{s.server.url}/api/item/{item}", timeout=30).json()["item"]["suggestions"]
    return got


@fault("The agent and its reports",
       "After a complete predictions upload, one that is empty, or whose last line is cut off (a truncated file)",
       "Refused with a 400 (empty_upload, incomplete) that says what is wrong and to send it again; the run's "
       "earlier upload stays and is what its result writes back",
       "The agent reads 'The predictions upload is empty ... The run's earlier upload stays.'; annotators see the "
       "complete upload's suggestions", "the refused upload only")
def test_an_empty_or_cut_off_predictions_upload_never_replaces_a_whole_one(
        claimed: tuple[Setup, str, str]) -> None:  # noqa: F811
    s, run_id, token = claimed
    whole = predictions(30)
    assert put(s, token, run_id, whole).json() == {"received_bytes": len(whole)}
    for body in (b"", b"\n \n"):  # the probe's PUT with no body answered {"received_bytes": 0}
        r = put(s, token, run_id, body)
        assert r.status_code == 400 and r.json()["code"] == "empty_upload", r.text
        said = r.json()["error"]
        assert "The predictions upload is empty" in said and "The run's earlier upload stays" in said
        assert "send predictions.jsonl again" in r.json()["error"].lower()
    cut = whole + b'{"item_id": "r030", "schema": "sentiment", "label": "posi'
    r = put(s, token, run_id, cut)
    assert r.status_code == 400 and r.json()["code"] == "incomplete", r.text
    said = r.json()["error"]
    assert "The predictions upload ends in a cut-off line" in said and "The run's earlier upload stays" in said
    # A last line written whole without a newline is no cut: accepted, as a JSON Lines reader takes it.
    r = put(s, token, run_id, whole.rstrip(b"\n"))
    assert r.status_code == 200, r.text
    assert post(s, token, f"/runs/{run_id}/result", SUCCEEDED).json()["state"] == "succeeded"
    assert run_of(s, run_id)["metrics"]["suggestions/written"] == 30
    assert suggestions(s, run_id)["count"] == 30
    assert annotators_see(s, 5)["sentiment"]["run_id"] == run_id


@fault("The agent and its reports",
       "A run ends succeeded with no predictions for a schema it writes back: no upload, an empty predictions.jsonl "
       "(which the agent does not send), or only lines that are not valid predictions",
       "The run shown before stays the source of the suggestions annotators see; the run's log and its card say so, "
       "naming that run",
       "run.log and the run's message: 'This run wrote no predictions for sentiment, so annotators keep the "
       "suggestions of run ...'")
def test_a_run_with_no_predictions_leaves_the_earlier_runs_suggestions_and_says_whose(
        make_setup: Any) -> None:  # noqa: F811
    s = make_setup()
    label_all(s.server, 20)
    first = run_to_the_end(s, predictions(40))
    assert suggestions(s, first)["count"] == 40 and annotators_see(s, 30)["sentiment"]["run_id"] == first
    invalid = b"".join(json.dumps({"item_id": f"r{i:03d}", "schema": "sentiment", "label": "<none of its labels>",
                                   "confidence": 0.9}).encode() + b"\n" for i in range(3))
    for upload, what in ((invalid, "no valid predictions (3 invalid lines)"), (None, "no predictions")):
        later = run_to_the_end(s, upload)
        shown = suggestions(s, later)["shown"]["sentiment"]
        assert shown["run_id"] == first, shown
        assert annotators_see(s, 30)["sentiment"]["run_id"] == first
        done = run_of(s, later)
        said = f"This run wrote {what} for sentiment, so annotators keep the suggestions of run {first}."
        assert done["state"] == "succeeded" and done["message"] == said, done
        assert said in done["log_tail"]
        assert done["metrics"]["suggestions/written"] == 0


def event_texts(first: int, end: int) -> List[Dict[str, Any]]:
    return [{"type": "log", "text": f"event {i}"} for i in range(first, end)]


@fault("The agent and its reports",
       "Event reports out of order: seq 10 arrives before seq 5 (a batch that was late, or sent again after the next)",
       "A batch that starts past the events the server has is refused (400 seq_gap with expected_seq) and nothing of "
       "it is stored; the missing events are sent first, then it again. A resend that overlaps stored events adds "
       "only the new ones. The reference agent sends a batch only after the last was taken",
       "Every event once, in order, in the run's events and run.log; nothing says events never arrived")
def test_a_batch_past_the_servers_count_is_refused_so_late_events_are_kept_in_order(
        claimed: tuple[Setup, str, str]) -> None:  # noqa: F811
    s, run_id, token = claimed
    assert post(s, token, f"/runs/{run_id}/events", {"seq": 0, "events": event_texts(0, 5), "log": []}).status_code == 200
    r = post(s, token, f"/runs/{run_id}/events", {"seq": 10, "events": event_texts(10, 15), "log": ["agent line"]})
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "seq_gap" and r.json()["expected_seq"] == 5
    assert "events 5 to 9 have not arrived" in r.json()["error"] and "seq 5" in r.json()["error"]
    assert [e["text"] for e in events_of(s, run_id)] == [f"event {i}" for i in range(5)]  # nothing of it stored
    # The late batch arrives, then the refused one again, then a resend that overlaps both.
    for seq, end in ((5, 10), (10, 15), (3, 12)):
        lines = ["agent line"] if seq == 10 else []
        r = post(s, token, f"/runs/{run_id}/events", {"seq": seq, "events": event_texts(seq, end), "log": lines})
        assert r.status_code == 200 and r.json() == {"cancel": False}, r.text
    assert [e["text"] for e in events_of(s, run_id)] == [f"event {i}" for i in range(15)]
    log = (s.run_dir(run_id) / "run.log").read_text()
    assert [log.count(f"event {i}\n") for i in range(15)] == [1] * 15
    assert "never arrived" not in log and "have not arrived" not in log
    assert (s.run_dir(run_id) / "agent.log").read_text().count("agent line") == 1  # refused, then taken once


def half_closed_request(s: Setup, head: bytes, body: bytes) -> tuple[int, Dict[str, Any]]:
    """Send ``head`` and ``body``, shut down the sending side, read the answer: (status, JSON body)."""
    with socket.create_connection(("127.0.0.1", s.server.port), timeout=30) as sock:
        sock.sendall(head + body)
        sock.shutdown(socket.SHUT_WR)
        reply = b""
        while True:
            data = sock.recv(65536)
            if not data:
                break
            reply += data
    assert reply, "no answer at all"
    status_line, _, rest = reply.partition(b"\r\n")
    answer_body = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), json.loads(answer_body)


@fault("The agent and its reports",
       "A predictions upload cut off with a half-close: Content-Length N, fewer bytes, then the client shuts down "
       "its sending side and waits for the answer",
       "A JSON 400 (incomplete) saying how many of the N bytes came and to send it again, for a small body (read "
       "by the event loop) and a large one (read by a thread) alike; the run's earlier upload stays",
       "The client reads 'The request's body ended after 600 of 1000 bytes; ... send it again.'",
       "the cut-off upload only")
def test_an_upload_cut_off_by_a_half_close_is_answered_and_replaces_nothing(
        claimed: tuple[Setup, str, str]) -> None:  # noqa: F811
    s, run_id, token = claimed
    whole = predictions(30)
    assert put(s, token, run_id, whole).status_code == 200
    for length in (1000, 3_000_000):  # under and over the 1 MB the event loop collects itself
        head = (f"PUT {V1}/runs/{run_id}/predictions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/x-ndjson\r\nContent-Length: {length}\r\n\r\n").encode()
        status, said = half_closed_request(s, head, predictions(10)[:600])
        assert status == 400 and said["code"] == "incomplete", said
        assert f"ended after 600 of {length} bytes" in said["error"] and "send it again" in said["error"]
    assert post(s, token, f"/runs/{run_id}/result", SUCCEEDED).json()["state"] == "succeeded"
    assert wait(s.server, run_id, TERMINAL)["metrics"]["suggestions/written"] == 30
