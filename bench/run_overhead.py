"""Run overhead on the local backend: POST /admin/training/api/runs -> the worker's first progress event.

Target: < 1 s. Ours: the real server (``potato start``, gunicorn) with ten labels; each round POSTs a
``noop`` run (``sleep_s`` 0.01: noop reports progress only while it sleeps) and polls ``GET
.../events`` until a ``progress`` event arrives. The time is that event's ``t`` (the worker's clock,
same machine) minus the wall time just before the POST. A round starts once the previous run has
ended (an idle dispatcher) plus a random pause, so POSTs fall at random phases of the dispatcher's
idle poll (``IDLE_POLL_S``) instead of locked to it. The run's ``started_at`` splits the time into
queue pick-up and the rest (bundle, extract, spawn, worker).

Baselines, in the same run: ``python -c "import json,sys"`` start to exit (what any subprocess
costs), and the same worker on a job dir with the same items and labels and no server (Popen ->
first progress event): the fair floor, since a run cannot start faster than its worker.
``ours/worker`` is what the server and its dispatcher add.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import quick  # bench/quick.py: --quick, the sizes CI runs

import yaml

from potato.training.launch.supervise import worker_env
from potato.server.training.dispatcher import IDLE_POLL_S

KEY = "bench-admin-key-0123456789"
TARGET_S = 1.0
N_LABELS = 10
SCHEME = {"annotation_type": "radio", "name": "sentiment", "labels": ["positive", "negative"]}
NOOP = {"trainer": "noop", "schemas": ["sentiment"], "params": {"sleep_s": 0.01}}


def api(url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"X-API-Key": KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def items(n: int) -> list[dict[str, str]]:
    return [{"id": f"r{i:06d}", "text": f"The item {i} {'broke' if i % 2 else 'works'}."} for i in range(n)]


def make_project(root: Path, n: int) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "data" / "reviews.json").write_text(json.dumps(items(n)), encoding="utf-8")
    config = {"annotation_task_name": "Bench", "task_dir": ".", "data_files": ["data/reviews.json"],
              "item_properties": {"id_key": "id", "text_key": "text"}, "output_annotation_dir": "out",
              "admin_api_key": KEY, "annotation_schemes": [dict(SCHEME, description="Positive?")],
              "model_training": {"enabled": True}}
    (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root / "config.yaml"


def ours(url: str) -> tuple[float, float, float, float]:
    """Seconds from the POST to: the first progress event's t, the run's started_at (queue pick-up),
    the worker's first event of any kind (bundle and spawn done), the client's poll seeing progress."""
    began = time.time()
    run_url = f"{url}/admin/training/api/runs/" + api(url + "/admin/training/api/runs", NOOP)["id"]
    after = 0
    while True:
        page = api(f"{run_url}/events?after={after}")
        after = page["next"]
        if any(e["type"] == "progress" for e in page["events"]):
            seen = time.time()
            break
        time.sleep(0.01)
    while (run := api(run_url))["state"] not in ("succeeded", "failed", "cancelled"):
        time.sleep(0.05)
    if run["state"] != "succeeded":
        raise SystemExit(f"run {run['id']} {run['state']}: {run['message']}")
    events = api(f"{run_url}/events")["events"]
    progress = next(e["t"] for e in events if e["type"] == "progress")
    return progress - began, run["started_at"] - began, events[0]["t"] - began, seen - began


def bare_worker(job_dir: Path, n_items: int) -> float:
    """Popen -> the worker's first progress event (its own ``t``), on a job dir as the server writes it."""
    bundle = job_dir / "bundle"
    bundle.mkdir(parents=True)
    labels = [{"item_id": f"r{i:06d}", "schema": "sentiment", "label": SCHEME["labels"][i % 2],
               "user": "gold"} for i in range(N_LABELS)]
    job = {"format": 1, "run_id": job_dir.name, "trainer": "noop", "schemas": ["sentiment"],
           "schemes": [SCHEME], "params": NOOP["params"], "device": "auto", "grace_seconds": 10, "seed": 0}
    (bundle / "job.json").write_text(json.dumps(job))
    (bundle / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items(n_items)))
    (bundle / "labels.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels))
    (bundle / "split.json").write_text('{"holdout": []}')
    began = time.time()
    subprocess.run([sys.executable, "-m", "potato.training.worker", str(job_dir)], cwd=str(job_dir),
                   env=worker_env(None), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    events = map(json.loads, (job_dir / "events.jsonl").read_text().splitlines())
    return float(next(e["t"] for e in events if e["type"] == "progress")) - began


def python_start() -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import json,sys"], check=True)
    return time.perf_counter() - began


def start_server(config: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with log.open("ab") as out:
        cmd = [sys.executable, "-m", "potato", "start", str(config), "-p", str(port), "--host=127.0.0.1"]
        server = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                os.killpg(server.pid, signal.SIGKILL)
                raise SystemExit(f"server did not come up:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs per measurement; medians (default 5)")
    parser.add_argument("--items", type=int, default=40, help="items in the project and bundle (default 40)")
    args = quick.parse(parser, {"rounds": 2})
    with tempfile.TemporaryDirectory(prefix="potato-bench-ov-") as tmp_name:
        tmp = Path(tmp_name)
        server, url = start_server(make_project(tmp / "project", args.items), tmp / "server.log")
        try:
            api(url + "/admin/api/labels", {"user": "gold", "labels": [
                {"id": f"r{i:06d}", "schema": "sentiment", "label": SCHEME["labels"][i % 2]}
                for i in range(N_LABELS)]})
            print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}; {args.items} items; "
                  f"IDLE_POLL_S = {IDLE_POLL_S} s; {args.rounds} rounds, medians")
            rows, rng = [], random.Random(0)
            for k in range(args.rounds):
                time.sleep(rng.uniform(0, 2 * IDLE_POLL_S))
                rows.append((*ours(url), bare_worker(tmp / f"job{k}", args.items), python_start()))
                o, pick, spawn, seen, bare, py = rows[-1]
                print(f"  round {k + 1}: ours {o:.3f} s (picked up {pick:.3f}, worker's first event "
                      f"{spawn:.3f}, client saw it {seen:.3f}); bare worker {bare:.3f} s; python start "
                      f"{py:.3f} s", flush=True)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)
    o, pick, spawn, seen, bare, py = (statistics.median(col) for col in zip(*rows))
    rest = statistics.median(r[0] - r[1] for r in rows)
    prep, work = (statistics.median(r[2] - r[1] for r in rows), statistics.median(r[0] - r[2] for r in rows))
    print(f"\nPOST -> first progress (worker's t), medians: ours {o:.3f} s, bare worker {bare:.3f} s, "
          f"python -c start+exit {py:.3f} s")
    print(f"  ours/worker {o / bare:.2f}x, the server adds {o - bare:.3f} s. Ours: queue pick-up {pick:.3f} "
          f"s, bundle+extract+spawn to the worker's first event {prep:.3f} s, worker to progress {work:.3f} "
          "s")
    print(f"  worst round {max(r[0] for r in rows):.3f} s; the polling client saw the event at {seen:.3f} s")
    print(f"target < {TARGET_S:g} s: {'PASS' if o < TARGET_S else 'MISS'} (median; worst case about "
          f"IDLE_POLL_S + {rest:.2f} s = {IDLE_POLL_S + rest:.2f} s)")


if __name__ == "__main__":
    main()
