"""Annotators' next-item latency while training is busy on the same server (issue 20).

Annotators share the server with training: an agent reporting a run's events, and idle agents holding
long polls on ``jobs/next``. What matters is whether people labelling notice. One ``potato start``
(gunicorn, its own process group, 127.0.0.1) with two agent backends, and two windows of equal length
in the same run:

1. baseline: N annotators at people's pace (bench/annotators.py's loop with ``--think-ms``: exponential
   pauses, mean 1 s) alone;
2. loaded: N fresh annotators the same way, plus (a) a run on backend ``stream`` claimed by an agent
   this script simulates, which streams ``--events-per-s`` step/progress/log events (~200 bytes each)
   through ``POST /training/agent/v1/runs/<id>/events``, numbered by ``seq``, reading each
   ``{"cancel": ...}`` reply, for the whole window; and (b) ``--agents`` idle agents long-polling
   ``jobs/next`` on backend ``lab`` (bench/agents.py's ``Fleet``), which never get the run.

Per window: labels/s, next-item latency (``POST /api/label``) p50/p95/p99, the server's CPU seconds per
wall second, the CPU steal share; for the loaded one the events/s the server accepted and its 429s; then
loaded/baseline for p99 and CPU, a durability check (labels acknowledged == rows stored) and a verdict
against the target (loaded p99 within 2x the baseline's). Nothing asserts the figures. Each window has
annotators of its own (new names), so no label of the first is sent again in the second.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import quick  # bench/quick.py: --quick, the sizes CI runs

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agents  # noqa: E402  (bench/agents.py: agent-side helpers, the idle-agent fleet)
import annotators as ann  # noqa: E402  (bench/annotators.py: server start, CPU, annotator load)

from potato.training.agent.protocol import Client, RunEnded  # noqa: E402

STREAM_BACKEND = "stream"  # the backend whose run the simulated agent streams
IDLE_BACKEND = agents.BACKEND  # "lab": the one agents.Fleet polls; it never gets the run
TARGET_P99_RATIO = 2.0  # loaded p99 / baseline p99, at most
EVENTS_PATH = "/training/agent/v1/runs/{run_id}/events"


# -- the server --------------------------------------------------------------------------------------

def make_project(root: Path, n_items: int) -> Path:
    """annotators.py's project plus training with two agent backends; returns the config path."""
    config = ann.make_project(root, n_items)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["model_training"] = {"enabled": True, "backends": {
        STREAM_BACKEND: {"type": "agent"}, IDLE_BACKEND: {"type": "agent"}}}
    return ann.write_config(root, data)


def register(config: Path, backend: str) -> str:
    """``potato training register BACKEND CONFIG``; its token (the first line after the first)."""
    out = subprocess.run([sys.executable, "-m", "potato", "training", "register", backend, str(config)],
                                check=True, capture_output=True, text=True).stdout
    return next(line.strip() for line in out.splitlines()[1:] if line.strip())


def labels_stored(port: int) -> int:
    status, _, data = ann.call(ann.Conn("127.0.0.1", port, timeout=ann.REQUEST_TIMEOUT_S), "GET",
                               "/admin/api/labels", None, {"X-API-Key": ann.ADMIN_KEY})
    return int(json.loads(data)["count"]) if status == 200 else -1


# -- the annotators -----------------------------------------------------------------------------------

@dataclass
class Window:
    """One measured window: the annotators' tally and the server around it."""

    measured: ann.Measured
    start: float  # wall clock
    wall_s: float  # the span of the CPU readings: the window, to a few ms


def annotator_window(port: int, pgid: int, names: list[str], seconds: float, procs: int) -> Window:
    """annotators.py's ``run_clients`` for the given names (it names them itself): sign-ins one at a
    time, then the window opens for all. The server's CPU and the steal are read at its start and end
    (annotators still in a pause at the end finish it, and their last label, afterwards)."""
    ctx = mp.get_context("fork")
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    gate = ann.Gate(ctx.Queue(), ctx.Event(), ctx.Value("d", 0.0), seconds, ctx.Lock())
    clients = [ctx.Process(target=ann.client_process, args=(port, names[i::procs], 0.0, 0.0, out, None, gate),
                           daemon=True) for i in range(min(procs, len(names)))]
    began = time.monotonic()
    for c in clients:
        c.start()
    try:
        ann.wait_ready(gate.ready, len(names), ann.LOGIN_TIMEOUT_S)
        signin_s = time.monotonic() - began
    finally:  # open the window whatever happened, so no client waits for ever
        gate.start.value = time.time() + 0.5
        gate.go.set()
    time.sleep(max(0.0, gate.start.value - time.time()))
    cpu_before, times_before, t0 = ann.group_cpu_s(pgid), ann.cpu_times(), time.monotonic()
    time.sleep(max(0.0, gate.start.value + seconds - time.time()))
    server_cpu, wall = ann.group_cpu_s(pgid) - cpu_before, time.monotonic() - t0
    steal = ann.steal_share(times_before, ann.cpu_times())
    tally = ann.Tally()
    for _ in clients:
        tally.add(out.get())
    for c in clients:
        c.join()
    return Window(ann.Measured(tally, server_cpu, signin_s, steal=steal), float(gate.start.value), wall)


# -- the streaming agent ------------------------------------------------------------------------------

def claim_run(url: str, token: str) -> dict[str, Any]:
    """Queue a noop run on the stream backend and claim it as an agent does (``jobs/next``)."""
    agents.api(url + "/admin/training/api/runs", dict(agents.NOOP, backend=STREAM_BACKEND))
    job, _ = Client(url, token, timeout=120).next_job(STREAM_BACKEND, agents.agent_info("bench-stream"), 5.0)
    if job is None:
        raise SystemExit("jobs/next gave no job for the run just queued")
    return job


def make_event(k: int, total: int) -> dict[str, Any]:
    """Event k of a run: mostly progress, every 10th a step, every 10th (offset 5) a log line; ~200 bytes."""
    t, epoch = round(time.time(), 3), 1 + 3 * k // max(total, 1)
    if k % 10 == 0:
        return {"t": t, "type": "step", "text": f"training sentiment (epoch {epoch} of 3): batch {k} of {total}, "
                f"lr 2.00e-05, warm-up done, grad-norm {1 + k % 7 / 10:.3f}, {os.getpid()} on cpu, 0 skipped"}
    if k % 10 == 5:
        return {"t": t, "type": "log", "level": "info", "text": f"step {k}: holdout loss {0.7 - k % 50 / 100:.4f}, "
                f"accuracy {0.5 + k % 40 / 100:.3f}, tokens/s {4000 + k % 97 * 10}, padding share 0.{k % 10}1"}
    return {"t": t, "type": "progress", "step": k, "total": total, "epoch": epoch,
            "loss": round(0.7 - (k % 500) / 1000, 4), "lr": 2e-05, "samples_per_s": 412.5 + k % 13,
            "grad_norm": round(1 + k % 7 / 10, 3), "gpu_mem_mb": 5120 + k % 64, "schema": "sentiment"}


@dataclass
class StreamStats:
    """What the streaming agent sent and what the server answered."""

    sent_events: int = 0  # events made (each goes out once, or again after a 429)
    event_bytes: int = 0  # their JSON, all told
    posts: int = 0
    accepted: list[tuple[float, int]] = field(default_factory=list)  # (wall clock, events in the batch) per 200
    too_fast: int = 0  # 429 answers
    errors: int = 0
    first_error: str = ""
    cancel: str = ""  # the reason and message, when a reply said {"cancel": true}


class Streamer:
    """The simulated agent of the claimed run: one event every 1/rate s, each POSTed with its ``seq`` on a
    fresh connection (as potato's agent client does); after a 429 the unsent events go again after
    ``Retry-After``, keeping their ``seq``. Stops on ``stop()`` or a ``{"cancel": true}`` reply."""

    def __init__(self, port: int, job: dict[str, Any], rate: float, total: int) -> None:
        self.port, self.job, self.rate, self.total = port, job, rate, total
        self.stats = StreamStats()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        pending: list[dict[str, Any]] = []  # made, not yet stored (more than one only after a 429)
        seq, began = 0, time.monotonic()
        path = EVENTS_PATH.format(run_id=self.job["run_id"])
        headers = {**ann.JSON, "Authorization": f"Bearer {self.job['run_token']}"}
        while not self.done.is_set():
            pending.append(make_event(self.stats.sent_events, self.total))
            self.stats.sent_events += 1
            self.stats.event_bytes += len(json.dumps(pending[-1]))
            body = json.dumps({"seq": seq, "events": pending, "log": []}).encode()
            wait = self._post(path, body, headers, len(pending))
            if wait is None:  # stored: the next batch starts after it
                seq, pending = seq + len(pending), []
            if self.stats.cancel:
                return
            next_at = began + self.stats.sent_events / self.rate
            self.done.wait(max(wait or 0.0, next_at - time.monotonic()))

    def _post(self, path: str, body: bytes, headers: dict[str, str], n: int) -> float | None:
        """One report; None when stored, else seconds to wait before sending the batch again."""
        self.stats.posts += 1
        conn = ann.Conn("127.0.0.1", self.port, timeout=60)
        try:
            status, resp, data = ann.call(conn, "POST", path, body, headers)
        except (OSError, http.client.HTTPException) as exc:
            return self._error(f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()
        if status == 200:
            self.stats.accepted.append((time.time(), n))
            reply = json.loads(data)
            if reply.get("cancel"):
                self.stats.cancel = f"{reply.get('reason')}: {reply.get('message')}"
            return None
        if status == 429:
            self.stats.too_fast += 1
            return float(resp.getheader("Retry-After") or 1)
        return self._error(f"{status}: {data[:200]!r}")

    def _error(self, what: str) -> float:
        self.stats.errors += 1
        self.stats.first_error = self.stats.first_error or what
        return 1.0

    def stop(self) -> StreamStats:
        self.done.set()
        self.thread.join(90)
        return self.stats

    def accepted_between(self, start: float, stop: float) -> int:
        """Events in batches the server answered 200 to between two wall-clock times."""
        return sum(n for at, n in self.stats.accepted if start <= at <= stop)


# -- the two windows ---------------------------------------------------------------------------------

@dataclass
class Loaded:
    window: Window
    events_in_window: int
    stream: StreamStats
    fleet: dict[str, Any]


def loaded_window(url: str, port: int, pgid: int, tokens: dict[str, str], args: argparse.Namespace) -> Loaded:
    """The idle agents and the streaming agent start, the fleet warms up, then the annotators' window;
    both keep going until every annotator has reported. The run is ended (cancelled) afterwards."""
    job = claim_run(url, tokens[STREAM_BACKEND])
    fleet = agents.Fleet(url, tokens[IDLE_BACKEND], args.agents)
    streamer = Streamer(port, job, args.events_per_s, int(args.events_per_s * (2 * args.seconds + 60)))
    try:
        time.sleep(args.agent_warmup)
        names = [f"loaded-{k}" for k in range(args.annotators)]
        window = annotator_window(port, pgid, names, args.seconds, args.client_procs)
    finally:
        stream, counts = streamer.stop(), fleet.stop()
        try:
            agents.end_run(url, job)
        except RunEnded:
            pass  # the server had ended it (the streamer says why)
    return Loaded(window, streamer.accepted_between(window.start, window.start + args.seconds), stream, counts)


# -- the report --------------------------------------------------------------------------------------

def p(w: Window, q: float) -> float:
    return ann.percentile_ms(w.measured.tally.latencies, q)


def cpu_per_s(w: Window) -> float:
    return w.measured.server_cpu_s / w.wall_s if w.wall_s else float("nan")


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


HEADER = (f"{'window':<9} {'labels/s':>8} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'srv cpu s/s':>11} "
          f"{'steal':>6} {'labels':>7} {'errors':>6} {'sign-ins':>8}")


def window_row(name: str, w: Window, seconds: float) -> str:
    t = w.measured.tally
    return (f"{name:<9} {t.ok / seconds:>8.1f} {p(w, 0.5):>7.1f} {p(w, 0.95):>7.1f} {p(w, 0.99):>7.1f} "
            f"{cpu_per_s(w):>11.3f} {100 * w.measured.steal:>5.1f}% {t.ok:>7} {t.errors:>6} "
            f"{w.measured.signin_s:>7.1f}s" + (f"\n    first problem: {t.first_error}" if t.first_error else ""))


def stream_lines(lo: Loaded, args: argparse.Namespace) -> list[str]:
    s, f = lo.stream, lo.fleet
    size = s.event_bytes / s.sent_events if s.sent_events else 0.0
    return [f"training events: {lo.events_in_window / args.seconds:.1f}/s accepted (200) in the window "
            f"(sent at {args.events_per_s:g}/s, {size:.0f} bytes each); all told {s.sent_events} events in "
            f"{s.posts} reports: {s.too_fast} answered 429, {s.errors} other errors"
            + (f" (first: {s.first_error})" if s.first_error else "")
            + (f"; the server said cancel: {s.cancel}" if s.cancel else "; never told to cancel"),
            f"idle agents on {IDLE_BACKEND!r}: {args.agents}; {f['204']:,} answers 204 ({f['retry_after']:,} with "
            f"Retry-After), {f['jobs']} jobs, {f['errors']} errors"
            + (f" (first: {f['first_error'][0]})" if f["first_error"] else "")]


def print_report(base: Window, lo: Loaded, stored: int, args: argparse.Namespace) -> None:
    print(HEADER)
    print(window_row("baseline", base, args.seconds))
    print(window_row("loaded", lo.window, args.seconds))
    print("\n".join(stream_lines(lo, args)))
    p99_ratio, cpu_ratio = ratio(p(lo.window, 0.99), p(base, 0.99)), ratio(cpu_per_s(lo.window), cpu_per_s(base))
    print(f"loaded/baseline: next-item p99 {p99_ratio:.2f}x, p50 {ratio(p(lo.window, 0.5), p(base, 0.5)):.2f}x, "
          f"server CPU {cpu_ratio:.2f}x")
    acked = base.measured.tally.acked + lo.window.measured.tally.acked
    print(f"durability: labels acknowledged {acked}, stored {stored}: {'OK' if stored == acked else 'MISMATCH'}")
    steal = max(base.measured.steal, lo.window.measured.steal)
    print(f"target: loaded p99 within {TARGET_P99_RATIO:g}x of baseline p99: {p99_ratio:.2f}x, "
          f"{'met' if p99_ratio <= TARGET_P99_RATIO else 'not met'}{ann.steal_note(steal)}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="each window's length (default 30)")
    parser.add_argument("--annotators", type=int, default=50, help="annotators per window (default 50)")
    parser.add_argument("--think-ms", type=float, default=1000.0,
                        help="their mean pause before each label, exponential (default 1000)")
    parser.add_argument("--agents", type=int, default=200, help="idle agents in the loaded window (default 200)")
    parser.add_argument("--events-per-s", type=float, default=20.0, help="the run's events per second (default 20)")
    parser.add_argument("--agent-warmup", type=float, default=5.0,
                        help="seconds the agents run before the loaded window's sign-ins (default 5)")
    parser.add_argument("--items", type=int, default=20000, help="items in the project (default 20000)")
    parser.add_argument("--client-procs", type=int, default=2, help="client processes sharing the annotators")
    parser.add_argument("--workers", type=int, default=None, help="gunicorn workers (default: potato's)")
    parser.add_argument("--threads", type=int, default=None, help="threads per worker (default: potato's)")
    return quick.parse(parser, {"seconds": 4.0, "annotators": 10, "agents": 20, "agent_warmup": 1.0, "items": 300})


def main() -> None:
    args = parse_args()
    ann.THINK_S = args.think_ms / 1000.0  # read by the annotator processes, which fork from here
    extra = [f"--{k}={v}" for k, v in (("workers", args.workers), ("threads", args.threads)) if v is not None]
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; server: potato start "
          f"{' '.join(extra) or '(default workers/threads)'}; {args.annotators} annotators, think "
          f"{args.think_ms:g} ms; {args.seconds:g} s per window; loaded: {args.events_per_s:g} events/s on "
          f"{STREAM_BACKEND!r} + {args.agents} idle agents on {IDLE_BACKEND!r}", flush=True)
    with tempfile.TemporaryDirectory(prefix="potato-bench-mixed-") as tmp:
        config = make_project(Path(tmp) / "project", args.items)
        tokens = {backend: register(config, backend) for backend in (STREAM_BACKEND, IDLE_BACKEND)}
        with ann.running_server(config, extra) as (port, pgid):
            url = f"http://127.0.0.1:{port}"
            time.sleep(1.0)  # let the workers finish starting
            base = annotator_window(port, pgid, [f"baseline-{k}" for k in range(args.annotators)], args.seconds,
                                    args.client_procs)
            loaded = loaded_window(url, port, pgid, tokens, args)
            stored = labels_stored(port)
            # running_server's SIGTERM ends it: held long polls answer at once when the server stops
            # (they held the graceful stop for up to 25 s until this benchmark found it).
    print_report(base, loaded, stored, args)


if __name__ == "__main__":
    main()
