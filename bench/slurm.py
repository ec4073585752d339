"""The slurm backend's speed and cost on the real single-node SLURM (``scripts/test-infra start``).

The real server (``potato start``, gunicorn) on 127.0.0.1 with a ``slurm`` backend whose login node
is the test sshd (trainer@127.0.0.1:22022); jobs run on the same machine. Each section prints ours,
the baseline measured in the same run, and the target:

1. submit -> RUNNING: from the agent's step event "SLURM job N submitted" to "... running on <node>"
   (their ``t``, stamped on the login node), vs the scheduler's own beat: a bare ``sbatch --wrap`` on the login node and
   squeue polled every 50 ms there until RUNNING. Target: ours <= beat + poll_interval_s (medians).
2. squeue calls per run: counted by a wrapper first on the backend's PATH, vs the run's wall time
   (submission to the end). Target: <= wall / poll_interval_s + 2.
3. progress latency: each progress event the worker writes (its ``t``) until the events API shows
   it (polled every 20 ms). Target: the largest <= poll_interval_s + 1 s.
4. the agent's CPU on the login node while it follows a running job (utime + stime from /proc,
   over the RUNNING part). Target < 2 % of a core.
5. submitit (where it is installed), on the same cluster: submit -> result of a trivial function, beside
   ours for a ``noop`` run (POST -> succeeded) and a bare sbatch that polls for a file. Printed for
   comparison, no target: submitit's ``job.state`` needs sacct, which this cluster (like many) lacks.

``remote_dir`` is a folder of this script's own (``--remote-dir``), removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import annotators as ann  # noqa: E402  (bench/annotators.py: server start)

ROOT = Path(__file__).resolve().parents[1]
KEY = ann.ADMIN_KEY
HOST, PORT, USER = "127.0.0.1", 22022, "trainer"
IDENTITY = "/tmp/potato-testcluster/ssh/id_ed25519"
SLURM_CONF = "/tmp/potato-testcluster/etc/slurm.conf"
SCHEME = {"annotation_type": "radio", "name": "sentiment", "description": "Positive?",
          "labels": ["positive", "negative"]}
TERMINAL = ("succeeded", "failed", "cancelled")
SSH = ["ssh", "-o", "BatchMode=yes", "-p", str(PORT), "-i", IDENTITY, f"{USER}@{HOST}"]
TARGET_CPU = 0.02


def api(url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"X-API-Key": KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def on_login(command: str) -> str:
    out = subprocess.run([*SSH, f"export SLURM_CONF={SLURM_CONF}; {command}"], capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"on the login node: {command!r} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def start_cluster() -> None:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        raise SystemExit("This benchmark needs the test cluster: as root, with slurm-wlm, munge and openssh-server "
                         "installed (scripts/test-infra start starts it).")
    out = subprocess.run([str(ROOT / "scripts" / "test-infra"), "start"], capture_output=True, text=True, timeout=180)
    if out.returncode != 0:
        raise SystemExit(f"scripts/test-infra start failed:\n{out.stdout}\n{out.stderr}")


def squeue_wrapper(folder: Path) -> Path:
    """An ``squeue`` first on the backend's PATH that logs each call (time, args) and runs the real one."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    log = folder / "squeue.log"
    log.touch()
    log.chmod(0o666)
    (folder / "squeue").write_text(f'#!/bin/sh\necho "$(date +%s.%N) $*" >> {log}\nexec /usr/bin/squeue "$@"\n')
    (folder / "squeue").chmod(0o755)
    return log


def make_project(root: Path, remote_dir: str, poll: float, wrapper: Path) -> Path:
    (root / "data").mkdir(parents=True)
    items = [{"id": ann.item_id(i), "text": f"Review {i}: it {'broke' if i % 2 else 'works'}."} for i in range(40)]
    (root / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    backend = {"type": "slurm", "host": HOST, "port": PORT, "user": USER, "identity_file": IDENTITY,
               "python": "/usr/bin/python3", "remote_dir": remote_dir, "poll_interval_s": poll,
               "env": {"SLURM_CONF": SLURM_CONF, "PATH": f"{wrapper}:/usr/bin:/bin"}}
    config = {"annotation_task_name": "Bench", "task_dir": ".", "data_files": ["data/reviews.json"],
              "item_properties": {"id_key": "id", "text_key": "text"}, "output_annotation_dir": "out",
              "admin_api_key": KEY, "annotation_schemes": [SCHEME],
              "model_training": {"enabled": True, "backends": {"cluster": backend}}}
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def scheduler_beat() -> float:
    """A bare sbatch on the login node, then squeue every 50 ms there until RUNNING (seconds). It
    returns once the job has left the node, so our run that follows starts on an idle node too."""
    script = ("id=$(sbatch --parsable -o /dev/null --wrap 'sleep 3'); s=$(date +%s.%N); "
              "until [ \"$(squeue -h -j $id -o %T)\" = RUNNING ]; do sleep 0.05; done; "
              "e=$(date +%s.%N); scancel $id; while [ -n \"$(squeue -h -j $id)\" ]; do sleep 0.1; done; "
              "sleep 1; echo $s $e")  # the node idle again, as it is for the run that follows
    start, end = map(float, on_login(script).split())
    return end - start


def agent_cpu_s() -> tuple[int, float] | None:
    """(pid, utime + stime in s) of the login node's agent that follows a SLURM job."""
    tick = os.sysconf("SC_CLK_TCK")
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if b"potato.training.agent" in cmdline and b"--slurm-config" in cmdline:
                fields = (proc / "stat").read_text().rsplit(") ", 1)[1].split()
                return int(proc.name), (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return None


def one_run(url: str, params: dict[str, Any], squeue_log: Path) -> dict[str, Any]:
    """POST a noop run; follow its steps and events every 20 ms until it ends."""
    squeue_before = len(squeue_log.read_text().splitlines())
    began = time.time()
    run_id = api(url + "/admin/training/api/runs", {"trainer": "noop", "schemas": ["sentiment"],
                                                   "backend": "cluster", "params": params})["id"]
    seen: dict[str, float] = {}
    latencies: list[float] = []
    after, cpu_start, cpu_end = 0, None, None
    while True:
        run = api(f"{url}/admin/training/api/runs/{run_id}")
        now = time.time()
        step = run["step"] or ""
        page = api(f"{url}/admin/training/api/runs/{run_id}/events?after={after}")
        for event in page["events"]:
            text = str(event.get("text", ""))
            if event.get("type") == "progress" and "t" in event:
                latencies.append(now - float(event["t"]))
            elif event.get("type") == "step" and text.startswith("SLURM job ") and "t" in event:
                if text.endswith(" submitted"):  # the agent's own times, on the login node
                    seen.setdefault("submitted", float(event["t"]))
                elif " running on " in text:
                    seen.setdefault("running", float(event["t"]))
        after = page["next"]
        if "running" in seen and cpu_start is None:
            cpu_start = (now, agent_cpu_s())
        if (run["state"] in TERMINAL or step.startswith("copying")) and cpu_end is None:
            cpu_end = (now, agent_cpu_s())
        if run["state"] in TERMINAL:
            break
        time.sleep(0.02)
    if run["state"] != "succeeded":
        raise SystemExit(f"run {run_id} {run['state']}: {run.get('message')}")
    calls = len(squeue_log.read_text().splitlines()) - squeue_before
    cpu = None
    if cpu_start and cpu_end and cpu_start[1] and cpu_end[1] and cpu_start[1][0] == cpu_end[1][0]:
        cpu = (cpu_end[1][1] - cpu_start[1][1]) / max(cpu_end[0] - cpu_start[0], 1e-6)
    wall = (run["finished_at"] or time.time()) - seen.get("submitted", began)
    return {"to_running": seen.get("running", float("nan")) - seen.get("submitted", float("nan")),
            "squeue": calls, "wall": wall, "latencies": latencies, "cpu": cpu, "total": time.time() - began}


def section_submitit(rounds: int, tmp: Path) -> None:
    try:
        import submitit  # type: ignore[import-not-found]
    except ImportError:
        print("submitit is not installed here (pip install submitit): skipped")
        return
    os.environ["SLURM_CONF"] = SLURM_CONF
    executor = submitit.AutoExecutor(folder=str(tmp / "submitit"), cluster="slurm")
    executor.update_parameters(timeout_min=5, slurm_partition="debug", mem_gb=1)
    times, states = [], []
    for _ in range(rounds):
        began = time.perf_counter()
        job = executor.submit(sum, [1, 2])
        states.append(job.state)
        assert job.result() == 3
        times.append(time.perf_counter() - began)
    print(f"submitit {submitit.__version__}: submit -> result median {statistics.median(times):.2f} s over {rounds} "
          f"(its job.state right after submit: {sorted(set(states))})")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs and bare sbatch rounds (default 5)")
    parser.add_argument("--poll", type=float, default=2.0, help="the backend's poll_interval_s (default 2)")
    parser.add_argument("--sleep", type=float, default=8.0, help="seconds each noop run trains (default 8)")
    parser.add_argument("--remote-dir", default="~/potato-bench-slurm")
    args = quick.parse(parser, {"rounds": 1, "sleep": 1.0, "poll": 1.0})
    if not args.remote_dir.startswith("~/") or any(c in args.remote_dir for c in " '\"$`\\;&|"):
        raise SystemExit("--remote-dir must be a plain path under ~/")
    start_cluster()
    on_login(f"rm -rf {args.remote_dir}")
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; "
          f"{on_login('sbatch --version').strip()}; poll_interval_s {args.poll:g}; {args.rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="potato-bench-slurm-") as tmp_name:
        tmp = Path(tmp_name)
        tmp.chmod(0o755)
        squeue_log = squeue_wrapper(tmp / "bin")
        config = make_project(tmp / "project", args.remote_dir, args.poll, tmp / "bin")
        try:
            with ann.running_server(config, []) as (port, _pgid):
                url = f"http://127.0.0.1:{port}"
                api(url + "/admin/api/labels", {"user": "gold", "labels": [
                    {"id": ann.item_id(i), "schema": "sentiment", "label": SCHEME["labels"][i % 2]} for i in range(10)]})
                one_run(url, {}, squeue_log)  # pushes the code: not measured
                rows, beats = [], []
                for k in range(args.rounds):
                    beats.append(scheduler_beat())
                    row = one_run(url, {"sleep_s": args.sleep}, squeue_log)
                    rows.append(row)
                    cpu = "?" if row["cpu"] is None else f"{100 * row['cpu']:.2f} %"
                    print(f"  round {k + 1}: beat {beats[-1]:.2f} s; ours submitted -> RUNNING {row['to_running']:.2f} s, "
                          f"{row['squeue']} squeue calls in {row['wall']:.1f} s, progress latency max "
                          f"{max(row['latencies'] or [float('nan')]):.2f} s, agent CPU {cpu}", flush=True)
                beat = statistics.median(beats)
                ours = statistics.median(r["to_running"] for r in rows)
                limit = beat + args.poll
                print(f"\n1. submitted -> RUNNING, medians: ours {ours:.2f} s; the scheduler's beat {beat:.2f} s; "
                      f"ours - beat {ours - beat:.2f} s (target <= poll_interval_s {args.poll:g}): "
                      f"{'PASS' if ours <= limit else 'MISS'}")
                worst = max(r["squeue"] - (r["wall"] / args.poll + 2) for r in rows)
                walls = ", ".join(f"{r['wall']:.1f}" for r in rows)
                print(f"2. squeue calls per run: {', '.join(str(r['squeue']) for r in rows)} for walls "
                      f"{walls} s; most over the budget (wall/poll + 2): "
                      f"{worst:+.1f}: {'PASS' if worst <= 0 else 'MISS'}")
                lat = [x for r in rows for x in r["latencies"]]
                print(f"3. progress latency over {len(lat)} events: median {statistics.median(lat):.2f} s, max "
                      f"{max(lat):.2f} s (target <= {args.poll + 1:g} s): {'PASS' if max(lat) <= args.poll + 1 else 'MISS'}")
                cpus = [r["cpu"] for r in rows if r["cpu"] is not None]
                if cpus:
                    print(f"4. agent CPU while following: median {100 * statistics.median(cpus):.2f} %, max "
                          f"{100 * max(cpus):.2f} % of a core (target < {100 * TARGET_CPU:g} %): "
                          f"{'PASS' if max(cpus) < TARGET_CPU else 'MISS'}")
                else:
                    print("4. agent CPU: the agent's process was not found")
                print("\n5. submit -> result, same cluster:")
                totals = [one_run(url, {}, squeue_log)["total"] for _ in range(args.rounds)]
                print(f"Potato noop run (POST -> succeeded, incl. ssh, bundle, copy-back): median "
                      f"{statistics.median(totals):.2f} s over {args.rounds}")
                section_submitit(args.rounds, tmp)
        finally:
            on_login(f"rm -rf {args.remote_dir}")
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
