"""The agent protocol's speed: bundle download, resume, 200 idle agents, a warm agent's start.

Four sections, each against the real server (``potato start``, gunicorn) on 127.0.0.1, each printing
ours, a baseline measured in the same run, the ratio and the target:

1. bundle download: ``Client.download_bundle`` (resume-capable, sha256 checked) of a big run's
   bundle vs ``curl`` of the same URL with the same run token, rounds alternating; MB/s.
2. resume: a TCP proxy in this script cuts the first connection after N bytes (FIN; RST; RST just
   before a 1 MiB read of the client's would end); bytes the proxy forwarded in total minus the
   file's size is what the resume re-sent.
3. idle agents: N simulated agents (threads in a client process, each looping on ``jobs/next``
   with ``wait_s`` 25 and honouring a 204's ``Retry-After``, as the real agent does): the server's
   CPU (gunicorn master + workers) vs the same server idle; and annotators' next-item latency
   (``POST /api/label``, paced like people) with the agents vs without them.
4. warm agent: a real ``python -m potato.training.agent`` polling a backend; POST a ``noop`` run to
   it -> the worker's first progress event, vs the same on ``local`` (bench/run_overhead.py's way).

Everything lives in a temp dir; servers run in their own process groups and are killed at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import quick  # bench/quick.py: --quick, the sizes CI runs

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import annotators as ann  # noqa: E402  (bench/annotators.py: server start, CPU, annotator load)

from potato import __version__  # noqa: E402
from potato.server.training.agent_protocol.long_poll import LONG_POLL_CHECK_S  # noqa: E402
from potato.server.training.dispatcher import IDLE_POLL_S  # noqa: E402
from potato.training.agent.protocol import (  # noqa: E402
    CHUNK, LONG_POLL_MAX_S, RETRY_AFTER_S, Client, ProtocolError, Unreachable, backoff_delay,
)

KEY = ann.ADMIN_KEY
BACKEND = "lab"
SCHEME = {"annotation_type": "radio", "name": "sentiment", "description": "Positive?",
          "labels": ["positive", "negative"]}
NOOP = {"trainer": "noop", "schemas": ["sentiment"], "params": {"sleep_s": 0.01}}
TARGET_DOWNLOAD = 0.9      # ours/curl MB/s, at least
TARGET_RESENT = 1 << 20    # bytes re-sent by a resume, at most
TARGET_CPU = 5.0           # % of one core with the idle agents, below
TARGET_P99 = 1.2           # annotators' p99 with agents / without, at most
TARGET_WARM = 1.5          # warm agent / local, POST -> first progress, at most
TERMINAL = ("succeeded", "failed", "cancelled")


# -- helpers -------------------------------------------------------------------------------------

def api(url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"X-API-Key": KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def random_texts(n: int, chars: int, seed: int = 0) -> list[str]:
    """n texts of lowercase 'words' from random letters: gzip keeps ~60 % of them, so the bundle is big."""
    table = bytes((ord(" ") if b % 6 == 0 else ord("a") + b % 26) for b in range(256))
    blob = random.Random(seed).randbytes(n * chars).translate(table).decode("ascii")
    return [blob[i * chars:(i + 1) * chars] for i in range(n)]


def make_project(root: Path, n_items: int, chars: int) -> Path:
    """One radio scheme, training on, agent backend ``lab``; items of ``chars`` characters
    (0: short reviews as in annotators.py). Returns the config path."""
    (root / "data").mkdir(parents=True)
    texts = random_texts(n_items, chars) if chars else [
        f"Review {i}: it {'broke' if i % 2 else 'works'}." for i in range(n_items)]
    items = [{"id": ann.item_id(i), "text": t} for i, t in enumerate(texts)]
    (root / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    config = {"annotation_task_name": "Bench", "task_dir": ".", "data_files": ["data/reviews.json"],
              "item_properties": {"id_key": "id", "text_key": "text"}, "output_annotation_dir": "out",
              "admin_api_key": KEY, "annotation_schemes": [SCHEME],
              "model_training": {"enabled": True, "backends": {BACKEND: {"type": "agent"}}}}
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def register(config: Path) -> str:
    """``potato training register lab CONFIG``: the token is the first line it prints after its first."""
    out = subprocess.run([sys.executable, "-m", "potato", "training", "register", BACKEND, str(config)],
                         check=True, capture_output=True, text=True).stdout
    return next(line.strip() for line in out.splitlines()[1:] if line.strip())


def agent_info(agent_id: str) -> dict[str, Any]:
    return {"id": agent_id, "host": "bench", "python": sys.version.split()[0], "worker_python": sys.executable,
            "platform": sys.platform, "version": __version__, "workdir": "/tmp/bench", "gpus": []}


def add_labels(url: str, n: int) -> None:
    api(url + "/admin/api/labels", {"user": "gold", "labels": [
        {"id": ann.item_id(i), "schema": "sentiment", "label": SCHEME["labels"][i % 2]} for i in range(n)]})


def wait_ended(url: str, run_id: str, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (run := api(f"{url}/admin/training/api/runs/{run_id}"))["state"] not in TERMINAL:
        if time.monotonic() > deadline:
            raise SystemExit(f"run {run_id} still {run['state']} after {timeout:g} s")
        time.sleep(0.05)
    return dict(run)


def mb(n: float) -> float:
    return n / 1e6


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def header(title: str) -> None:
    print(f"\n== {title} (load average {os.getloadavg()[0]:.2f})", flush=True)


# -- 1. bundle download --------------------------------------------------------------------------

def claim_big_run(url: str, token: str) -> tuple[dict[str, Any], float]:
    """POST a run on ``lab`` and claim it as an agent would; (job, seconds the claim took: the bundle)."""
    api(url + "/admin/training/api/runs", dict(NOOP, backend=BACKEND))
    began = time.perf_counter()
    job, _ = Client(url, token, timeout=600).next_job(BACKEND, agent_info("bench-download"), 5.0)
    if job is None:
        raise SystemExit("jobs/next gave no job for the run just queued")
    return job, time.perf_counter() - began


def ours_download(url: str, job: dict[str, Any], dest: Path) -> float:
    dest.unlink(missing_ok=True)
    began = time.perf_counter()
    Client(url, job["run_token"]).download_bundle(job["run_id"], dest, job["bundle"]["size"], job["bundle"]["sha256"])
    return time.perf_counter() - began


def curl_download(url: str, job: dict[str, Any], dest: Path) -> tuple[float, float]:
    """(wall seconds incl. curl's start, curl's own time_total)."""
    dest.unlink(missing_ok=True)
    cmd = ["curl", "-sS", "-f", "-o", str(dest), "-w", "%{time_total} %{size_download}",
           "-H", f"Authorization: Bearer {job['run_token']}",
           f"{url}/training/agent/v1/runs/{job['run_id']}/bundle"]
    began = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
    wall = time.perf_counter() - began
    if int(float(out[1])) != job["bundle"]["size"]:
        raise SystemExit(f"curl got {out[1]} bytes, the bundle has {job['bundle']['size']}")
    return wall, float(out[0])


def section_download(url: str, job: dict[str, Any], tmp: Path, rounds: int) -> None:
    size = job["bundle"]["size"]
    ours_download(url, job, tmp / "warm.tar.gz")  # warm-up: page cache, first connection
    rows = []
    for _ in range(rounds):
        o = ours_download(url, job, tmp / "ours.tar.gz")
        c, c_total = curl_download(url, job, tmp / "curl.tar.gz")
        rows.append((o, c, c_total))
        print(f"  ours {o:.3f} s ({mb(size) / o:,.0f} MB/s); curl {c:.3f} s ({mb(size) / c:,.0f} MB/s; "
              f"its time_total {c_total:.3f} s)", flush=True)
    data = (tmp / "ours.tar.gz").read_bytes()
    began = time.perf_counter()
    hashlib.sha256(data).hexdigest()
    sha_s = time.perf_counter() - began
    best_o, best_c = min(r[0] for r in rows), min(r[1] for r in rows)
    med_o, med_c = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
    ratio = best_c / best_o
    print(f"bundle {mb(size):.1f} MB; best of {rounds}: ours {mb(size) / best_o:,.0f} MB/s, curl "
          f"{mb(size) / best_c:,.0f} MB/s (medians {mb(size) / med_o:,.0f} and {mb(size) / med_c:,.0f})")
    print(f"  ours includes the sha256 check ({sha_s:.3f} s of it for this file); curl's wall includes its "
          f"process start (best time_total {min(r[2] for r in rows):.3f} s)")
    print(f"ours/curl {ratio:.2f} (target >= {TARGET_DOWNLOAD:g}): {verdict(ratio >= TARGET_DOWNLOAD)}")


# -- 2. resume through a cutting proxy -----------------------------------------------------------

class CuttingProxy:
    """Forwards 127.0.0.1:port to the server; the first connection is cut after ``cut_after`` bytes
    from the server (``mode`` "fin": a clean close; "rst": a reset, which drops unread data)."""

    def __init__(self, upstream_port: int, cut_after: int, mode: str) -> None:
        self.upstream_port, self.cut_after, self.mode = upstream_port, cut_after, mode
        self.down: list[int] = []  # bytes server -> client, per connection
        self.requests: list[bytes] = []  # the first bytes client -> server, per connection
        self.heads: list[bytes] = []  # the first bytes server -> client, per connection
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                index = len(self.down)
                self.down.append(0)
                self.requests.append(b"")
                self.heads.append(b"")
            threading.Thread(target=self._serve, args=(client, index), daemon=True).start()

    def _serve(self, client: socket.socket, index: int) -> None:
        server = socket.create_connection(("127.0.0.1", self.upstream_port))
        limit = self.cut_after if index == 0 else None

        def upstream() -> None:
            try:
                while chunk := client.recv(65536):
                    with self.lock:
                        if len(self.requests[index]) < 4096:
                            self.requests[index] += chunk
                    server.sendall(chunk)
                server.shutdown(socket.SHUT_WR)  # the client is done: let the server close its side
            except OSError:
                pass

        up = threading.Thread(target=upstream, daemon=True)
        up.start()
        try:
            while chunk := server.recv(65536):
                if limit is not None:
                    chunk = chunk[:limit - self.down[index]]
                with self.lock:  # counted before it goes, so the total is complete once the client has it
                    self.down[index] += len(chunk)
                    if len(self.heads[index]) < 4096:
                        self.heads[index] += chunk[:4096]
                client.sendall(chunk)
                if limit is not None and self.down[index] >= limit:
                    break
        except OSError:
            pass
        try:  # SHUT_RD wakes the upstream thread's recv; a close alone would wait for it, sending nothing
            client.shutdown(socket.SHUT_RDWR if self.mode == "fin" or limit is None else socket.SHUT_RD)
        except OSError:
            pass
        up.join(5)
        if limit is not None and self.mode == "rst":  # linger 0: close sends a reset
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        client.close()
        server.close()

    def range_start(self, index: int) -> int:
        for line in self.requests[index].split(b"\r\n"):
            if line.lower().startswith(b"range: bytes="):
                return int(line.split(b"=", 1)[1].split(b"-", 1)[0])
        return 0

    def header_bytes(self, index: int) -> int:
        return self.heads[index].find(b"\r\n\r\n") + 4

    def close(self) -> None:
        self.listener.close()


def section_resume(url: str, port: int, job: dict[str, Any], tmp: Path, cut_at: float) -> None:
    """Three cuts: a clean close (FIN) at ``cut_at``; a reset (RST) there; a reset 1 byte before the
    client's next 1 MiB read would have ended (protocol.CHUNK), the worst place for one."""
    size = job["bundle"]["size"]
    cut = int(size * cut_at)
    print(f"bundle {size:,} bytes; the proxy cuts the first connection after N bytes from the server: a clean "
          f"close (fin) and a reset (rst) at N = {cut:,} ({cut_at:g} of the file), and a reset at the worst N")
    resent_by: dict[str, int] = {}
    head = 0
    for mode in ("fin", "rst", "rst-worst"):
        where = cut if mode != "rst-worst" else head + (cut - head) // CHUNK * CHUNK + CHUNK - 1
        proxy = CuttingProxy(port, where, mode.split("-")[0])
        try:
            began = time.perf_counter()
            Client(f"http://127.0.0.1:{proxy.port}", job["run_token"]).download_bundle(
                job["run_id"], tmp / f"resume-{mode}.tar.gz", size, job["bundle"]["sha256"])
            took = time.perf_counter() - began
        finally:
            proxy.close()
        total = sum(proxy.down)
        resent_by[mode] = total - size
        head = proxy.header_bytes(0)
        kept = proxy.range_start(1) if len(proxy.down) > 1 else size
        print(f"  {mode} at {where:,}: {len(proxy.down)} connections, {total:,} bytes forwarded in {took:.2f} s: "
              f"re-sent {total - size:,} bytes (HTTP headers included); of the {proxy.down[0] - head:,} body "
              f"bytes the cut connection carried, the client kept {kept:,} and lost {proxy.down[0] - head - kept:,}",
              flush=True)
    for mode, what in (("fin", "a clean cut"), ("rst", "a reset"), ("rst-worst", "a reset at the worst place")):
        print(f"re-sent after {what}: {resent_by[mode]:,} bytes (target <= {TARGET_RESENT:,}): "
              f"{verdict(resent_by[mode] <= TARGET_RESENT)}")
    print(f"  the client reads with read1 (at most {CHUNK:,} bytes at a time): a reset mid-read keeps what had "
          "arrived, so a resume re-sends only what was in flight")


def end_run(url: str, job: dict[str, Any]) -> None:
    Client(url, job["run_token"]).result(job["run_id"], {
        "exit_code": None, "result": None, "stop": {"reason": "cancelled", "message": "benchmark done"}, "log": []})


# -- 3. idle agents ------------------------------------------------------------------------------

class Fleet:
    """N simulated idle agents in a client process (threads): each loops on ``jobs/next`` with
    ``wait_s`` 25, sleeps a 204's ``Retry-After``, backs off on errors, as the real agent does.
    ``pause()`` makes each stop before its next request; ``resume()`` lets each go on after a
    random 0-``spread_s`` s, so they come back at steady-state phases rather than all at once."""

    def __init__(self, url: str, token: str, n: int) -> None:
        ctx = mp.get_context("fork")
        self.active, self.done = ctx.Event(), ctx.Event()
        self.requests = ctx.Value("l", 0)  # answers so far, all agents
        self.out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
        self.spread_s = sum(RETRY_AFTER_S) / 2
        self.active.set()
        self.proc = ctx.Process(target=self._run, args=(url, token, n))
        self.proc.start()

    def _run(self, url: str, token: str, n: int) -> None:
        counts = {"204": 0, "retry_after": 0, "retry_s": 0.0, "jobs": 0, "errors": 0}
        lock = threading.Lock()
        first_error: list[str] = []

        def loop(k: int) -> None:
            client, info, failures, rng = Client(url, token), agent_info(f"sim{k:04d}"), 0, random.Random(k)
            self.done.wait(rng.uniform(0, self.spread_s))  # a fleet's agents started at different times
            while not self.done.is_set():
                if not self.active.is_set():
                    self.active.wait()
                    self.done.wait(rng.uniform(0, self.spread_s))
                    continue
                try:
                    job, retry = client.next_job(BACKEND, info, LONG_POLL_MAX_S)
                except (Unreachable, ProtocolError) as exc:
                    with lock:
                        counts["errors"] += 1
                        first_error[:] = first_error or [str(exc)]
                    self.done.wait(backoff_delay(failures, base=1.0, cap=30.0))
                    failures += 1
                    continue
                failures = 0
                with lock:
                    counts["204" if job is None else "jobs"] += 1
                    counts["retry_after"] += 1 if retry else 0
                    counts["retry_s"] += retry
                with self.requests.get_lock():
                    self.requests.value += 1
                if retry:
                    self.done.wait(retry)

        for k in range(n):
            threading.Thread(target=loop, args=(k,), daemon=True).start()
        self.done.wait()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with lock:
            self.out.put(dict(counts, cpu_s=usage.ru_utime + usage.ru_stime, first_error=first_error[:1]))
        self.out.close()
        self.out.join_thread()  # the queue's feeder thread has sent it
        os._exit(0)  # threads still inside a 25 s long poll are not waited for

    def pause(self) -> None:
        self.active.clear()

    def resume(self) -> None:
        self.active.set()

    def stop(self) -> dict[str, Any]:
        self.done.set()
        counts = dict(self.out.get(timeout=60))
        self.proc.join(30)
        return counts


def annotate(port: int, n: int, seconds: float, tag: str) -> ann.Tally:
    """n paced annotators (annotators.py's loop, ``THINK_S``) for ``seconds``; their tally."""
    ctx = mp.get_context("fork")
    queue: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    names = [f"{tag}-{k}" for k in range(n)]
    start_at = time.time() + 1.0 + 0.02 * n
    procs = [ctx.Process(target=ann.client_process, args=(port, names[i::2], start_at, start_at + seconds, queue))
             for i in range(min(2, n))]
    for p in procs:
        p.start()
    tally = ann.Tally()
    for _ in procs:
        tally.add(queue.get())
    for p in procs:
        p.join()
    return tally


def cpu_window(pgid: int, seconds: float) -> float:
    """% of one core the server's process group used over the next ``seconds``."""
    before, began = ann.group_cpu_s(pgid), time.monotonic()
    time.sleep(seconds)
    return 100.0 * (ann.group_cpu_s(pgid) - before) / (time.monotonic() - began)


def http_floor(port: int, pgid: int, rate: float, seconds: float) -> tuple[float, int]:
    """The server's CPU (% of one core) for ``rate`` requests/s of a route that does nothing (404),
    each on a fresh connection as the agent's client makes them; (cpu %, requests). No answers to
    match (a window shorter than one long poll, as with --quick): one request a second."""
    rate = rate if rate > 0 else 1.0
    before, began, sent = ann.group_cpu_s(pgid), time.monotonic(), 0
    while time.monotonic() - began < seconds:
        ann.call(ann.Conn("127.0.0.1", port, timeout=30), "GET", "/bench-no-such-page", None, {})
        sent += 1
        time.sleep(max(0.0, began + sent / rate - time.monotonic()))
    return 100.0 * (ann.group_cpu_s(pgid) - before) / (time.monotonic() - began), sent


def latency_line(label: str, tally: ann.Tally, seconds: float) -> str:
    return (f"{label}: {tally.ok / seconds:.0f} labels/s, p50 {ann.percentile_ms(tally.latencies, 0.5):.1f} ms, "
            f"p99 {ann.percentile_ms(tally.latencies, 0.99):.1f} ms, {tally.errors} errors")


def section_idle_agents(config: Path, extra: list[str], token: str, args: argparse.Namespace) -> None:
    ann.THINK_S = args.think_ms / 1000.0
    with ann.running_server(config, extra) as (port, pgid):
        url = f"http://127.0.0.1:{port}"
        time.sleep(2.0)  # let the workers finish starting (dispatchers, first connections)
        idle = cpu_window(pgid, args.idle_seconds)
        print(f"  server idle, no agents: {idle:.1f} % of one core over {args.idle_seconds:g} s", flush=True)
        fleet = Fleet(url, token, args.agents)
        began = time.time()
        time.sleep(args.agent_warmup)
        before, t0 = fleet.requests.value, time.monotonic()
        busy = cpu_window(pgid, args.agent_seconds)
        rate = (fleet.requests.value - before) / (time.monotonic() - t0)
        print(f"  server with {args.agents} idle agents: {busy:.1f} % of one core over {args.agent_seconds:g} s "
              f"(after {args.agent_warmup:g} s of warm-up), {rate:.1f} answers/s", flush=True)
        alone, both = ann.Tally(), ann.Tally()
        for k in range(args.latency_rounds):
            fleet.pause()
            tally = annotate(port, args.annotators, args.annotate_seconds, f"alone{k}")
            print("  " + latency_line(f"round {k + 1}, {args.annotators} annotators alone", tally,
                                      args.annotate_seconds), flush=True)
            alone.add(tally)
            fleet.resume()
            tally = annotate(port, args.annotators, args.annotate_seconds, f"with{k}")
            print("  " + latency_line(f"round {k + 1}, {args.annotators} annotators with the agents", tally,
                                      args.annotate_seconds), flush=True)
            both.add(tally)
        counts = fleet.stop()
        elapsed = time.time() - began
        agents = api(url + "/admin/training/api/agents")["agents"]
        floor, sent = http_floor(port, pgid, rate, args.floor_seconds)
        print(f"  the same {rate:.1f} requests/s to a page that does not exist (404): {floor:.1f} % of one core "
              f"({sent} requests over {args.floor_seconds:g} s)", flush=True)
    mean_retry = counts["retry_s"] / counts["retry_after"] if counts["retry_after"] else 0.0
    print(f"agents: {counts['204']:,} answers 204 ({counts['retry_after']:,} with Retry-After, mean {mean_retry:.1f} "
          f"s), {counts['jobs']} jobs, {counts['errors']} errors"
          f"{': ' + counts['first_error'][0] if counts['first_error'] else ''} in {elapsed:.0f} s; the agents' "
          f"own CPU {100 * counts['cpu_s'] / elapsed:.1f} % of one core; the training page says {BACKEND} "
          f"connected={agents[0]['connected'] if agents else '?'}")
    per_req = 10 * (busy - idle) / rate if rate else float("nan")  # ms of CPU per answer
    per_404 = 10 * (floor - idle) / rate if rate else float("nan")
    share = per_req / per_404 if per_404 else float("nan")
    print(f"server CPU with {args.agents} idle agents {busy:.1f} % of one core (idle {idle:.1f} %; per answer "
          f"{per_req:.1f} ms of CPU, a 404 {per_404:.1f} ms: agents/404 {share:.2f}); target < "
          f"{TARGET_CPU:g} %: {verdict(busy < TARGET_CPU)}")
    p99_alone, p99_both = ann.percentile_ms(alone.latencies, 0.99), ann.percentile_ms(both.latencies, 0.99)
    ratio = p99_both / p99_alone if p99_alone else float("nan")
    print(f"annotators' next-item p99 with/without agents {p99_both:.1f}/{p99_alone:.1f} ms = {ratio:.2f} "
          f"(target <= {TARGET_P99:g}): {verdict(ratio <= TARGET_P99)}; p50 "
          f"{ann.percentile_ms(both.latencies, 0.5):.1f}/{ann.percentile_ms(alone.latencies, 0.5):.1f} ms "
          f"({len(both.latencies):,} and {len(alone.latencies):,} labels, {args.latency_rounds} rounds each)")


# -- 4. warm agent vs local ----------------------------------------------------------------------

def one_run(url: str, backend: str) -> tuple[float, float, float]:
    """Seconds from the POST to the first progress event's t, to started_at, to the client seeing it."""
    began = time.time()
    run_id = api(url + "/admin/training/api/runs", dict(NOOP, backend=backend))["id"]
    after = 0
    while True:
        page = api(f"{url}/admin/training/api/runs/{run_id}/events?after={after}")
        after = page["next"]
        if any(e["type"] == "progress" for e in page["events"]):
            seen = time.time()
            break
        time.sleep(0.01)
    run = wait_ended(url, run_id)
    if run["state"] != "succeeded":
        raise SystemExit(f"run {run_id} on {backend} {run['state']}: {run.get('message')}")
    events = api(f"{url}/admin/training/api/runs/{run_id}/events")["events"]
    progress = next(e["t"] for e in events if e["type"] == "progress")
    return progress - began, run["started_at"] - began, seen - began


def section_warm(config: Path, extra: list[str], token: str, tmp: Path, rounds: int) -> None:
    with ann.running_server(config, extra) as (port, _pgid):
        url = f"http://127.0.0.1:{port}"
        add_labels(url, 10)
        env = dict(os.environ, POTATO_TRAINING_TOKEN=token)
        with (tmp / "agent.log").open("ab") as out:
            agent = subprocess.Popen([sys.executable, "-m", "potato.training.agent", "--server", url, "--backend",
                                      BACKEND, "--workdir", str(tmp / "agent-work")], env=env, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while not any(a["connected"] for a in api(url + "/admin/training/api/agents")["agents"]):
                if agent.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the agent did not connect:\n{(tmp / 'agent.log').read_text()[-2000:]}")
                time.sleep(0.1)
            time.sleep(0.5)
            rows: dict[str, list[tuple[float, float, float]]] = {BACKEND: [], "local": []}
            rng = random.Random(0)
            for k in range(rounds):
                for backend in (BACKEND, "local") if k % 2 == 0 else ("local", BACKEND):
                    time.sleep(rng.uniform(0, 2 * LONG_POLL_CHECK_S))  # random phase of both polls
                    rows[backend].append(one_run(url, backend))
                a, l_ = rows[BACKEND][-1], rows["local"][-1]
                print(f"  round {k + 1}: agent {a[0]:.3f} s (picked up {a[1]:.3f}, client saw it {a[2]:.3f}); "
                      f"local {l_[0]:.3f} s (picked up {l_[1]:.3f}, client saw it {l_[2]:.3f})", flush=True)
        finally:
            agent.terminate()
            try:
                agent.wait(30)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait(10)
    a_med = [statistics.median(col) for col in zip(*rows[BACKEND])]
    l_med = [statistics.median(col) for col in zip(*rows["local"])]
    ratio = a_med[0] / l_med[0]
    print(f"POST -> first progress (worker's t), medians of {rounds}: warm agent {a_med[0]:.3f} s (picked up "
          f"{a_med[1]:.3f}), local {l_med[0]:.3f} s (picked up {l_med[1]:.3f}); the polling client saw them at "
          f"{a_med[2]:.3f} and {l_med[2]:.3f} s")
    rest = statistics.median(r[0] - r[1] for r in rows[BACKEND])
    print(f"  pick-up polls: the agent's long poll looks every LONG_POLL_CHECK_S = {LONG_POLL_CHECK_S} s, "
          f"the dispatcher every IDLE_POLL_S = {IDLE_POLL_S} s; after pick-up the warm agent takes {rest:.3f} s, "
          f"local {statistics.median(r[0] - r[1] for r in rows['local']):.3f} s (it starts an agent process)")
    print(f"  worst rounds: agent {max(r[0] for r in rows[BACKEND]):.3f} s, local {max(r[0] for r in rows['local']):.3f}"
          f" s; the agent's worst case is about LONG_POLL_CHECK_S + {rest:.2f} s = {LONG_POLL_CHECK_S + rest:.2f} s, "
          f"{(LONG_POLL_CHECK_S + rest) / l_med[0]:.2f} x local's median")
    print(f"agent/local {ratio:.2f} (target <= {TARGET_WARM:g}): {verdict(ratio <= TARGET_WARM)}")


# -- main ----------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sections", default="1,2,3,4", help="which sections to run (default 1,2,3,4)")
    parser.add_argument("--workers", type=int, default=None, help="gunicorn workers (default: potato's)")
    parser.add_argument("--threads", type=int, default=None, help="threads per worker (default: potato's)")
    g = parser.add_argument_group("1-2: bundle download and resume")
    g.add_argument("--items", type=int, default=100000, help="items in the big project (default 100000)")
    g.add_argument("--chars", type=int, default=500, help="characters per item (default 500)")
    g.add_argument("--rounds", type=int, default=10, help="download rounds, ours and curl alternating (default 10)")
    g.add_argument("--cut-at", type=float, default=0.5, help="where the proxy cuts, share of the file (default 0.5)")
    g = parser.add_argument_group("3: idle agents")
    g.add_argument("--agents", type=int, default=200, help="simulated idle agents (default 200)")
    g.add_argument("--agent-seconds", type=float, default=30.0, help="CPU window with the agents (default 30)")
    g.add_argument("--agent-warmup", type=float, default=5.0, help="seconds between starting them and it (default 5)")
    g.add_argument("--idle-seconds", type=float, default=15.0, help="CPU window of the idle server (default 15)")
    g.add_argument("--annotators", type=int, default=10, help="annotators for the latency (default 10)")
    g.add_argument("--think-ms", type=float, default=100.0, help="their mean pause between labels (default 100)")
    g.add_argument("--annotate-seconds", type=float, default=20.0, help="each latency window (default 20)")
    g.add_argument("--latency-rounds", type=int, default=2,
                   help="latency windows without, then with the agents, alternating (default 2 each)")
    g.add_argument("--floor-seconds", type=float, default=15.0,
                   help="CPU window of the 404 baseline at the agents' request rate (default 15)")
    g = parser.add_argument_group("4: warm agent vs local")
    g.add_argument("--warm-rounds", type=int, default=10, help="runs on each backend; medians (default 10)")
    args = quick.parse(parser, {"items": 2000, "rounds": 2, "agents": 10, "agent_seconds": 2.0, "agent_warmup": 1.0, "idle_seconds": 2.0, "annotators": 2, "annotate_seconds": 2.0, "latency_rounds": 1, "floor_seconds": 2.0, "warm_rounds": 2})
    sections = {int(s) for s in args.sections.split(",") if s.strip()}
    extra = [f"--{k}={v}" for k, v in (("workers", args.workers), ("threads", args.threads)) if v is not None]
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; server: potato start "
          f"{' '.join(extra) or '(default workers/threads)'}; sections {','.join(map(str, sorted(sections)))}")
    with tempfile.TemporaryDirectory(prefix="potato-bench-agents-") as tmp_name:
        tmp = Path(tmp_name)
        if sections & {1, 2}:
            began = time.perf_counter()
            config = make_project(tmp / "big", args.items, args.chars)
            token = register(config)
            with ann.running_server(config, extra) as (port, _pgid):
                url = f"http://127.0.0.1:{port}"
                job, claim_s = claim_big_run(url, token)
                print(f"big project: {args.items:,} items of {args.chars} chars; server up and run claimed in "
                      f"{time.perf_counter() - began:.1f} s (the claim, which builds the bundle: {claim_s:.1f} s)")
                if 1 in sections:
                    header(f"1. bundle download: Client.download_bundle vs curl, {args.rounds} rounds each")
                    section_download(url, job, tmp, args.rounds)
                if 2 in sections:
                    header("2. resume after a cut connection")
                    section_resume(url, port, job, tmp, args.cut_at)
                end_run(url, job)
            shutil.rmtree(tmp / "big", ignore_errors=True)
        if 3 in sections:
            header(f"3. {args.agents} idle agents: server CPU, annotators' latency ({args.annotators} annotators, "
                   f"think {args.think_ms:g} ms)")
            config = make_project(tmp / "fleet", 20000, 0)
            print(f"  long polls held per worker: threads // 4; the rest get 204 + Retry-After {RETRY_AFTER_S} s")
            section_idle_agents(config, extra, register(config), args)
        if 4 in sections:
            header(f"4. warm agent vs local: POST a noop run -> first progress event, {args.warm_rounds} rounds")
            config = make_project(tmp / "warm", 40, 0)
            section_warm(config, extra, register(config), tmp, args.warm_rounds)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
