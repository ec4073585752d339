"""Slow clients against the real server: does it still answer while N connections send their request
headers a line at a time (slowloris)?

Against ``potato start`` (gunicorn, default workers and threads) on 127.0.0.1: ``--slow`` connections
each send a request line and then one header line every ``--drip`` seconds, never finishing. Meanwhile
``GET /healthz`` and an annotator's sign-in are timed, ``--probes`` times each; the baseline is the same
probes against the same server with no slow client, measured first in the same run. Target: the median
with slow clients at most 3x the baseline, and no probe that times out (``--timeout``). The stock
``gthread`` worker is measured too (``--stock``: the server started with POTATO_STOCK_GTHREAD=1)
for reference: it gives every slow connection a thread.

    .venv/bin/python bench/slowloris.py                  # 200 slow clients, ~1 min
    .venv/bin/python bench/slowloris.py --slow 40 --stock
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import quick  # bench/quick.py: --quick, the sizes CI runs

sys.path.insert(0, str(Path(__file__).resolve().parent))
import annotators as ann  # noqa: E402  (bench/annotators.py: project and server start)

TARGET = 3.0


def probe(url: str, timeout: float) -> float | None:
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=timeout) as resp:
            resp.read()
        req = urllib.request.Request(url + "/login", data=b"name=probe", method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read()
    except OSError:
        return None
    return time.perf_counter() - began


def probes(url: str, n: int, timeout: float) -> list[float | None]:
    out = []
    for _ in range(n):
        out.append(probe(url, timeout))
        time.sleep(0.5)
    return out


def slow_clients(port: int, n: int, drip: float, stop: threading.Event) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.send(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n")
        socks.append(sock)

    def loop() -> None:
        while not stop.is_set():
            for sock in socks:
                try:
                    sock.send(b"X-Slow: 1\r\n")
                except OSError:
                    pass
            stop.wait(drip)

    threading.Thread(target=loop, daemon=True).start()
    return socks


def show(name: str, times: list[float | None]) -> float:
    done = [t for t in times if t is not None]
    med = statistics.median(done) if done else float("inf")
    print(f"  {name}: median {med * 1000:.1f} ms, max {max(done, default=0) * 1000:.1f} ms, "
          f"{len(times) - len(done)} of {len(times)} timed out")
    return med if len(done) == len(times) else float("inf")


def measure(args: argparse.Namespace, stock: bool) -> None:
    if stock:
        os.environ["POTATO_STOCK_GTHREAD"] = "1"
    else:
        os.environ.pop("POTATO_STOCK_GTHREAD", None)
    with tempfile.TemporaryDirectory(prefix="potato-bench-slow-") as tmp:
        config = ann.make_project(Path(tmp) / "project", 100)
        with ann.running_server(config, []) as (port, _pgid):
            url = f"http://127.0.0.1:{port}"
            print(f"\n== {'stock gthread (reference)' if stock else 'potato start'}: {args.slow} slow clients, "
                  f"a header line every {args.drip:g} s")
            base = show("no slow client", probes(url, args.probes, args.timeout))
            stop = threading.Event()
            socks = slow_clients(port, args.slow, args.drip, stop)
            time.sleep(2 * args.drip)  # every slow connection has started its headers
            try:
                slow = show(f"{args.slow} slow clients", probes(url, args.probes, args.timeout))
            finally:
                stop.set()
                for sock in socks:
                    sock.close()
            ratio = slow / base
            verdict = "PASS" if ratio <= TARGET else "MISS"
            print(f"slow/none {ratio:.2f} (target <= {TARGET:g}, no time-outs): {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=200, help="slow connections (default 200)")
    parser.add_argument("--drip", type=float, default=2.0, help="seconds between header lines (default 2)")
    parser.add_argument("--probes", type=int, default=10, help="probes per phase (default 10)")
    parser.add_argument("--timeout", type=float, default=8.0, help="a probe slower than this failed (default 8 s)")
    parser.add_argument("--stock", action="store_true", help="also measure the stock gthread worker")
    args = quick.parse(parser, {"slow": 20, "drip": 0.5, "probes": 3})
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; probe = GET /healthz + POST /login")
    measure(args, stock=False)
    if args.stock:
        measure(args, stock=True)


if __name__ == "__main__":
    main()
