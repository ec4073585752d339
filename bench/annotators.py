"""Simulated annotators against the real server: labels/s and next-item latency per N annotators.

Every click waits for ``POST /api/label`` (store the label, answer with the next item), so its
rate and tail latency under N concurrent annotators is what people feel. Per N: start ``potato
start`` (gunicorn) on a fresh project, log N annotators in over keep-alive connections spread over
client processes, label back to back for ``--seconds``, then check durability (rows in ``GET
/admin/api/labels`` == 200 answers). Baseline in the same run: N threads doing the same durable
write (upsert, WAL, ``synchronous=FULL``, one commit per label) on a SQLite file with no HTTP;
``http/raw`` is the share of this disk's commit rate the server delivers. Traffic: 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import random
import resource
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import yaml

ADMIN_KEY = "bench-admin-key-0123456789"
# Released Potato 2.12.1, measured earlier on this machine: labels/s total, next-item p99 (ms) per N.
REF_LABELS_S, REF_P99_MS = 28.0, {1: 34.0, 10: 527.0, 50: 1986.0}
GOAL_LABELS_S, GOAL_P99_MS_AT_50 = 300.0, 50.0  # the goal: labels/s total, next-item p99 (ms) at N=50
UPSERT = (
    "INSERT INTO labels (user, item_id, schema, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (user, item_id, schema) DO UPDATE SET value = excluded.value, "
    "updated_at = excluded.updated_at"
)
Conn = http.client.HTTPConnection


@dataclass
class Tally:
    """What one client process (or the raw baseline) saw."""

    ok: int = 0
    errors: int = 0
    first_error: str = ""
    latencies: list[float] = field(default_factory=list)
    cpu_s: float = 0.0

    def add(self, other: Tally) -> None:
        self.ok += other.ok
        self.errors += other.errors
        self.first_error = self.first_error or other.first_error
        self.latencies += other.latencies
        self.cpu_s += other.cpu_s


def percentile_ms(values: list[float], q: float) -> float:
    """Nearest-rank percentile of durations in seconds, returned in ms (pure)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return 1000.0 * ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def item_id(i: int) -> str:
    return f"r{i:05d}"


def make_project(root: Path, n_items: int) -> Path:
    """A one-scheme project like tests/conftest.py's; returns the config path."""
    (root / "data").mkdir(parents=True)
    items = [{"id": item_id(i), "text": f"Review {i}: it {'broke' if i % 2 else 'works'}."}
             for i in range(n_items)]
    (root / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    scheme = {"annotation_type": "radio", "name": "sentiment", "description": "Positive or negative?",
              "labels": ["positive", "negative"]}
    config = {"annotation_task_name": "Bench", "task_dir": ".", "data_files": ["data/reviews.json"],
              "item_properties": {"id_key": "id", "text_key": "text"},
              "output_annotation_dir": "annotation_output", "admin_api_key": ADMIN_KEY,
              "annotation_schemes": [scheme],
              # Each simulated annotator is a client of its own, as behind a reverse proxy (X-Forwarded-For):
              # sign-ins are throttled per client address, and 200 from one address would be a script.
              "trust_proxy": True}
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def call(conn: Conn, method: str, path: str, body: bytes | None, headers: dict[str, str]
         ) -> tuple[int, http.client.HTTPResponse, bytes]:
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp, resp.read()


@contextmanager
def running_server(config: Path, extra: list[str]) -> Iterator[tuple[int, int]]:
    """``potato start`` in its own process group on a free port; yields (port, process group id)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    log = config.parent / "server.log"
    cmd = [sys.executable, "-m", "potato", "start", str(config), "-p", str(port), "--host=127.0.0.1", *extra]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, up = time.monotonic() + 60, False
        while not up and time.monotonic() < deadline and proc.poll() is None:
            try:
                up = call(Conn("127.0.0.1", port, timeout=2), "GET", "/", None, {})[0] == 200
            except OSError:
                time.sleep(0.2)
        if not up:
            raise RuntimeError(f"server did not come up:\n{log.read_text(errors='replace')[-3000:]}")
        yield port, proc.pid
    finally:  # SIGTERM the whole group (master and workers), SIGKILL after 20 s
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(20)
        except ProcessLookupError:
            pass  # the group has already exited
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def group_cpu_s(pgid: int) -> float:
    """CPU seconds used so far by the live processes of a process group (gunicorn master, workers)."""
    total, tick = 0, os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended while we listed
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


THINK_S = 0.0
"""Mean pause between an annotator's labels (exponential); set from --think-ms before the clients fork."""


def annotator(port: int, name: str, start_at: float, stop_at: float, tally: Tally,
              lock: threading.Lock) -> None:
    """Log in, then label the next unlabelled item until ``stop_at`` (wall clock, shared by processes)."""
    conn, mine = Conn("127.0.0.1", port, timeout=60), Tally()
    address = "10.{}.{}.{}".format(*(zlib.crc32(name.encode()).to_bytes(4, "big")[1:]))
    form = {"Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": address}
    status, resp, _ = call(conn, "POST", "/login", f"name={name}".encode(), form)
    cookie = (resp.getheader("Set-Cookie") or "").split(";", 1)[0]
    headers = {"Content-Type": "application/json", "Cookie": cookie, "X-Forwarded-For": address}
    rng, current = random.Random(name), item_id(0)
    if status != 302 or not cookie:
        mine.errors, mine.first_error, stop_at = 1, f"login answered {status}", 0.0
    time.sleep(max(0.0, start_at - time.time()))
    conn.close()  # a fresh connection: gunicorn drops keep-alive connections idle for 2 s (reset races)
    if THINK_S:  # people arrive at their own moments: a first pause too, or all N would click at once
        time.sleep(rng.expovariate(1.0 / THINK_S))
    while time.time() < stop_at:
        label = rng.choice(("positive", "negative"))
        body = json.dumps({"id": current, "labels": {"sentiment": label}, "go": "next_unlabelled"}).encode()
        began = time.perf_counter()
        try:
            status, _, data = call(conn, "POST", "/api/label", body, headers)
        except (OSError, http.client.HTTPException) as exc:
            mine.errors += 1
            mine.first_error = mine.first_error or f"{type(exc).__name__}: {exc}"
            conn.close()  # http.client reconnects on the next request
            continue
        elapsed = time.perf_counter() - began
        if status != 200:
            mine.errors += 1
            mine.first_error = mine.first_error or f"{status}: {data[:200]!r}"
            break
        mine.ok += 1
        mine.latencies.append(elapsed)
        answer = json.loads(data)
        if answer.get("note"):  # "Every item is labelled.": raise --items for longer runs
            mine.first_error = mine.first_error or f"{name} stopped early: {answer['note']}"
            break
        current = answer["item"]["id"]
        if THINK_S:
            time.sleep(rng.expovariate(1.0 / THINK_S))
    with lock:
        tally.add(mine)


def run_threads(target: Callable[..., None], arg_lists: list[tuple[object, ...]]) -> None:
    threads = [threading.Thread(target=target, args=args) for args in arg_lists]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def client_process(port: int, names: list[str], start_at: float, stop_at: float,
                   out: mp.Queue) -> None:  # type: ignore[type-arg]
    tally, lock = Tally(), threading.Lock()
    run_threads(annotator, [(port, name, start_at, stop_at, tally, lock) for name in names])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    tally.cpu_s = usage.ru_utime + usage.ru_stime
    out.put(tally)


def run_http(config: Path, n: int, seconds: float, procs: int, extra: list[str]) -> tuple[Tally, int, float]:
    """The clients' tally, the label rows the server reports, and the server's CPU seconds."""
    with running_server(config, extra) as (port, pgid):
        ctx = mp.get_context("fork")
        queue: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
        names = [f"annotator-{k}" for k in range(n)]
        start_at = time.time() + 1.0 + 0.02 * n  # logins happen before the measured window
        clients = [ctx.Process(target=client_process, args=(port, names[i::procs], start_at,
                                                            start_at + seconds, queue))
                   for i in range(min(procs, n))]
        for c in clients:
            c.start()
        time.sleep(max(0.0, start_at - time.time()))
        cpu_before = group_cpu_s(pgid)
        tally = Tally()
        for _ in clients:
            tally.add(queue.get())
        server_cpu = group_cpu_s(pgid) - cpu_before
        for c in clients:
            c.join()
        status, _, data = call(Conn("127.0.0.1", port, timeout=60), "GET", "/admin/api/labels", None,
                               {"X-API-Key": ADMIN_KEY})
        return tally, int(json.loads(data)["count"]) if status == 200 else -1, server_cpu


def run_raw_sqlite(path: Path, n: int, seconds: float) -> Tally:
    """N threads, each with its own connection, one durable upsert commit per label; no HTTP."""
    setup = sqlite3.connect(str(path), isolation_level=None)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE labels (user TEXT, item_id TEXT, schema TEXT, value TEXT, created_at REAL, "
                  "updated_at REAL, PRIMARY KEY (user, item_id, schema))")
    setup.close()
    tally, lock, stop_at = Tally(), threading.Lock(), time.time() + seconds

    def writer(k: int) -> None:
        conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "busy_timeout=30000"):
            conn.execute(f"PRAGMA {pragma}")
        mine = Tally()
        while time.time() < stop_at:
            began, now = time.perf_counter(), time.time()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(UPSERT, (f"annotator-{k}", item_id(mine.ok), "sentiment", '"positive"', now, now))
            conn.execute("COMMIT")
            mine.latencies.append(time.perf_counter() - began)
            mine.ok += 1
        conn.close()
        with lock:
            tally.add(mine)

    run_threads(writer, [(k,) for k in range(n)])
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per N (default 30)")
    parser.add_argument("--annotators", default="1,10,50", help="comma-separated N values (default 1,10,50)")
    parser.add_argument("--workers", type=int, default=None, help="gunicorn workers (default: potato's)")
    parser.add_argument("--threads", type=int, default=None, help="threads per worker (default: potato's)")
    parser.add_argument("--client-procs", type=int, default=2, help="client processes sharing the annotators")
    parser.add_argument("--items", type=int, default=20000, help="items in the project (default 20000)")
    parser.add_argument("--think-ms", type=float, default=0.0,
                        help="mean pause between an annotator's labels, as people read (default 0: back to back)")
    args = parser.parse_args()
    global THINK_S
    THINK_S = args.think_ms / 1000.0
    counts = [int(x) for x in args.annotators.split(",") if x.strip()]
    extra = [f"--{k}={v}" for k, v in (("workers", args.workers), ("threads", args.threads)) if v is not None]
    print(f"server: potato start {' '.join(extra) or '(default workers/threads)'}; {os.cpu_count()} CPUs; "
          f"{args.seconds:g} s per N; think {args.think_ms:g} ms; {args.client_procs} client processes; cpu = % of one core; "
          f"load avg {os.getloadavg()[0]:.2f} (other work on the machine skews every column)")
    print(f"{'N':>3} {'labels/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'2.12.1 p99':>10} {'raw l/s':>8} "
          f"{'raw p99':>8} {'http/raw':>8} {'srv cpu':>7} {'cli cpu':>7} {'rows':>13} {'errors':>6}")
    results: dict[int, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="potato-bench-") as tmp:
        for n in counts:
            config = make_project(Path(tmp) / f"n{n}", args.items)  # fresh project and output dir per N
            tally, rows, server_cpu = run_http(config, n, args.seconds, args.client_procs, extra)
            raw = run_raw_sqlite(Path(tmp) / f"raw-n{n}.sqlite", n, args.seconds)
            rate, raw_rate = tally.ok / args.seconds, raw.ok / args.seconds
            p99 = percentile_ms(tally.latencies, 0.99)
            results[n] = (rate, p99)
            ref = f"{REF_P99_MS[n]:g}" if n in REF_P99_MS else "-"
            check = f"{rows} {'OK' if rows == tally.ok else 'MISMATCH'}"
            print(f"{n:>3} {rate:>9.1f} {percentile_ms(tally.latencies, 0.5):>7.1f} {p99:>7.1f} {ref:>10} "
                  f"{raw_rate:>8.1f} {percentile_ms(raw.latencies, 0.99):>8.1f} "
                  f"{rate / raw_rate if raw_rate else float('nan'):>8.3f} "
                  f"{100 * server_cpu / args.seconds:>6.0f}% {100 * tally.cpu_s / args.seconds:>6.0f}% "
                  f"{check:>13} {tally.errors:>6}", flush=True)
            if tally.first_error:
                print(f"    first problem: {tally.first_error}")
    top = 50 if 50 in results else max(results)
    rate, p99 = results[top]
    note = "" if top == 50 else "  (N=50 not run: judged at the largest N)"
    print(f"load avg at the end {os.getloadavg()[0]:.2f}")
    print(f"\nreference Potato 2.12.1 (this machine): {REF_LABELS_S:g} labels/s total; "
          "next-item p99 34 ms @1, 527 ms @10, 1,986 ms @50")
    print(f"goal labels/s total @{top}: {rate:.1f} (>= {GOAL_LABELS_S:g}) "
          f"{'PASS' if rate >= GOAL_LABELS_S else 'MISS'}{note}")
    print(f"goal next-item p99 @{top}: {p99:.1f} ms (<= {GOAL_P99_MS_AT_50:g}) "
          f"{'PASS' if p99 <= GOAL_P99_MS_AT_50 else 'MISS'}{note}")


if __name__ == "__main__":
    main()
