"""Issue 3 under gunicorn: real local runs, queueing (R4), cancel TERM->KILL (R22), wall limit (R3),
writeback (C5), holdout score (C6), restart recovery."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

from tests.conftest import ADMIN_KEY, truth
from tests.harness.runs import TERMINAL, label_all, start, training_config, wait
from tests.harness.servers import ServerProcess
from tests.faults.matrix import fault

pytestmark = pytest.mark.integration
H = {"X-API-Key": ADMIN_KEY}


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    srv = ServerProcess(make_project(**training_config())).start()
    yield srv
    srv.stop()


def test_sklearn_run_scores_and_writes_back(server: ServerProcess) -> None:
    label_all(server, 30)
    run = start(server, trainer="sklearn-text-classification", schemas=["sentiment"], backend="local")
    done = wait(server, run["id"], TERMINAL)
    assert done["state"] == "succeeded", done
    assert done["backend"] == "local" and done["metrics"]["n_holdout"] >= 1
    assert 0.0 <= done["metrics"]["holdout_accuracy"] <= 1.0
    assert "Writeback:" in done["log_tail"]
    # An annotator sees the model's suggestion on an unlabelled item, marked with its run, not preselected.
    s = requests.Session()
    s.post(server.url + "/login", data={"name": "new"})
    item = s.get(server.url + "/api/item/36").json()["item"]
    sug = item["suggestions"]["sentiment"]
    assert sug["run_id"] == run["id"] and sug["trainer"] == "sklearn-text-classification"
    assert sug["label"] in ("positive", "negative") and 0 <= sug["confidence"] <= 1
    assert item["labels"] == {}
    # Accepting stores it as the annotator's label, flagged with the run.
    r = s.post(server.url + "/api/label", json={"id": item["id"], "labels": {"sentiment": sug["label"]},
                                                 "accepted": {"sentiment": run["id"]}})
    assert r.status_code == 200
    rows = requests.get(server.url + "/admin/api/labels?user=new", headers=H).json()["labels"]
    assert rows[0]["source"] == "suggestion" and rows[0]["run_id"] == run["id"]
    # Gold labels were never overwritten by the run.
    gold = requests.get(server.url + "/admin/api/labels?user=gold", headers=H).json()["labels"]
    assert all(row["source"] == "import" and row["label"] == truth(row["id"]) for row in gold)
    export = requests.get(f"{server.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
    assert export["count"] == 40


def test_second_run_waits_queued_and_cancel_escalates_to_kill(server: ServerProcess) -> None:
    label_all(server, 10)
    first = start(server, trainer="noop", schemas=["sentiment"], params={"sleep_s": 60, "ignore_term": True})
    wait(server, first["id"], {"running"})
    second = start(server, trainer="noop", schemas=["sentiment"], params={"sleep_s": 0})
    time.sleep(1.0)
    assert requests.get(f"{server.url}/admin/training/api/runs/{second['id']}", headers=H).json()["state"] == "queued"
    r = requests.post(f"{server.url}/admin/training/api/runs/{first['id']}/cancel", headers=H)
    assert r.status_code == 202
    done = wait(server, first["id"], TERMINAL, timeout=30)
    assert done["state"] == "cancelled" and done["reason"] == "cancelled"
    log = requests.get(f"{server.url}/admin/training/api/runs/{first['id']}/log", headers=H).text
    assert "sending SIGKILL" in log  # the worker ignored SIGTERM
    assert wait(server, second["id"], TERMINAL)["state"] == "succeeded"


def test_max_wall_seconds_stops_a_run(make_project: Callable[..., Path]) -> None:
    srv = ServerProcess(make_project(**training_config(max_wall_seconds=2))).start()
    try:
        label_all(srv, 10)
        run = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 60})
        done = wait(srv, run["id"], TERMINAL, timeout=40)
        assert done["state"] == "failed" and done["reason"] == "timeout"
        assert "max_wall_seconds (2 s)" in done["message"]
    finally:
        srv.stop()


def test_bad_requests(server: ServerProcess) -> None:
    url = server.url + "/admin/training/api/runs"
    r = requests.post(url, json={"trainer": "noop", "schemas": ["sentiment"], "backend": "mars"}, headers=H)
    assert r.status_code == 409 and "local" in r.json()["error"]
    r = requests.post(url, json={"trainer": "nope", "schemas": ["sentiment"]}, headers=H)
    assert r.status_code == 400 and "sklearn-text-classification" in r.json()["error"]
    r = requests.post(url, json={"trainer": "noop", "schemas": ["note"]}, headers=H)
    assert r.status_code == 400 and "sentiment" in r.json()["error"]
    assert requests.post(url, json={"trainer": "noop"}).status_code == 401


@fault("Runs and their processes",
       "kill -9 of the whole server during a local run, then a restart",
       "The local agent is its own process: the worker goes on, the agent retries its reports, the run finishes",
       "The run succeeds after the restart; no event twice")
def test_a_local_run_outlives_a_server_crash(make_project: Callable[..., Path]) -> None:
    """The local agent is its own process: kill -9 of the whole server loses neither the running
    run nor the queued one (DESIGN: a server restart loses no run)."""
    config_path = make_project(**training_config())
    srv = ServerProcess(config_path).start()
    label_all(srv, 10)
    running = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 6})
    wait(srv, running["id"], {"running"})
    queued = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 120})
    srv.kill9()
    time.sleep(2)
    again = ServerProcess(config_path, port=srv.port).start()  # a restart: same address
    try:
        done = wait(again, running["id"], TERMINAL, timeout=60)
        assert done["state"] == "succeeded", done
        assert done["metrics"]["n_train"] >= 1
        # The queued run was kept and now executes.
        assert wait(again, queued["id"], {"running"}, timeout=30)["state"] == "running"
        requests.post(f"{again.url}/admin/training/api/runs/{queued['id']}/cancel", headers=H)
        assert wait(again, queued["id"], TERMINAL, timeout=30)["state"] == "cancelled"
    finally:
        again.stop()


def test_auto_retrain_starts_a_run_every_n_labels(make_project: Callable[..., Path]) -> None:
    cfg = training_config(auto_retrain={"enabled": True, "every_n_labels": 5, "trainer": "noop",
                                        "schemas": ["sentiment"]})
    srv = ServerProcess(make_project(**cfg)).start()
    try:
        s = requests.Session()
        s.post(srv.url + "/login", data={"name": "ann"})
        for i in range(4):
            s.post(srv.url + "/api/label", json={"id": f"r{i:03d}", "labels": {"sentiment": truth(f"r{i:03d}")}})
        assert requests.get(srv.url + "/admin/training/api/runs", headers=H).json()["runs"] == []
        s.post(srv.url + "/api/label", json={"id": "r004", "labels": {"sentiment": "positive"}})
        runs = requests.get(srv.url + "/admin/training/api/runs", headers=H).json()["runs"]
        assert len(runs) == 1 and runs[0]["trigger"] == "auto" and runs[0]["trainer"] == "noop"
        assert wait(srv, runs[0]["id"], TERMINAL)["state"] == "succeeded"
        # The counter restarts: the next automatic run needs five more labels.
        s.post(srv.url + "/api/label", json={"id": "r005", "labels": {"sentiment": "negative"}})
        assert len(requests.get(srv.url + "/admin/training/api/runs", headers=H).json()["runs"]) == 1
    finally:
        srv.stop()


def test_decision_calibrate_refines_the_latest_run(server: ServerProcess) -> None:
    r = requests.post(server.url + "/admin/training/api/runs", json={"trainer": "decision-calibrate"}, headers=H)
    assert r.status_code == 400 and "Train a model first" in r.json()["error"]
    label_all(server, 30)
    first = start(server, trainer="sklearn-text-classification", schemas=["sentiment"])
    assert wait(server, first["id"], TERMINAL)["state"] == "succeeded"
    calibrated = start(server, trainer="decision-calibrate", schemas=["sentiment"])
    assert calibrated["params"]["source_predictions"].endswith(f"{first['id']}/predictions.jsonl")
    done = wait(server, calibrated["id"], TERMINAL)
    assert done["state"] == "succeeded", done
    assert "sentiment/holdout_brier" in done["metrics"]
    # Issue 21: the source run's folder holds its bundle, so the trainer knows which items the model
    # trained on. Its holdout (6 of 30) is too small: it cross-validates the source trainer on all 30
    # labelled items and reports the calibration error before and after on items neither model saw.
    assert done["metrics"]["sentiment/n_calibration"] == 30
    for name in ("ece", "log_loss"):
        assert 0 <= done["metrics"][f"sentiment/calibration_{name}_after"]
        assert 0 <= done["metrics"][f"sentiment/calibration_{name}_before"]
    # A calibration is never the default source of the next one: the model run is.
    again = start(server, trainer="decision-calibrate", schemas=["sentiment"])
    assert again["params"]["source_predictions"].endswith(f"{first['id']}/predictions.jsonl")
    assert wait(server, again["id"], TERMINAL)["state"] == "succeeded"


def _worker_alive(job_dir: Path) -> bool:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"potato.training.worker" in args and str(job_dir).encode() in args:
            return True
    return False


@fault("Runs and their processes",
       "The server is stopped (SIGTERM) during a local run and started again",
       "The run goes on without it and is recorded once the server is back",
       "The run succeeds")
def test_a_local_run_goes_on_while_the_server_is_stopped(make_project: Callable[..., Path]) -> None:
    """Stopping the server leaves the worker running; its agent retries, and once the server is
    back the run finishes with every event the worker wrote meanwhile."""
    config_path = make_project(**training_config())
    srv = ServerProcess(config_path).start()
    label_all(srv, 10)
    run = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 8})
    wait(srv, run["id"], {"running"})
    job_dir = config_path.parent / "annotation_output" / "training" / "agent" / "jobs" / run["id"]
    deadline = time.monotonic() + 15
    while not _worker_alive(job_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _worker_alive(job_dir)
    srv.stop()  # SIGTERM: gunicorn and its dispatcher stop; the agent and its worker do not
    time.sleep(2)
    assert _worker_alive(job_dir), "the worker should go on while the server is down"
    again = ServerProcess(config_path, port=srv.port).start()
    try:
        done = wait(again, run["id"], TERMINAL, timeout=60)
        assert done["state"] == "succeeded", done
        events = requests.get(f"{again.url}/admin/training/api/runs/{run['id']}/events", headers=H).json()["events"]
        kinds = [e.get("type") for e in events]
        assert kinds.count("progress") >= 1 and "metric" in kinds
        steps = [e["text"] for e in events if e.get("type") == "step"]
        assert len(steps) == len(set(steps)), "a resent report was recorded twice"
    finally:
        again.stop()


def test_the_local_worker_sees_none_of_the_servers_secrets_but_what_pass_env_names(
        make_project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's environment (cloud keys, HF_TOKEN, its admin key) stays out of the worker's
    /proc environ; model_training.pass_env lets a named variable through."""
    from tests.harness.waiting import wait_until, worker_pids

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-for-the-test")
    monkeypatch.setenv("HF_TOKEN", "hf-token-for-the-test")
    monkeypatch.setenv("POTATO_ADMIN_API_KEY", "admin-key-for-the-test")
    srv = ServerProcess(make_project(**training_config(pass_env=["HF_TOKEN"]))).start()
    try:
        label_all(srv, 10)
        run = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 4})
        wait_until(lambda: bool(worker_pids(run["id"])), timeout=30, what="the local worker")
        environ = Path(f"/proc/{worker_pids(run['id'])[0]}/environ").read_bytes()
        assert b"HF_TOKEN=hf-token-for-the-test" in environ
        assert b"aws-secret-for-the-test" not in environ and b"admin-key-for-the-test" not in environ
        assert b"PATH=" in environ and b"HOME=" in environ
        assert wait(srv, run["id"], TERMINAL, timeout=60)["state"] == "succeeded"
    finally:
        srv.stop()


# -- issue 20: the local agent and its worker on the server's machine ------------------------------

def _job_dir(config_path: Path, run_id: str) -> Path:
    return config_path.parent / "annotation_output" / "training" / "agent" / "jobs" / run_id


def _started_worker(job_dir: Path, timeout: float = 30) -> tuple[int, str]:
    """The run's worker (pid, start time), from the pid file its agent wrote: this test's own process."""
    from tests.harness.procs import process_start

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid = int((job_dir / "worker.pid").read_text())
        except (OSError, ValueError):
            time.sleep(0.1)
            continue
        start = process_start(pid)
        if start is not None and b"potato.training.worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid, start
        time.sleep(0.1)
    raise AssertionError(f"no worker for {job_dir.name} within {timeout} s")


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[1])


@fault("Runs and their processes",
       "kill -9 of the local backend's agent while its worker trains",
       "The worker ends with it (its lifeline closes); the run fails; the next run never shares the machine with an orphan",
       "The run fails saying its agent ended; the next run succeeds")
def test_kill_9_of_the_local_agent_ends_its_worker_and_the_next_run_runs_alone(
        make_project: Callable[..., Path]) -> None:
    """The agent's lifeline: SIGKILL of the agent must not leave its worker training (PPID 1) beside the
    next run's worker."""
    from tests.harness.procs import process_start

    config_path = make_project(**training_config())
    srv = ServerProcess(config_path).start()
    orphan: tuple[int, str] | None = None
    try:
        label_all(srv, 10)
        first = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 300})
        wait(srv, first["id"], {"running"})
        first_worker = _started_worker(_job_dir(config_path, first["id"]))
        agent = _parent(first_worker[0])
        cmdline = Path(f"/proc/{agent}/cmdline").read_bytes().split(b"\0")
        assert b"potato.training.agent" in cmdline and first["id"].encode() in cmdline
        second = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 2})
        os.kill(agent, signal.SIGKILL)
        orphan = first_worker
        second_worker: tuple[int, str] | None = None
        deadline = time.monotonic() + 90
        while True:
            state = requests.get(f"{srv.url}/admin/training/api/runs/{second['id']}", headers=H).json()["state"]
            if second_worker is None and (_job_dir(config_path, second["id"]) / "worker.pid").exists():
                second_worker = _started_worker(_job_dir(config_path, second["id"]))
            alive = [w for w in (first_worker, second_worker) if w is not None and process_start(w[0]) == w[1]]
            assert len(alive) <= 1, "the killed agent's worker still trains beside the next run's"
            if state in TERMINAL:
                break
            assert time.monotonic() < deadline, f"run stuck in {state}"
            time.sleep(0.1)
        assert state == "succeeded"
        assert process_start(first_worker[0]) != first_worker[1]
        assert wait(srv, first["id"], TERMINAL, timeout=30)["state"] == "failed"
        events = (_job_dir(config_path, first["id"]) / "events.jsonl").read_text()
        assert "The agent that started this worker ended" in events
    finally:
        srv.stop()
        if orphan is not None and process_start(orphan[0]) == orphan[1]:
            os.killpg(orphan[0], signal.SIGKILL)  # ours (pid and start time): never left behind by a failure


@fault("Tokens and secrets",
       "Another account on the machine that trains (local backend) looks into the job folder",
       "The job folder is 0700 and its files 0600",
       "Nothing to read")
def test_a_local_run_leaves_only_private_files_on_the_training_host(make_project: Callable[..., Path]) -> None:
    """The bundle, its extraction and the logs hold items, labels and annotators' names: folders 0700,
    files 0600, even when the server runs with umask 022 (the job dir is looked at during the run: the
    server removes a local run's job dir once it has the result; the worker's own outputs are checked
    in tests/unit/training/test_lifeline.py)."""
    config_path = make_project(**training_config())
    old = os.umask(0o022)
    try:
        srv = ServerProcess(config_path).start()
    finally:
        os.umask(old)
    try:
        label_all(srv, 10)
        run = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 4})
        job_dir = _job_dir(config_path, run["id"])
        _started_worker(job_dir)
        deadline = time.monotonic() + 30
        while not (job_dir / "events.jsonl").exists() or "training on" not in (job_dir / "events.jsonl").read_text():
            assert time.monotonic() < deadline, "the worker never started training"
            time.sleep(0.1)
        paths = [job_dir.parent, job_dir, *job_dir.rglob("*")]
        names = {p.name for p in paths}
        assert {"bundle.tar.gz", "bundle", "items.jsonl", "labels.jsonl", "worker.out", "events.jsonl"} <= names
        loose = {str(p.relative_to(job_dir.parent)): oct(p.stat().st_mode & 0o777) for p in paths
                 if p.stat().st_mode & 0o077}
        assert loose == {}
        assert wait(srv, run["id"], TERMINAL)["state"] == "succeeded"
    finally:
        srv.stop()


@fault("Tokens and secrets",
       "The server's environment holds cloud keys and HF_TOKEN; someone reads the local agent's and worker's /proc/<pid>/environ",
       "Only the allow-list and the pass_env names reach them",
       "No secret of the server's")
def test_the_local_agent_carries_none_of_the_servers_secrets(make_project: Callable[..., Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent gets the worker's allow-list too, plus the pass_env names it hands on to its worker."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-for-the-test")
    monkeypatch.setenv("HF_TOKEN", "hf-token-for-the-test")
    monkeypatch.setenv("POTATO_ADMIN_API_KEY", "admin-key-for-the-test")
    monkeypatch.setenv("LAB_DATA_TOKEN", "passed-on-for-the-test")
    config_path = make_project(**training_config(pass_env=["LAB_DATA_TOKEN"]))
    srv = ServerProcess(config_path).start()
    try:
        label_all(srv, 10)
        run = start(srv, trainer="noop", schemas=["sentiment"], params={"sleep_s": 4})
        worker, _ = _started_worker(_job_dir(config_path, run["id"]))
        agent = _parent(worker)
        assert b"potato.training.agent" in Path(f"/proc/{agent}/cmdline").read_bytes()
        for pid in (agent, worker):
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert b"hf-token-for-the-test" not in environ and b"aws-secret-for-the-test" not in environ
            assert b"admin-key-for-the-test" not in environ
            assert b"LAB_DATA_TOKEN=passed-on-for-the-test" in environ
            assert b"PATH=" in environ and b"HOME=" in environ
        assert wait(srv, run["id"], TERMINAL, timeout=60)["state"] == "succeeded"
    finally:
        srv.stop()
