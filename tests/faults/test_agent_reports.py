"""Faults in what an agent sends (issue 20), under gunicorn, as a black-box probe found them: text
that is not Unicode, nesting past the parser, a report cut short or sent twice, wild event numbers,
a result after Cancel, bad prediction lines, a flood of events and a disk running out.

Each test talks the agent protocol by hand, as another person's agent (or a broken one) would.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import socket
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from tests.faults.matrix import fault
from tests.harness.agentprotocol import V1, events_of, post, run_of
from tests.harness.agentsetup import Setup, _claim
from tests.harness.agentsetup import make_setup  # noqa: F401 - the fixture
from tests.harness.runs import H, TERMINAL, label_all, start, wait
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration


def restart_with(s: Setup, **training: Any) -> None:
    """The same project with more model_training keys, served again on the same port."""
    text = s.config_path.read_text()
    extra = "".join(f"\n  {key}: {value}" for key, value in training.items())
    s.config_path.write_text(text.replace("grace_seconds: 2", "grace_seconds: 2" + extra, 1))
    s.server.stop()
    s.server = ServerProcess(s.config_path, port=s.server.port).start()


@fault("The agent and its reports", "A report with text that is not Unicode (a lone surrogate, from a file name that is not UTF-8), or JSON nested 50,000 deep, with or without a valid token",
       "Refused with a JSON 400 before anything is recorded; the next good report takes the same numbers. The reference agent replaces such characters with U+FFFD before sending",
       "The agent's log names the refusal; the run goes on, its step line and Cancel keep working")
def test_text_that_is_not_unicode_and_deep_nesting_are_json_400s_that_record_nothing(
        claimed: tuple[Setup, str, str]) -> None:
    s, run_id, token = claimed
    lone = b'{"seq": 0, "events": [{"type": "log", "text": "file \\udcff.txt"}], "log": []}'
    in_log = b'{"seq": 0, "events": [], "log": ["agent \\ud800 line"]}'
    for body in (lone, in_log):
        r = post(s, token, f"/runs/{run_id}/events", body)
        assert r.status_code == 400 and r.headers["Content-Type"].startswith("application/json"), r.text
        assert "lone surrogate" in r.json()["error"]
    nested = b"[" * 50000 + b"]" * 50000
    for bearer in (token, "any-value"):
        r = post(s, bearer, "/jobs/next", nested)
        assert r.status_code == 400 and "nested too deeply" in r.json()["error"], r.text
    r = post(s, s.token, "/jobs/next", b'{"backend": "lab", "agent": {"host": "h\\udc80st"}}')
    assert r.status_code == 400 and r.json()["code"] == "bad_request"
    assert not (s.run_dir(run_id) / "agent.log").exists() and events_of(s, run_id) == []
    # The same numbers are still free: the next good report is recorded whole, once.
    good = {"seq": 0, "events": [{"type": "step", "text": "training"}], "log": ["agent: started"]}
    assert post(s, token, f"/runs/{run_id}/events", good).json() == {"cancel": False}
    assert [e["text"] for e in events_of(s, run_id)] == ["training"]
    assert "Traceback" not in s.server.output()


@fault("The agent and its reports", "A report's reply is lost (sent again, twice), or the server dies while appending one",
       "Each event is stored exactly once: a resent report adds nothing, a report cut short is cut off the file before the next is appended",
       "Every event once in the run's events and run.log")
def test_a_report_is_stored_once_when_resent_and_whole_after_one_was_cut_short(
        claimed: tuple[Setup, str, str]) -> None:
    s, run_id, token = claimed
    first = {"seq": 0, "events": [{"type": "log", "text": f"line {i}"} for i in range(3)], "log": ["agent line A"]}
    for _ in range(3):  # the reply was lost twice: the agent sends the same report again
        assert post(s, token, f"/runs/{run_id}/events", first).status_code == 200
    # A crash while appending the next report leaves half a line behind...
    with (s.run_dir(run_id) / "events.jsonl").open("a") as fh:
        fh.write('{"type": "log", "text": "line 3"}\n{"type": "lo')
    # ...and the agent, having no answer, sends that report again, with one more event.
    second = {"seq": 3, "events": [{"type": "log", "text": "line 3"}, {"type": "log", "text": "line 4"}], "log": []}
    assert post(s, token, f"/runs/{run_id}/events", second).status_code == 200
    assert [e["text"] for e in events_of(s, run_id)] == [f"line {i}" for i in range(5)]
    lines = (s.run_dir(run_id) / "events.jsonl").read_text().splitlines()
    assert [json.loads(x)["text"] for x in lines] == [f"line {i}" for i in range(5)]
    assert (s.run_dir(run_id) / "agent.log").read_text().count("agent line A") == 1


@fault("The agent and its reports", "A report numbered 2^53, or past the events the server has (a gap)",
       "A 400 that records nothing: bad_request past the documented range, seq_gap with the count to send from",
       "The agent is told the count; reports from it are recorded, and Cancel still works")
def test_event_numbers_past_the_documented_range_or_past_the_servers_count_are_refused(
        claimed: tuple[Setup, str, str]) -> None:
    """A gap was recorded as 'never arrived' until issue 33, and the skipped events were then dropped
    as a resend when they came (test_agent_uploads_and_order.py has that case)."""
    s, run_id, token = claimed
    for seq in (2**53, 2**53 - 1, 10**6):
        r = post(s, token, f"/runs/{run_id}/events", {"seq": seq, "events": [{"type": "log", "text": "x"}], "log": []})
        assert r.status_code == 400, (seq, r.text)
    # Nothing was blinded: reports numbered from 0 are recorded.
    post(s, token, f"/runs/{run_id}/events", {"seq": 0, "events": [{"type": "log", "text": "a"}], "log": []})
    # A report past the server's count is refused, naming the count; sent from it, it is recorded.
    r = post(s, token, f"/runs/{run_id}/events", {"seq": 5, "events": [{"type": "step", "text": "after"}], "log": []})
    assert r.status_code == 400 and r.json()["code"] == "seq_gap" and r.json()["expected_seq"] == 1, r.text
    assert [e["text"] for e in events_of(s, run_id)] == ["a"]
    post(s, token, f"/runs/{run_id}/events", {"seq": 1, "events": [{"type": "step", "text": "after"}], "log": []})
    assert [e["text"] for e in events_of(s, run_id)] == ["a", "after"]
    assert run_of(s, run_id)["step"] == "after" and "never arrived" not in run_of(s, run_id)["log_tail"]
    requests.post(f"{s.server.url}/admin/training/api/runs/{run_id}/cancel", headers=H)
    r = post(s, token, f"/runs/{run_id}/events", {"seq": 2, "events": [], "log": []})
    assert r.json()["cancel"] is True


@fault("Runs and their processes", "Within grace_seconds of Cancel, the agent reports the worker succeeded",
       "The run ends cancelled; its predictions are not written back",
       "The run is cancelled, and no suggestion of it is shown")
def test_an_admins_cancel_is_final_whatever_the_agent_reports_afterwards(claimed: tuple[Setup, str, str],
                                                                       tmp_path: Path) -> None:
    s, run_id, token = claimed
    post(s, token, f"/runs/{run_id}/events", {"seq": 0, "events": [{"type": "step", "text": "training"}], "log": []})
    assert requests.post(f"{s.server.url}/admin/training/api/runs/{run_id}/cancel", headers=H).status_code == 202
    predictions = "".join(json.dumps({"item_id": f"r{i:03d}", "schema": "sentiment", "label": "positive",
                                      "confidence": 0.9}) + "\n" for i in range(20))
    r = requests.put(f"{s.server.url}{V1}/runs/{run_id}/predictions", data=predictions.encode(),
                     headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200
    result = {"exit_code": 0, "result": {"status": "succeeded", "metrics": {"holdout_accuracy": 1.0}}, "log": []}
    post(s, token, f"/runs/{run_id}/result", result)
    done = wait(s.server, run_id, TERMINAL, timeout=30)
    assert done["state"] == "cancelled", done
    got = requests.get(f"{s.server.url}/admin/training/api/runs/{run_id}/suggestions", headers=H).json()
    assert got["count"] == 0 and got["shown"] == {}


@fault("The agent and its reports", "predictions.jsonl holds a line nested 200,000 deep, bytes that are not UTF-8, NaN, or no JSON at all",
       "Each bad line is counted invalid; the good lines become suggestions and the run succeeds",
       "The run's metrics: suggestions/written and suggestions/invalid", "the bad lines only")
def test_every_bad_prediction_line_is_counted_invalid_and_the_good_ones_are_written(
        claimed: tuple[Setup, str, str]) -> None:
    s, run_id, token = claimed
    good = [json.dumps({"item_id": f"r{i:03d}", "schema": "sentiment", "label": "positive", "confidence": 0.8})
            for i in range(10)]
    bad = [b"[" * 200000 + b"]" * 200000, b'{"item_id": "r011", "schema": "sentiment", "label": "\xff\xfe"}',
           b"not json", b'{"item_id": "r012", "schema": "sentiment", "label": "positive", "confidence": NaN}']
    body = b"\n".join([g.encode() for g in good[:5]] + bad + [g.encode() for g in good[5:]]) + b"\n"
    r = requests.put(f"{s.server.url}{V1}/runs/{run_id}/predictions", data=body,
                     headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    result = {"exit_code": 0, "result": {"status": "succeeded", "metrics": {"holdout_accuracy": 0.9}}, "log": []}
    assert post(s, token, f"/runs/{run_id}/result", result).json()["state"] == "succeeded"
    done = run_of(s, run_id)
    assert done["metrics"]["suggestions/written"] == 10 and done["metrics"]["suggestions/invalid"] == 4, done
    assert "Traceback" not in s.server.output()


@fault("The disk", "A run token's holder posts 24 MB of events and log lines in a second",
       "Past about 1 MB/s (8 MB bursts) reports get 429 and are sent again later; past max_run_log_mb the text is not kept",
       "run.log says each limit once; the step line and progress still follow the run",
       "event and log text past max_run_log_mb")
def test_a_flood_of_events_is_capped_in_bytes_and_per_second_and_says_so(
        make_setup: Callable[..., Setup]) -> None:  # noqa: F811
    s = make_setup()
    restart_with(s, max_run_log_mb=3)
    label_all(s.server, 20)
    start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    run_id, token = _claim(s)
    text = "x" * 1000
    answers = []
    seq = 0
    for n in range(6):  # six posts of ~4 MB each, back to back, as the probe sent them
        batch = [{"type": "log", "text": text} for _ in range(2000)] + [{"type": "step", "text": f"step {n}"}]
        r = post(s, token, f"/runs/{run_id}/events", {"seq": seq, "events": batch, "log": [text] * 500})
        answers.append(r.status_code)
        if r.status_code == 200:
            seq += len(batch)
        else:
            assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1, r.text
    assert 429 in answers and answers[0] == 200, answers
    written = sum((s.run_dir(run_id) / name).stat().st_size for name in ("events.jsonl", "run.log", "agent.log")
                  if (s.run_dir(run_id) / name).exists())
    assert written < 8 * 1024 * 1024, written  # the 3 MB budget, plus one report that crossed it and the notes
    log = (s.run_dir(run_id) / "run.log").read_text()
    assert log.count("reached max_run_log_mb (3 MB)") == 1 and log.count("more than 1 MB per second") == 1
    assert run_of(s, run_id)["step"].startswith("step ")  # the step line still follows the run


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    from tests.harness.disks import tmpfs

    yield from tmpfs(tmp_path, "24m")


@fault("The disk", "The disk fills up while a run reports (its free space falls below disk_reserve_mb)",
       "The report is refused (507) and the run fails; the next run fails before building its bundle; annotators' labels still save into the reserve",
       "The run's message names the disk, disk_reserve_mb and how to free space")
def test_training_cannot_take_the_disk_space_kept_for_annotators(make_project: Callable[..., Path],
                                                                 small_disk: Path) -> None:
    from tests.harness.agents import register
    from tests.harness.agentsetup import agent_config

    raw = agent_config()
    raw["model_training"]["disk_reserve_mb"] = 8
    config = make_project(output_annotation_dir=str(small_disk / "out"), **raw)
    _, backend_token = register(config, "lab")
    srv = ServerProcess(config).start()
    try:
        label_all(srv, 20)
        run = start(srv, trainer="noop", schemas=["sentiment"], backend="lab")
        r = requests.post(f"{srv.url}{V1}/jobs/next", json={"backend": "lab", "agent": {"id": "t"}, "wait_s": 5},
                          headers={"Authorization": f"Bearer {backend_token}"})
        run_id, token = r.json()["run_id"], r.json()["run_token"]
        assert run_id == run["id"]
        filler = small_disk / "filler"
        free = shutil.disk_usage(small_disk).free
        with filler.open("wb") as fh:  # leave 6 MB: inside the 8 MB reserve
            fh.write(b"\0" * (free - 6 * 1024 * 1024))
        r = requests.post(f"{srv.url}{V1}/runs/{run_id}/events", headers={"Authorization": f"Bearer {token}"},
                          json={"seq": 0, "events": [{"type": "log", "text": "y" * 1000}] * 100, "log": []})
        assert r.status_code == 507 and r.json()["code"] == "disk_reserve", r.text
        done = requests.get(f"{srv.url}/admin/training/api/runs/{run_id}", headers=H).json()
        assert done["state"] == "failed" and "disk_reserve_mb (8 MB)" in done["message"], done
        ann = requests.Session()
        ann.post(srv.url + "/login", data={"name": "ann"})
        saved = ann.post(srv.url + "/api/label", json={"id": "r030", "labels": {"sentiment": "positive"}})
        assert saved.status_code == 200, saved.text  # the annotators' share is still there
        # The next run is refused before its bundle takes any of it.
        second = start(srv, trainer="noop", schemas=["sentiment"], backend="lab")
        requests.post(f"{srv.url}{V1}/jobs/next", json={"backend": "lab", "agent": {"id": "t"}, "wait_s": 1},
                      headers={"Authorization": f"Bearer {backend_token}"})
        refused = requests.get(f"{srv.url}/admin/training/api/runs/{second['id']}", headers=H).json()
        assert refused["state"] == "failed" and "disk_reserve_mb" in refused["message"], refused
    finally:
        srv.stop()
    assert "Traceback" not in srv.output()


@fault("The agent and its reports", "An agent stops (Ctrl-C) while its long poll is open; the next run is handed to that poll",
       "A job not confirmed (bundle fetched or a report sent) within 20 s goes back to the queue; the next agent runs it",
       "run.log: the agent on <host> did not fetch it within 20 s; the run is back in the queue. The run succeeds")
def test_a_job_sent_to_an_agent_that_just_stopped_goes_to_the_next_agent(
        make_setup: Callable[..., Setup]) -> None:  # noqa: F811
    """Agent A's long poll is open when A stops (Ctrl-C); the run started next is handed to that poll,
    whose answer nobody reads. It must come back to the queue for agent B, not fail as silent."""
    s = make_setup(heartbeat_timeout_s=15)
    label_all(s.server, 20)
    body = json.dumps({"backend": "lab", "agent": {"id": "agent-a", "host": "stopped-host"}, "wait_s": 25}).encode()
    stale = socket.create_connection(("127.0.0.1", s.server.port))
    stale.sendall(b"POST " + V1.encode() + b"/jobs/next HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Authorization: Bearer " + s.token.encode() + b"\r\nContent-Length: " + str(len(body)).encode()
                  + b"\r\n\r\n" + body)
    time.sleep(1)  # the poll is waiting on the server
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    deadline = time.monotonic() + 30
    while (run_of(s, run["id"]).get("agent") or {}).get("id") != "agent-a":
        assert time.monotonic() < deadline, run_of(s, run["id"])
        time.sleep(0.1)
    stale.close()  # agent A is gone; its job reply is never read
    agent_b = s.agent(name="agent-b")
    done = wait(s.server, run["id"], TERMINAL, timeout=120)
    assert done["state"] == "succeeded", done
    log = (s.run_dir(run["id"]) / "run.log").read_text()
    assert "The agent on stopped-host was sent this job but did not fetch it within 20 s" in log
    assert "the run is back in the queue" in log
    assert run["id"] in agent_b.output()


@fault("The agent and its reports", "The bundle download breaks off at a random offset, 20 times over (each cut at another place)",
       "Each download resumes where it stopped (Range) and is checked against the bundle's SHA-256 before it is used",
       "The agent's output names each break; the bundle is whole")
def test_a_bundle_download_cut_at_twenty_random_offsets_always_resumes_whole(
        make_setup: Callable[..., Setup], tmp_path: Path) -> None:  # noqa: F811
    from potato.training.agent.protocol import Client

    s = make_setup(n_items=2000)
    label_all(s.server, 40)
    start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    run_id, token = _claim(s)
    job = Client(s.server.url, token).job(run_id)
    size, sha = job["bundle"]["size"], job["bundle"]["sha256"]
    rng = random.Random(20)
    for n in range(20):
        proxy = s.proxy()
        proxy.cut_first_response_after(rng.randrange(200, size + 150))  # the reply's head is ~200 bytes
        said: list[str] = []
        dest = tmp_path / f"bundle-{n}.tar.gz"
        Client(proxy.url, token).download_bundle(run_id, dest, size, sha, say=said.append, sleep=lambda s: None)
        assert hashlib.sha256(dest.read_bytes()).hexdigest() == sha
        assert said and "resuming" in said[0], said  # it did break, and came back
        assert not dest.with_name(dest.name + ".part").exists()


@fault("Runs and their processes", "kill -9 of the agent (agent backend) while its worker trains",
       "The worker ends with it (its stdin, a pipe only the agent held, closes); the run fails after heartbeat_timeout_s; the next agent's run runs alone",
       "'No word from the agent on lab for 5 seconds'; the next run succeeds")
def test_kill_9_of_the_agent_ends_its_worker_and_the_next_run_runs_alone(
        make_setup: Callable[..., Setup]) -> None:  # noqa: F811
    from tests.harness.waiting import wait_until, worker_pids

    s = make_setup(heartbeat_timeout_s=5)
    label_all(s.server, 20)
    first = s.agent(name="first")
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 120})
    wait_until(lambda: bool(worker_pids(str(s.root / "first"))), what="the worker")
    first.signal(signal.SIGKILL)
    wait_until(lambda: not worker_pids(str(s.root / "first")), timeout=30, what="the orphaned worker to end")
    done = wait(s.server, run["id"], TERMINAL, timeout=30)
    assert done["state"] == "failed" and done["message"].startswith("No word from the agent on lab for 5 seconds")
    second = s.agent(name="second")
    again = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 2})
    alive: list[int] = []
    while run_of(s, again["id"])["state"] not in TERMINAL:
        alive.append(len(worker_pids(str(s.root))))
        time.sleep(0.2)
    assert run_of(s, again["id"])["state"] == "succeeded" and max(alive, default=0) <= 1, alive
    assert again["id"] in second.output()


@fault("Annotators and the server", "The server is stopped (SIGTERM: a restart, an upgrade) while agents' long polls are waiting",
       "Each waiting poll is answered 204 at once and the server ends promptly, instead of holding the shutdown for 25 s",
       "The agents ask again; the restarted server answers them")
def test_stopping_the_server_answers_waiting_long_polls_instead_of_holding_the_shutdown(
        make_setup: Callable[..., Setup]) -> None:  # noqa: F811
    s = make_setup()
    body = json.dumps({"backend": "lab", "agent": {"id": "idle"}, "wait_s": 25}).encode()
    polls = []
    for _ in range(2):
        sock = socket.create_connection(("127.0.0.1", s.server.port))
        sock.sendall(b"POST " + V1.encode() + b"/jobs/next HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Authorization: Bearer " + s.token.encode() + b"\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n\r\n" + body)
        sock.settimeout(30)
        polls.append(sock)
    time.sleep(1.5)  # both are held by the server
    assert s.server.proc is not None
    asked = time.monotonic()
    os.killpg(s.server.proc.pid, signal.SIGTERM)
    try:
        answers = [sock.recv(200) for sock in polls]
    finally:
        for sock in polls:
            sock.close()
    # Answered because the server is stopping, not because the 25 s each poll asked for ran out.
    assert time.monotonic() - asked < 20, "the waiting polls held the shutdown until their own end"
    assert all(a.startswith(b"HTTP/1.1 204") for a in answers), answers
    code = s.server.proc.wait(timeout=60)
    assert code == 0, code  # it ended by itself, not killed after the graceful timeout
