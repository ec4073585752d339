"""The agent's side of issue 33 (items 2 and 5), without sockets: which predictions.jsonl is whole
(the check the agent and the server share), what the agent does with an empty or cut-off file and
with a refused upload, and how it answers ``seq_gap``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from potato.training.agent import protocol
from potato.training.agent.program import Agent
from potato.training.agent.job import UPLOAD_TRIES
from potato.training.agent.protocol import CUT_OFF, EMPTY_UPLOAD, ProtocolError, SeqGap, last_line, predictions_problem
from potato.training.agent.reporting import Console, Reporter
from potato.training.launch.supervise import Ending

ROW = json.dumps({"item_id": "r000", "schema": "sentiment", "label": "positive", "confidence": 0.9})


@pytest.mark.parametrize("text, code", [
    ("", EMPTY_UPLOAD),
    ("\n  \n\r\n", EMPTY_UPLOAD),
    (ROW + "\n" + ROW[:30], CUT_OFF),  # cut mid-line: the probe's truncated upload
    (ROW + "\n" + ROW[:-1], CUT_OFF),  # cut just before the closing brace
    (ROW + "\n" + ROW, None),  # a whole last line without a newline: JSON Lines readers take it
    (ROW + "\n" + ROW + "\n\n  \n", None),
    (ROW + "\nnot json\n", None),  # written whole by the worker: one invalid line, counted at writeback
])
def test_a_predictions_file_is_whole_unless_empty_or_cut_off_mid_line(tmp_path: Path, text: str,
                                                                      code: Optional[str]) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text(text, encoding="utf-8")
    problem = predictions_problem(path)
    assert (problem[0] if problem else None) == code, problem


def test_the_last_line_is_found_from_the_end_across_read_blocks(tmp_path: Path) -> None:
    long_row = json.dumps({"item_id": "r1", "schema": "names", "label": "x" * 200_000, "confidence": 0.5})
    path = tmp_path / "predictions.jsonl"
    path.write_text(ROW + "\n" + long_row + "\n" + " " * 100_000, encoding="utf-8")
    assert last_line(path) == (long_row.encode(), True)
    path.write_text(ROW + "\n" + long_row[:150_000], encoding="utf-8")
    problem = predictions_problem(path)
    assert problem is not None and problem[0] == CUT_OFF and "150000 bytes" in problem[1]


class Server:
    """A stand-in for the server's run routes: what the agent uploaded and reported."""

    def __init__(self, refusals: List[ProtocolError] = ()) -> None:  # type: ignore[assignment]
        self.refusals = list(refusals)
        self.uploads: List[bytes] = []
        self.results: List[Dict[str, Any]] = []

    def put_predictions(self, run_id: str, path: Path) -> Dict[str, Any]:
        self.uploads.append(path.read_bytes())
        if self.refusals:
            raise self.refusals.pop(0)
        return {"received_bytes": path.stat().st_size}

    def result(self, run_id: str, report: Dict[str, Any]) -> Dict[str, Any]:
        self.results.append(report)
        return {"state": "failed" if report["stop"] else "succeeded"}

    def events(self, run_id: str, seq: int, events: list, log: list) -> Dict[str, Any]:
        return {"cancel": False}


def finish(tmp_path: Path, server: Server, predictions: Optional[str]) -> tuple[Dict[str, Any], str]:
    """The agent's end of a run whose worker succeeded and wrote ``predictions`` (None: no file):
    what it reported, and what it said."""
    job_dir = tmp_path / "jobs" / "r1"
    job_dir.mkdir(parents=True)
    if predictions is not None:
        (job_dir / "predictions.jsonl").write_text(predictions, encoding="utf-8")
    out = io.StringIO()
    agent = Agent(server, "lab", tmp_path, console=Console(out), sleep=lambda s: None)  # type: ignore[arg-type]
    reporter = Reporter(server, "r1", agent.console)  # type: ignore[arg-type]
    agent._finish({"run_id": "r1"}, server, job_dir, reporter,  # type: ignore[arg-type]
                  Ending(0, {"status": "succeeded"}, None))
    assert len(server.results) == 1, out.getvalue()  # never left to time out on the server
    return server.results[0], out.getvalue()


def test_an_empty_predictions_file_is_not_uploaded_and_the_run_still_reports_success(tmp_path: Path) -> None:
    """The server refuses an empty upload (it replaced the earlier runs' suggestions with none): the
    agent does not send one, and reports the run, whose result then keeps the suggestions shown."""
    server = Server()
    report, said = finish(tmp_path, server, "")
    assert server.uploads == [] and report["stop"] is None
    assert "the worker wrote no predictions; nothing to upload" in said


def test_a_cut_off_predictions_file_fails_the_run_saying_so_and_is_not_uploaded(tmp_path: Path) -> None:
    server = Server()
    report, _ = finish(tmp_path, server, ROW + "\n" + ROW[:20])
    assert server.uploads == []
    assert report["stop"]["reason"] == "error" and "predictions.jsonl" in report["stop"]["message"]
    assert "cut-off line" in report["stop"]["message"]


def test_an_upload_the_server_got_cut_short_is_sent_again_then_the_run_fails_saying_why(tmp_path: Path) -> None:
    cut = ProtocolError(400, "The upload ended after 10 of 80 bytes; send it again.", CUT_OFF)
    server = Server([cut])
    report, said = finish(tmp_path, server, ROW + "\n")
    assert len(server.uploads) == 2 and report["stop"] is None and "sending them again" in said
    server = Server([cut] * UPLOAD_TRIES)
    report, _ = finish(tmp_path / "again", server, ROW + "\n")
    assert len(server.uploads) == UPLOAD_TRIES
    assert report["stop"]["reason"] == "error" and "ended after 10 of 80 bytes" in report["stop"]["message"]
    other = ProtocolError(400, "The predictions upload is empty: it holds no line; ...", EMPTY_UPLOAD)
    server = Server([other])
    report, _ = finish(tmp_path / "other", server, ROW + "\n")
    assert len(server.uploads) == 1 and "is empty" in report["stop"]["message"]


class Counting:
    """Keeps events as the server does, refusing a batch past its count with ``seq_gap``."""

    def __init__(self) -> None:
        self.events: List[Dict[str, Any]] = []

    def events_call(self, run_id: str, seq: int, events: list, log: list) -> Dict[str, Any]:
        if seq > len(self.events):
            raise SeqGap(400, f"seq {seq} is past the {len(self.events)} events this run has", "seq_gap",
                         len(self.events))
        self.events.extend(events[len(self.events) - seq:])
        return {"cancel": False}


def test_an_agent_told_the_server_has_fewer_events_than_it_acknowledged_goes_on_from_that_count() -> None:
    """Issue 33 item 5: a batch past the server's count is refused with the count. This agent sends a
    batch only after the last was taken, so the server lost acknowledged ones (restored from a
    backup): the agent numbers its batch from the count and sends it again, dropping nothing more."""
    server, out = Counting(), io.StringIO()
    client: Any = type("C", (), {"events": lambda self, *a: server.events_call(*a)})()
    rep = Reporter(client, "r1", Console(out, lambda: 0.0), 300, lambda: 0.0)
    rep.add({"type": "log", "text": "one"})
    assert rep.flush_once()
    rep.add({"type": "log", "text": "two"})
    assert rep.flush_once()
    del server.events[1:]  # the server's record goes back to one event
    rep.add({"type": "log", "text": "three"})
    assert not rep.flush_once() and rep.seq == 1 and rep.pending == [{"type": "log", "text": "three", "t": 0.0}]
    assert rep.flush_once()
    assert [e["text"] for e in server.events] == ["one", "three"] and rep.seq == 2
    assert "the server has 1 of the 2 events it acknowledged" in out.getvalue()


def test_the_client_reads_seq_gap_with_its_count() -> None:
    error = protocol._error_from(400, {"error": "seq 9 is past ...", "code": "seq_gap", "expected_seq": 4})
    assert isinstance(error, SeqGap) and error.expected_seq == 4
    plain = protocol._error_from(400, {"error": "bad", "code": "seq_gap"})  # an older server: no count
    assert type(plain) is ProtocolError
