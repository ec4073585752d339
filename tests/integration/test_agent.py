"""The agent backend end to end: a real server under gunicorn, real agents as separate processes
(R22, R23, R32-R38, E6, E10). Long constants (the agent's 300 s give-up, the 120 s heartbeat)
are set per test through the config or the agent's own option, never by changing a default."""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path
from typing import Callable

import pytest
import requests

import potato
from potato.training.agent.protocol import Client, Forbidden, TooLarge
from potato.training.agent.reporting import REPORT_RETRY_CAP_S
from tests.harness import procs
from tests.harness.agents import register, token_in
from tests.harness.agentsetup import Setup, _claim, agent_config
from tests.faults.matrix import fault
from tests.harness.runs import H, TERMINAL, label_all, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.waiting import wait_until, worker_pids

pytestmark = pytest.mark.integration


def test_register_prints_the_token_once_with_the_commands_to_run(make_setup: Callable[..., Setup]) -> None:
    """The tutorial's layout (R32), with the command that installs this server's own Potato first, and
    the address the server really serves on: it was started on another port than 8000 (issue 19)."""
    s = make_setup()
    assert s.token and len(s.token) >= 40
    output, token = register(s.config_path, "lab")  # after the server started: its host and port
    assert token != s.token
    assert output.splitlines() == [
        "Token for backend 'lab' (shown once; registering again replaces it):",
        "",
        f"  {token}",
        "",
        "On the training machine:",
        "",
        f'  pip install "potato-annotation[train-sklearn] @ http://127.0.0.1:{s.server.port}/training/agent/v1/'
        'package/potato_annotation-2.14.0-py3-none-any.whl"',
        f"  export POTATO_TRAINING_TOKEN={token}",
        f"  potato training agent --server http://127.0.0.1:{s.server.port} --backend lab",
        "",
        "note: by the server's last start, the server listens on 127.0.0.1 only, which no other machine reaches; "
        "start it with --host 0.0.0.0, or set server.public_url in the config (or --server-url here) to the "
        "address the training machine reaches it under",
    ]
    public, _ = register(s.config_path, "lab", "--public-url", "https://annotate.example.org/", "--extra", "none")
    assert public.splitlines()[6:] == [
        '  pip install "potato-annotation @ https://annotate.example.org/training/agent/v1/package/'
        'potato_annotation-2.14.0-py3-none-any.whl"',
        f"  export POTATO_TRAINING_TOKEN={token_in(public)}",
        "  potato training agent --server https://annotate.example.org --backend lab",
    ]


def test_an_agent_too_old_for_the_protocol_is_told_the_command_that_updates_it(
        make_setup: Callable[..., Setup]) -> None:
    """Every poll carries the agent's version (issue 19); one the server cannot serve gets 426 with the
    pip command of the server's own package, and no job."""
    from potato.training.agent.protocol import ProtocolError

    s = make_setup()
    label_all(s.server, 20)
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    client = Client(s.server.url, s.token)
    with pytest.raises(ProtocolError) as info:
        client.next_job("lab", {"id": "old", "version": "2.12.1"}, 0)
    assert (info.value.status, info.value.code) == (426, "agent_too_old")
    assert str(info.value).startswith("This agent is Potato 2.12.1; this server runs Potato ")
    wheel = requests.get(f"{s.server.url}/training/agent/v1/package/", timeout=10).json()
    assert f'`pip install "potato-annotation @ {wheel["url"]}"`' in str(info.value)
    assert requests.get(wheel["url"], timeout=30).status_code == 200
    assert wait(s.server, run["id"], {"queued"}, timeout=5)["state"] == "queued"  # not handed to it
    job, _ = client.next_job("lab", {"id": "current", "version": potato.__version__}, 0)
    assert job is not None and job["run_id"] == run["id"]


def test_a_run_on_an_agent_scores_writes_back_and_keeps_its_model_there(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    label_all(s.server, 30)
    agent = s.agent()
    agent.wait_for(f"waiting for jobs on lab at {s.server.url}")
    run = start(s.server, trainer="sklearn-text-classification", schemas=["sentiment"], backend="lab")
    done = wait(s.server, run["id"], TERMINAL, timeout=90)
    assert done["state"] == "succeeded", (done, agent.output())
    assert 0.0 <= done["metrics"]["holdout_accuracy"] <= 1.0 and done["metrics"]["n_holdout"] >= 1
    # The model stays on the training machine; the run says where (host and folder).
    host, _, folder = done["artifact_uri"].partition(":")
    assert host == socket.gethostname()
    assert Path(folder) == s.root / "agent" / "jobs" / run["id"] / "artifacts"
    assert (Path(folder) / "labels.json").exists()
    assert not (s.run_dir(run["id"]) / "artifacts").exists()
    assert not (s.root / "agent" / "jobs" / run["id"] / "bundle").exists()  # no --keep
    # Predictions came back and were written back as suggestions.
    export = requests.get(f"{s.server.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
    assert export["count"] == 40
    assert "Writeback:" in done["log_tail"]
    # The agent said what it did in plain lines, and the run keeps them in agent.log.
    out = agent.output()
    assert f"run {run['id']}: downloading the bundle" in out and f"run {run['id']}: succeeded" in out
    assert f"run {run['id']}: reporting the result (succeeded)" in (s.run_dir(run["id"]) / "agent.log").read_text()
    # The page's agent list: connected, with host, Python and the run it executed.
    agents = requests.get(f"{s.server.url}/admin/training/api/agents", headers=H).json()["agents"]
    assert agents[0]["backend"] == "lab" and agents[0]["connected"] is True
    assert agents[0]["agent"]["host"] == socket.gethostname() and agents[0]["agent"]["python"]
    assert agents[0]["agent"]["gpus"] == []


def test_hf_text_classification_runs_on_an_agent(make_setup: Callable[..., Setup], tmp_path: Path) -> None:
    from tests.unit.training.tinybert import build_tiny_bert

    s = make_setup()
    label_all(s.server, 40)
    texts = [item["text"] for item in json.loads((s.root / "data" / "reviews.json").read_text())]
    bert = build_tiny_bert(tmp_path / "bert", texts)
    s.agent()
    run = start(s.server, trainer="hf-text-classification", schemas=["sentiment"], backend="lab",
                params={"base_model": str(bert), "epochs": 2, "batch_size": 16, "max_length": 32})
    done = wait(s.server, run["id"], TERMINAL, timeout=240)
    assert done["state"] == "succeeded", done
    assert done["device"] == "cpu" and "holdout_accuracy" in done["metrics"]
    events = requests.get(f"{s.server.url}/admin/training/api/runs/{run['id']}/events", headers=H).json()["events"]
    assert any(e.get("type") == "progress" and "loss" in e for e in events)  # the page's loss chart


def test_a_run_waits_queued_until_an_agent_polls(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    label_all(s.server, 10)
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    time.sleep(1.5)
    assert requests.get(f"{s.server.url}/admin/training/api/runs/{run['id']}", headers=H).json()["state"] == "queued"
    s.agent("--once")
    assert wait(s.server, run["id"], TERMINAL, timeout=60)["state"] == "succeeded"


def test_queue_timeout_says_no_agent_polled_and_how_to_start_one(make_setup: Callable[..., Setup]) -> None:
    s = make_setup(queue_timeout_s=2)
    label_all(s.server, 10)
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    done = wait(s.server, run["id"], TERMINAL, timeout=30)
    assert done["state"] == "failed" and done["reason"] == "queue_timeout"
    assert "No agent asked for work on backend 'lab' for 2 seconds" in done["message"]
    assert "potato training agent --server" in done["message"] and "--backend lab" in done["message"]


def test_cancel_reaches_the_agent_and_a_worker_ignoring_term_is_killed(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    label_all(s.server, 10)
    agent = s.agent()
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab",
                params={"sleep_s": 60, "ignore_term": True})
    wait_until(lambda: bool(worker_pids(str(s.root))), what="the worker")
    agent.wait_for("starting the worker")
    time.sleep(1.0)  # the worker is inside fit, ignoring SIGTERM
    r = requests.post(f"{s.server.url}/admin/training/api/runs/{run['id']}/cancel", headers=H)
    assert r.status_code == 202
    done = wait(s.server, run["id"], TERMINAL, timeout=30)
    assert done["state"] == "cancelled" and done["reason"] == "cancelled"
    log = requests.get(f"{s.server.url}/admin/training/api/runs/{run['id']}/log", headers=H).text
    assert "sending SIGKILL" in log
    wait_until(lambda: not worker_pids(str(s.root)), what="the worker to be gone")
    agent.wait_for(f"waiting for jobs on lab at {s.server.url}")  # and it waits for the next job


@fault("The agent and its reports", "The agent hangs (SIGSTOP) during a run on the agent backend",
       "After heartbeat_timeout_s the run fails; woken up, the agent hears the run is over and stops its worker",
       "'No word from the agent on lab for 3 seconds', with the agent's last lines in agent.log")
def test_heartbeat_timeout_fails_a_run_whose_agent_went_silent(make_setup: Callable[..., Setup]) -> None:
    s = make_setup(heartbeat_timeout_s=3)
    label_all(s.server, 10)
    agent = s.agent()
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 60})
    wait_until(lambda: bool(worker_pids(str(s.root))), what="the worker")
    agent.signal(signal.SIGSTOP)
    try:
        done = wait(s.server, run["id"], TERMINAL, timeout=30)
    finally:
        agent.signal(signal.SIGCONT)
    assert done["state"] == "failed" and done["reason"] == "agent_lost"
    assert done["message"].startswith("No word from the agent on lab for 3 seconds")
    assert (s.run_dir(run["id"]) / "agent.log").read_text().strip()  # its last words are kept
    # Woken up, the agent hears that the run is over and stops its worker.
    agent.wait_for("no longer takes reports", timeout=20)
    wait_until(lambda: not worker_pids(str(s.root)), what="the worker to be stopped")


@fault("The agent and its reports", "The network between agent and server is cut for longer than the agent's patience (300 s; 3 s in the test, a proxy that stops forwarding)",
       "The agent stops its worker and keeps running, waiting for the server",
       "The agent's output: 'could not reach the server for 3 s and stopped the run itself'")
def test_an_agent_cut_off_from_the_server_stops_the_run_itself(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    label_all(s.server, 10)
    proxy = s.proxy()
    agent = s.agent("--give-up-after", "3", url=proxy.url)
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 120})
    wait_until(lambda: bool(worker_pids(str(s.root))), what="the worker")
    proxy.block()
    agent.wait_for("could not reach the server for 3 s and stopped the run itself", timeout=30)
    wait_until(lambda: not worker_pids(str(s.root)), timeout=20, what="the worker to be stopped")
    assert agent.proc.poll() is None, "a network outage must never end the agent"
    assert requests.get(f"{s.server.url}/admin/training/api/runs/{run['id']}", headers=H).json()["state"] == "running"


@fault("The agent and its reports", "The bundle download breaks off mid-file",
       "The agent resumes it where it stopped (Range) and checks its SHA-256 before extracting",
       "The run succeeds; the agent's output names the break and the resume")
def test_a_bundle_download_cut_mid_file_resumes_and_is_verified(make_setup: Callable[..., Setup]) -> None:
    s = make_setup(n_items=3000)
    label_all(s.server, 40)
    proxy = s.proxy()
    proxy.cut_first_response_after(5_000)
    agent = s.agent("--once", url=proxy.url)
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    done = wait(s.server, run["id"], TERMINAL, timeout=90)
    assert done["state"] == "succeeded", (done, agent.output())
    size = (s.run_dir(run["id"]) / "bundle.tar.gz").stat().st_size
    assert size > 10_000
    out = agent.output()
    assert "the bundle download broke off at" in out and "resuming" in out
    assert done["bundle_sha256"] and done["metrics"]["n_train"] >= 1


@fault("Tokens and secrets", "A backend token is used again after the backend was registered again (token replay)",
       "Refused (401 token_replaced); the agent holding it exits naming the command that issues a new one",
       "The agent's output: 'was replaced' and `potato training register lab config.yaml`")
def test_registering_again_locks_out_the_old_token(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    agent = s.agent()
    agent.wait_for("waiting for jobs on lab")
    _, new_token = register(s.config_path, "lab")
    assert new_token != s.token
    code = agent.wait_exit(timeout=60)  # its next poll is refused
    assert code == 3
    out = agent.output()
    assert "was replaced" in out and "potato training register lab config.yaml" in out
    r = requests.post(f"{s.server.url}/training/agent/v1/jobs/next", json={"backend": "lab", "wait_s": 0},
                      headers={"Authorization": f"Bearer {s.token}"})
    assert r.status_code == 401 and r.json()["code"] == "token_replaced"
    fresh = s.agent("--once", token=new_token, name="agent2")
    fresh.wait_for("waiting for jobs on lab")


@fault("The agent and its reports", "A predictions upload over max_predictions_mb",
       "413 before it is stored; the run fails; its events, log and the project's labels stay as they were",
       "The run's message names max_predictions_mb and how to raise it", "the oversized upload")
def test_a_refused_predictions_upload_fails_the_run_and_keeps_what_it_had(make_setup: Callable[..., Setup],
                                                                         tmp_path: Path) -> None:
    s = make_setup()
    s.config_path.write_text(s.config_path.read_text().replace("grace_seconds: 2", "grace_seconds: 2\n  max_predictions_mb: 1"))
    s.server.stop()
    s.server = ServerProcess(s.config_path, port=s.server.port).start()
    label_all(s.server, 10)
    labels_before = requests.get(f"{s.server.url}/admin/api/labels?user=gold", headers=H).json()["labels"]
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    run_id, token = _claim(s)
    client = Client(s.server.url, token)
    client.events(run_id, 0, [{"type": "step", "text": "training"}, {"type": "progress", "step": 1, "total": 2}], [])
    big = tmp_path / "predictions.jsonl"
    line = json.dumps({"item_id": "r000", "schema": "sentiment", "label": "positive", "confidence": 0.9}) + "\n"
    big.write_text(line * (2 * 1024 * 1024 // len(line)))
    with pytest.raises(TooLarge) as refused:
        client.put_predictions(run_id, big)
    assert "max_predictions_mb (1 MB)" in str(refused.value)
    done = requests.get(f"{s.server.url}/admin/training/api/runs/{run['id']}", headers=H).json()
    assert done["state"] == "failed" and "max_predictions_mb" in done["message"]
    events = requests.get(f"{s.server.url}/admin/training/api/runs/{run_id}/events", headers=H).json()["events"]
    assert [e["type"] for e in events] == ["step", "progress"]
    assert "step: training" in done["log_tail"]
    assert not list(s.run_dir(run_id).glob("predictions*"))
    assert requests.get(f"{s.server.url}/admin/api/labels?user=gold", headers=H).json()["labels"] == labels_before


@fault("Tokens and secrets", "Another run's token, or none, on a run's routes",
       "403 (another run's token) or 401 on every route; nothing recorded", "The agent's error names the rule")
def test_a_run_token_opens_only_its_own_run(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    label_all(s.server, 10)
    first = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    first_id, first_token = _claim(s)
    assert first_id == first["id"]
    requests.post(f"{s.server.url}/admin/training/api/runs/{first_id}/cancel", headers=H)
    wait(s.server, first_id, TERMINAL, timeout=30)
    start(s.server, trainer="noop", schemas=["sentiment"], backend="lab")
    second_id, second_token = _claim(s)
    with pytest.raises(Forbidden):
        Client(s.server.url, first_token).events(second_id, 0, [], [])
    for method, route in (("GET", ""), ("GET", "/bundle"), ("POST", "/events"), ("POST", "/result"),
                          ("PUT", "/predictions")):
        r = requests.request(method, f"{s.server.url}/training/agent/v1/runs/{second_id}{route}", json={},
                             headers={"Authorization": f"Bearer {first_token}"})
        assert r.status_code == 403, (route, r.text)
        r = requests.request(method, f"{s.server.url}/training/agent/v1/runs/{second_id}{route}", json={})
        assert r.status_code == 401, (route, r.text)
    assert Client(s.server.url, second_token).events(second_id, 0, [], []) == {"cancel": False}


@fault("Runs and their processes", "kill -9 or SIGTERM of the whole server (gunicorn) during a run on the agent backend, then a restart",
       "The agent retries its reports until the server is back; the run finishes; no event twice",
       "The agent's output: 'cannot reach the server', then 'reached the server again'; the run succeeds")
@pytest.mark.parametrize("stop", ["kill-9", "sigterm"])
def test_a_server_restart_mid_run_loses_nothing(make_setup: Callable[..., Setup], stop: str) -> None:
    s = make_setup()
    label_all(s.server, 10)
    agent = s.agent("--once")
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 6})
    wait_until(lambda: bool(worker_pids(str(s.root))), what="the worker")
    srv_stop = s.server.kill9 if stop == "kill-9" else s.server.stop
    srv_stop()  # SIGTERM: gunicorn's graceful stop; the run's processes live apart from it
    time.sleep(3)
    s.server = ServerProcess(s.config_path, port=s.server.port).start()
    done = wait(s.server, run["id"], TERMINAL, timeout=60)
    assert done["state"] == "succeeded", (done, agent.output())
    assert "cannot reach the server" in agent.output() and "reached the server again" in agent.output()
    events = requests.get(f"{s.server.url}/admin/training/api/runs/{run['id']}/events", headers=H).json()["events"]
    steps = [e["text"] for e in events if e.get("type") == "step"]
    assert len(steps) == len(set(steps)) and any("training" in t for t in steps)
    assert any(e.get("type") == "metric" for e in events)
    assert agent.wait_exit(30) == 0


@pytest.mark.slow
@fault("Runs and their processes",
       "The server is down longer than heartbeat_timeout_s (a restart, an upgrade) while a run trains on the agent backend",
       "The server's downtime is not the agent's silence: after a start each running run gets a whole "
       "heartbeat_timeout_s before it is judged; the agent, retrying all along, reports within it",
       "The agent's output: 'cannot reach the server', then 'reached the server again'; the run succeeds")
def test_a_server_down_longer_than_the_heartbeat_timeout_does_not_fail_a_running_run(
        make_setup: Callable[..., Setup]) -> None:
    """Issue 42: the restarted server counted its own downtime as the agent's silence and failed the run
    ``agent_lost`` at its first look, while the agent was retrying and its worker training. The window
    here is longer than the agent's longest pause between two tries, so an agent that retries always
    makes it; the server stays down longer than the window, so a server that counts its downtime
    fails the run every time."""
    heartbeat = int(REPORT_RETRY_CAP_S) + 5
    s = make_setup(heartbeat_timeout_s=heartbeat)
    label_all(s.server, 10)
    agent = s.agent("--once")
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 2 * heartbeat + 5})
    wait_until(lambda: bool(worker_pids(str(s.root))), what="the worker")
    s.server.stop()
    time.sleep(heartbeat + 1)  # down for longer than the heartbeat window
    assert worker_pids(str(s.root)), "the worker trains on while the server is down"
    s.server = ServerProcess(s.config_path, port=s.server.port).start()
    done = wait(s.server, run["id"], TERMINAL, timeout=120)
    assert done["state"] == "succeeded", (done, agent.output())
    assert "cannot reach the server" in agent.output() and "reached the server again" in agent.output()
    assert agent.wait_exit(30) == 0


@fault("Runs and their processes", "Two agents poll one backend when a run is queued",
       "Exactly one gets the run", "One agent's output names the run")
def test_two_agents_on_one_backend_never_share_a_run(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    label_all(s.server, 10)
    a, b = s.agent(name="a"), s.agent(name="b")
    a.wait_for("waiting for jobs"), b.wait_for("waiting for jobs")
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 2})
    assert wait(s.server, run["id"], TERMINAL, timeout=60)["state"] == "succeeded"
    took = [p for p in (a, b) if f"run {run['id']}: starting the worker" in p.output()]
    assert len(took) == 1


def test_ctrl_c_stops_the_worker_and_reports_the_run_cancelled(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    label_all(s.server, 10)
    agent = s.agent()
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 60})
    wait_until(lambda: bool(worker_pids(str(s.root))), what="the worker")
    agent.signal(signal.SIGINT)
    assert agent.wait_exit(30) == 0
    done = wait(s.server, run["id"], TERMINAL, timeout=10)
    assert done["state"] == "cancelled" and "Stopped on the training machine" in done["message"]
    assert not worker_pids(str(s.root))


@fault("Tokens and secrets", "Anyone reading the command lines, worker environments, logs and run files of an agent-backend and a local run",
       "Finds no backend token: it travels in the environment of the agent only, and the database keeps hashes",
       "Nothing to see")
def test_the_token_appears_in_no_command_line_environment_log_or_run_file(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    label_all(s.server, 10)
    agent = s.agent()
    run = start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 3})
    wait_until(lambda: bool(worker_pids(str(s.root))), what="the worker")
    local = start(s.server, trainer="noop", schemas=["sentiment"], backend="local", params={"sleep_s": 3})
    secrets = [s.token.encode()]
    seen_workers = 0
    deadline = time.monotonic() + 60
    assert s.server.proc is not None
    while time.monotonic() < deadline:
        # This test's processes only: the server (and the local agent and worker it starts) and the agent.
        for pid in procs.descendants(s.server.proc.pid, agent.pid):
            cmdline = b"\0".join(procs.cmdline(pid))
            assert not any(t in cmdline for t in secrets), f"token on the command line of {cmdline!r}"
            if b"potato.training.worker" in cmdline:
                environ = procs.environ(pid)
                if not environ:  # it ended between the two reads
                    continue
                assert b"POTATO_TRAINING_TOKEN" not in environ and not any(t in environ for t in secrets)
                seen_workers += 1
        states = [requests.get(f"{s.server.url}/admin/training/api/runs/{r['id']}", headers=H).json()["state"]
                  for r in (run, local)]
        if all(st in TERMINAL for st in states):
            break
        time.sleep(0.2)
    assert states == ["succeeded", "succeeded"]
    assert seen_workers >= 2
    # Run tokens were handed out too; the database keeps only hashes of any token.
    for path in s.root.rglob("*"):
        if path.is_file() and path.suffix not in (".sqlite3",):
            data = path.read_bytes()
            assert not any(t in data for t in secrets), f"token in {path}"
    db = (s.root / "annotation_output" / "potato.sqlite3").read_bytes()
    assert s.token.encode() not in db


def test_check_on_an_agent_backend(make_project: Callable[..., Path]) -> None:
    import subprocess
    import sys

    config_path = make_project(**agent_config())
    cmd = [sys.executable, "-m", "potato", "training", "check", "lab", str(config_path)]
    before = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert before.returncode == 1
    assert "no token issued yet" in before.stdout and "potato training register lab" in before.stdout
    register(config_path, "lab")
    after = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "token issued" in after.stdout and "last_seen: never" in after.stdout
    # A token without an agent runs nothing: not ok until one polls (issue 21, E10).
    assert after.returncode == 1 and "no agent polls for backend 'lab'" in after.stdout


def test_ctrl_c_twice_exits_at_once_and_takes_the_worker_along(make_setup: Callable[..., Setup]) -> None:
    s = make_setup()
    label_all(s.server, 10)
    agent = s.agent()
    start(s.server, trainer="noop", schemas=["sentiment"], backend="lab", params={"sleep_s": 60, "ignore_term": True})
    wait_until(lambda: bool(worker_pids(str(s.root))), what="the worker")
    agent.wait_for("starting the worker")
    time.sleep(1.0)
    agent.signal(signal.SIGINT)
    agent.wait_for("press Ctrl-C again to exit at once")
    agent.signal(signal.SIGINT)
    assert agent.wait_exit(10) == 130
    wait_until(lambda: not worker_pids(str(s.root)), timeout=10, what="the worker to be gone")
