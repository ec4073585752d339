"""The ssh backend's speed: a warm dispatch, the cold first run (code push), the model copy-back.

Three sections against the real server (``potato start``, gunicorn) on 127.0.0.1 with an ``ssh``
backend on the test sshd (``scripts/test-infra start ssh``: 127.0.0.1:22022, user ``trainer``, the
host's ``/usr/bin/python3`` with the standard library only, so the ``noop`` trainer). Each prints
ours, a baseline measured in the same run, the ratio and the target:

1. warm dispatch (Potato's code already on the host, the backend's connection still open from the
   run before, as within ``keep_connection_s``): POST a ``noop`` run -> the worker's first progress
   event (its ``t``), vs one cold ``ssh -o BatchMode=yes ... true`` (a new connection, no control
   master) on the same sshd; medians. Target <= 1.5 x. Then, for reference, the same with the
   connection closed before each run (a run after ``keep_connection_s``, or with it 0).
2. cold first run: the same after deleting ``<remote_dir>/code`` on the host and closing the
   connection, so the run logs in and pushes the code first. Target <= 3 x.
3. copy-back: a run saving ``weights.bin`` of ``--artifact-mb`` MiB; the time the run spends
   copying (from the step "copying the model files", which run.log's "Predictions saved; copying
   the model files." goes with, to the run's ``finished_at``), vs the fastest raw ``ssh host cat
   FILE > /dev/null`` of a file of the same size on the same sshd with the same (default) cipher,
   new connection or through a control master as ours; MB/s. Target >= 0.9 x.

The backend's ``remote_dir`` is a folder of this script's own (``--remote-dir``), removed at the
end, so the test suite (which wipes ``~/.cache/potato-training``) and this script do not disturb
each other. Everything local lives in a temp dir; the server runs in its own process group.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
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

from potato.server.training.dispatcher import IDLE_POLL_S  # noqa: E402
from potato.config.schema import SshBackendSettings  # noqa: E402
from potato.server.training.backends.ssh.remoterun import WATCH_S  # noqa: E402
from potato.server.training.backends.ssh.host import control_dir  # noqa: E402
from potato.server.training.backends.ssh.command import SshTarget  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEY = ann.ADMIN_KEY
BACKEND = "gpu"
HOST, PORT, USER = "127.0.0.1", 22022, "trainer"
IDENTITY = "/tmp/potato-testcluster/ssh/id_ed25519"
PYTHON = "/usr/bin/python3"
SCHEME = {"annotation_type": "radio", "name": "sentiment", "description": "Positive?",
          "labels": ["positive", "negative"]}
NOOP = {"trainer": "noop", "schemas": ["sentiment"], "backend": BACKEND}
TARGET_WARM = 1.5   # warm dispatch / one cold ssh, at most
TARGET_COLD = 3.0   # cold first run / one cold ssh, at most
TARGET_COPY = 0.9   # our copy-back MB/s / the fastest raw ssh stream's, at least
TERMINAL = ("succeeded", "failed", "cancelled")
SSH = ["ssh", "-o", "BatchMode=yes", "-p", str(PORT), "-i", IDENTITY]
COLD = [*SSH, "-o", "ControlMaster=no", "-o", "ControlPath=none"]  # a new connection whatever ~/.ssh/config says


# -- helpers -------------------------------------------------------------------------------------

def api(url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"X-API-Key": KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def on_host(command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """A command on the host as the trainer, on a connection of its own."""
    out = subprocess.run([*COLD, f"{USER}@{HOST}", command], capture_output=True, text=True, timeout=300)
    if check and out.returncode != 0:
        raise SystemExit(f"on the host: {command!r} failed ({out.returncode}): {out.stderr.strip()}")
    return out


def start_sshd() -> None:
    if os.geteuid() != 0 or not Path("/usr/sbin/sshd").exists() or shutil.which("ssh") is None:
        raise SystemExit("This benchmark needs the test sshd: as root, with openssh-server installed "
                         "(scripts/test-infra start ssh starts it).")
    out = subprocess.run([str(ROOT / "scripts" / "test-infra"), "start", "ssh"], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"scripts/test-infra start ssh failed:\n{out.stdout}\n{out.stderr}")


def cipher_line() -> str:
    """ssh's offered ciphers (ssh -G) and the one negotiated with the test sshd (ssh -v)."""
    offered = subprocess.run(["ssh", "-G", "-p", str(PORT), HOST], capture_output=True, text=True).stdout
    first = next((line.split()[1].split(",")[0] for line in offered.splitlines() if line.startswith("ciphers ")), "?")
    verbose = subprocess.run([*COLD, "-v", f"{USER}@{HOST}", "true"], capture_output=True, text=True).stderr
    got = next((line.split("cipher:")[1].split()[0] for line in verbose.splitlines()
                if "server->client cipher:" in line), "?")
    kex = next((line.split("algorithm:")[1].strip() for line in verbose.splitlines()
                if "kex: algorithm:" in line), "?")
    return f"cipher {got} (negotiated; ssh -G offers {first} first), kex {kex}"


def make_project(root: Path, remote_dir: str) -> Path:
    (root / "data").mkdir(parents=True)
    items = [{"id": ann.item_id(i), "text": f"Review {i}: it {'broke' if i % 2 else 'works'}."} for i in range(40)]
    (root / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    backend = {"type": "ssh", "host": HOST, "port": PORT, "user": USER, "identity_file": IDENTITY,
               "python": PYTHON, "remote_dir": remote_dir, "max_artifact_mb": 100000}
    config = {"annotation_task_name": "Bench", "task_dir": ".", "data_files": ["data/reviews.json"],
              "item_properties": {"id_key": "id", "text_key": "text"}, "output_annotation_dir": "out",
              "admin_api_key": KEY, "annotation_schemes": [SCHEME],
              "model_training": {"enabled": True, "backends": {BACKEND: backend}}}
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def add_labels(url: str, n: int) -> None:
    api(url + "/admin/api/labels", {"user": "gold", "labels": [
        {"id": ann.item_id(i), "schema": "sentiment", "label": SCHEME["labels"][i % 2]} for i in range(n)]})


def cold_ssh() -> float:
    """One ``ssh -o BatchMode=yes -p 22022 -i KEY trainer@127.0.0.1 true``, no control master."""
    began = time.perf_counter()
    subprocess.run([*COLD, f"{USER}@{HOST}", "true"], check=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - began


def close_connection(config: Path, timeout: float = 30.0) -> None:
    """End the backend's control master (kept ``keep_connection_s`` after a run) and wait until it
    has exited, so the next round starts with no connection to the host."""
    folder = control_dir(config.parent / "out" / "training")
    backend = SshBackendSettings(name=BACKEND, host=HOST, port=PORT, user=USER, identity_file=IDENTITY)
    subprocess.run(SshTarget(backend, folder).exit_master(), capture_output=True, timeout=30)
    deadline = time.monotonic() + timeout
    while any(folder.iterdir()):
        if time.monotonic() > deadline:
            raise SystemExit(f"the control master in {folder} did not exit within {timeout:g} s")
        time.sleep(0.05)


class Trace:
    """``--trace-ssh``: an ``ssh`` on the server's PATH that logs each call's start, end and command
    (a bash wrapper: a few ms per call, and a cancel's SIGTERM would not reach the real ssh)."""

    def __init__(self, tmp: Path) -> None:
        self.log = tmp / "ssh-trace.log"
        folder = tmp / "trace-bin"
        folder.mkdir()
        real = shutil.which("ssh")
        (folder / "ssh").write_text(
            "#!/bin/bash\n"
            "s=$(date +%s.%N)\n"
            f"{real} \"$@\"\nrc=$?\n"
            f"printf '%s %s %s %s\\n' \"$s\" \"$(date +%s.%N)\" \"$rc\" \"${{*: -1}}\" | tr -s '\\n' ' ' >> {self.log}\n"
            f"echo >> {self.log}\n"
            "exit $rc\n")
        (folder / "ssh").chmod(0o755)
        os.environ["PATH"] = f"{folder}:{os.environ['PATH']}"

    def show(self, began: float, until: float) -> None:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        for line in lines:
            parts = line.split(" ", 3)
            if len(parts) < 4 or not began <= float(parts[0]) <= until:
                continue
            start, end, rc, command = float(parts[0]), float(parts[1]), parts[2], parts[3]
            print(f"    ssh {start - began:6.3f} -> {end - began:6.3f} s ({end - start:.3f} s, rc {rc}): "
                  f"{command.strip()[:110]}")


# -- 1-2. dispatch --------------------------------------------------------------------------------

def one_dispatch(url: str, config: Path, params: dict[str, Any], close: bool) -> dict[str, float]:
    """POST a run; poll the run every 20 ms for its steps until it ends. Seconds from the POST to:
    the first progress event's t ("progress"), started_at ("pickup"), the steps first seen, the
    worker's first event's t ("worker")."""
    began = time.time()
    run_id = api(url + "/admin/training/api/runs", dict(NOOP, params=params))["id"]
    seen: dict[str, float] = {}
    while True:
        run = api(f"{url}/admin/training/api/runs/{run_id}")
        now = time.time() - began
        step = run["step"] or ""
        for key, prefix in (("push", "copying Potato's code"), ("session", "waiting for the agent"),
                            ("agent", "downloading the bundle")):
            if step.startswith(prefix):
                seen.setdefault(key, now)
        if run["state"] in TERMINAL:
            break
        time.sleep(0.02)
    if run["state"] != "succeeded":
        raise SystemExit(f"run {run_id} {run['state']}: {run.get('message')}\n{run_logs(config, run_id)}")
    events = api(f"{url}/admin/training/api/runs/{run_id}/events")["events"]
    timed = [e for e in events if "t" in e]
    out = {"progress": next(e["t"] for e in timed if e["type"] == "progress") - began,
           "pickup": run["started_at"] - began, "worker": timed[0]["t"] - began, **seen}
    if close:
        close_connection(config)
    else:
        time.sleep(0.5)  # the run's clean-up (socket folder, forward) is done by then
    return out


def run_logs(config: Path, run_id: str, lines: int = 40) -> str:
    """The ends of a failed run's run.log and agent.log: the bench's folder is gone once it exits."""
    folder = config.parent / "out" / "training" / "runs" / run_id
    out = []
    for name in ("run.log", "agent.log"):
        path = folder / name
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:] if path.exists() else []
        out.append(f"-- {name} (last {lines} lines):\n" + "\n".join(text))
    return "\n".join(out)


MODES = {"warm": ("warm dispatch", TARGET_WARM), "new": ("warm code, new connection", None),
         "cold": ("cold first run", TARGET_COLD)}


def section_dispatch(url: str, config: Path, remote_dir: str, rounds: int, mode: str, trace: Trace | None) -> None:
    """``mode``: warm (code there, connection open), new (code there, no connection), cold (neither)."""
    name, target = MODES[mode]
    cold = mode == "cold"
    params = {"sleep_s": 0.01}  # noop reports progress only while it sleeps
    one_dispatch(url, config, params, close=mode != "warm")  # the code on the host, the connection as the mode says
    rows: list[tuple[dict[str, float], float]] = []
    rng = random.Random({"warm": 0, "new": 2, "cold": 1}[mode])
    for k in range(rounds):
        if cold:
            on_host(f"rm -rf {remote_dir}/code")
        time.sleep(rng.uniform(0, 2 * IDLE_POLL_S))  # a random phase of the dispatcher's poll
        began = time.time()
        if k % 2 == 0:
            ours, base = one_dispatch(url, config, params, mode != "warm"), cold_ssh()
        else:
            base, ours = cold_ssh(), one_dispatch(url, config, params, mode != "warm")
        rows.append((ours, base))
        parts = ", ".join(f"{key} {ours[key]:.3f}" for key in ("pickup", "push", "session", "agent", "worker")
                          if key in ours)
        print(f"  round {k + 1}: ours {ours['progress']:.3f} s ({parts}); cold ssh {base:.3f} s", flush=True)
        if trace is not None:
            trace.show(began, time.time())
    med = statistics.median(r[0]["progress"] for r in rows)
    base = statistics.median(r[1] for r in rows)

    def phase(a: str, b: str) -> float:
        got = [r[0][b] - r[0][a] for r in rows if a in r[0] and b in r[0]]
        return statistics.median(got) if got else float("nan")

    first = "push" if cold else "session"
    print(f"POST -> first progress (worker's t), medians of {rounds}: ours {med:.3f} s; one cold ssh `true` "
          f"{base:.3f} s")
    print(f"  ours, medians: queue pick-up {statistics.median(r[0]['pickup'] for r in rows):.3f} s (started_at); "
          f"connect + probe {phase('pickup', first):.3f} s (to the step '{'copying' if cold else 'waiting'}...' "
          f"seen, polled every 0.02 s)"
          + (f"; code push {phase('push', 'session'):.3f} s" if cold else "")
          + f"; agent session up {phase('session', 'agent'):.3f} s (to the agent's first step seen); bundle + "
          f"worker start {phase('agent', 'worker'):.3f} s (to the worker's first event); worker to progress "
          f"{phase('worker', 'progress'):.3f} s")
    ratio = med / base
    if target is None:
        print(f"{name}/cold ssh {ratio:.2f} (no target: for reference, a run after keep_connection_s)")
    else:
        print(f"{name}/cold ssh {ratio:.2f} (target <= {target:g}): {'PASS' if ratio <= target else 'MISS'}")


# -- 3. copy-back ---------------------------------------------------------------------------------

def ours_copy(url: str, config: Path, artifact_mb: int) -> tuple[float, float, int]:
    """(seconds in copying: the step 'copying the model files' first seen -> finished_at; of them until
    the first MiB had arrived: the step 'copying the model from' first seen; bytes that came back)."""
    began = time.time()
    run_id = api(url + "/admin/training/api/runs", dict(NOOP, params={"artifact_mb": artifact_mb}))["id"]
    start = first_mb = None
    while True:
        run = api(f"{url}/admin/training/api/runs/{run_id}")
        now = time.time()
        step = run["step"] or ""
        if start is None and (step == "copying the model files" or step.startswith("copying the model from")
                              or run["state"] == "succeeded"):
            start = now
        if first_mb is None and (step.startswith("copying the model from") or run["state"] == "succeeded"):
            first_mb = now
        if run["state"] in TERMINAL:
            break
        time.sleep(0.02 if first_mb is None else 0.25)  # fast until the stream flows, then out of its way
        if time.time() - began > 600:
            raise SystemExit(f"run {run_id} still {run['state']} after 600 s")
    if run["state"] != "succeeded" or start is None or first_mb is None:
        raise SystemExit(f"run {run_id} {run['state']}: {run.get('message')}")
    artifacts = config.parent / "out" / "training" / "runs" / run_id / "artifacts"
    size = sum(f.stat().st_size for f in artifacts.rglob("*") if f.is_file())
    shutil.rmtree(artifacts)  # disk: 300 MB a round
    close_connection(config)
    return run["finished_at"] - start, first_mb - start, size


def timed(command: str) -> float:
    began = time.perf_counter()
    subprocess.run(command, shell=True, check=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - began


def section_copy(url: str, config: Path, tmp: Path, remote_dir: str, artifact_mb: int, rounds: int,
                 other_cipher: str) -> None:
    size = artifact_mb * 1024 * 1024
    stream_dir = f"{remote_dir}/bench-stream"
    began = time.perf_counter()
    on_host(f"mkdir -p {stream_dir} && head -c {size} /dev/urandom > {stream_dir}/weights.bin")
    print(f"  the baselines' file: {stream_dir}/weights.bin on the host, {size:,} random bytes "
          f"(written in {time.perf_counter() - began:.1f} s); ours copies weights.bin + labels.json + model.json")
    master = tmp / "cm"
    mux = [*SSH, "-o", f"ControlPath={master}"]
    proc = subprocess.Popen([*mux, "-o", "ControlMaster=yes", "-N", f"{USER}@{HOST}"], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while subprocess.run([*mux, "-O", "check", f"{USER}@{HOST}"], capture_output=True).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the baselines' control master did not start")
        time.sleep(0.05)
    q = shlex.join
    file = f"{stream_dir}/weights.bin"
    dest = tmp / "copied"
    kinds = {
        "cat, new connection": f"{q(COLD)} {USER}@{HOST} {q(['cat', file])} > /dev/null",
        "cat, control master": f"{q(mux)} {USER}@{HOST} {q(['cat', file])} > /dev/null",
        "cat > a local file (master)": f"{q(mux)} {USER}@{HOST} {q(['cat', file])} > {dest}/weights.bin",
        "tar c | tar x (master)": f"{q(mux)} {USER}@{HOST} 'tar c -C {stream_dir} .' | tar x -C {dest}",
        f"cat, {other_cipher}, new connection": (f"{q(COLD)} -c {other_cipher} {USER}@{HOST} {q(['cat', file])} "
                                                 "> /dev/null"),
    }
    raw = list(kinds)[:2]
    rows: dict[str, list[float]] = {kind: [] for kind in ("ours", "ours-first-mb", *kinds)}
    sizes: list[int] = []
    try:
        for k in range(rounds):
            order = ["ours", *kinds] if k % 2 == 0 else [*kinds, "ours"]
            line: list[str] = []
            for kind in order:
                shutil.rmtree(dest, ignore_errors=True)
                dest.mkdir()
                if kind == "ours":
                    took, wait, n_bytes = ours_copy(url, config, artifact_mb)
                    rows["ours"].append(took)
                    rows["ours-first-mb"].append(wait)
                    sizes.append(n_bytes)
                    line.insert(0, f"ours {took:.2f} s ({n_bytes / 1e6 / took:,.0f} MB/s; first MiB in after "
                                   f"{wait:.2f})")
                else:
                    rows[kind].append(timed(kinds[kind]))
                    line.append(f"{kind} {rows[kind][-1]:.2f}")
            print(f"  round {k + 1}: " + "; ".join(line), flush=True)
    finally:
        subprocess.run([*mux, "-O", "exit", f"{USER}@{HOST}"], capture_output=True)
        proc.wait(10)
        shutil.rmtree(dest, ignore_errors=True)
    got = statistics.median(sizes)
    best = {kind: min(v) for kind, v in rows.items()}
    print(f"best of {rounds} (noise only slows a round down); MB/s of {got / 1e6:.1f} MB (ours) and {size / 1e6:.1f} "
          "MB (the rest):")
    print(f"  ours (copying -> finished_at) {best['ours']:.2f} s = {got / 1e6 / best['ours']:,.0f} MB/s; of it "
          f"{statistics.median(rows['ours-first-mb']):.2f} s (median) before the first MiB had arrived (follow() looks "
          f"every WATCH_S = {WATCH_S} s, then a command over the master, the host's Python starting)")
    for kind in kinds:
        print(f"  {kind}: {best[kind]:.2f} s = {size / 1e6 / best[kind]:,.0f} MB/s")
    fastest = max(raw, key=lambda kind: size / best[kind])
    ratio = (got / best["ours"]) / (size / best[fastest])
    to_file = (got / best["ours"]) / (size / best["cat > a local file (master)"])
    print(f"  ours/cat > a local file {to_file:.2f} (for reference: that stream writes the file too)")
    print(f"ours/fastest raw stream to /dev/null ({fastest}) {ratio:.2f} (target >= {TARGET_COPY:g}): "
          f"{'PASS' if ratio >= TARGET_COPY else 'MISS'}")


# -- main ----------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sections", default="1,2,3", help="which sections to run (default 1,2,3)")
    parser.add_argument("--rounds", type=int, default=7, help="1: warm runs, alternating with cold ssh (default 7)")
    parser.add_argument("--cold-rounds", type=int, default=5, help="2: cold first runs (default 5)")
    parser.add_argument("--artifact-mb", type=int, default=300, help="3: MiB of weights.bin (default 300)")
    parser.add_argument("--copy-rounds", type=int, default=3, help="3: copy-back rounds, best of (default 3)")
    parser.add_argument("--other-cipher", default="aes128-gcm@openssh.com",
                        help="3: a second cipher for reference (default aes128-gcm@openssh.com)")
    parser.add_argument("--remote-dir", default="~/.cache/potato-bench-ssh",
                        help="the backend's remote_dir on the host, removed at the end (default ~/.cache/potato-bench-ssh)")
    parser.add_argument("--trace-ssh", action="store_true",
                        help="1-2: log and print every ssh command the server runs (a wrapper on its PATH)")
    parser.add_argument("--workers", type=int, default=None, help="gunicorn workers (default: potato's)")
    parser.add_argument("--threads", type=int, default=None, help="threads per worker (default: potato's)")
    args = quick.parse(parser, {"rounds": 2, "cold_rounds": 1, "artifact_mb": 5, "copy_rounds": 1})
    sections = {int(s) for s in args.sections.split(",") if s.strip()}
    extra = [f"--{k}={v}" for k, v in (("workers", args.workers), ("threads", args.threads)) if v is not None]
    if not args.remote_dir.startswith("~/") or any(c in args.remote_dir for c in " '\"$`\\;&|"):
        raise SystemExit("--remote-dir must be a plain path under ~/")
    start_sshd()
    remote = args.remote_dir  # a shell word on the host: ~/ expands there
    on_host(f"rm -rf {remote}")
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; ssh to {USER}@{HOST}:{PORT}, "
          f"{cipher_line()}; remote_dir {remote}; sections {','.join(map(str, sorted(sections)))}")
    with tempfile.TemporaryDirectory(prefix="potato-bench-ssh-") as tmp_name:
        tmp = Path(tmp_name)
        trace = Trace(tmp) if args.trace_ssh else None
        config = make_project(tmp / "project", remote)
        try:
            with ann.running_server(config, extra) as (port, _pgid):
                url = f"http://127.0.0.1:{port}"
                add_labels(url, 10)
                if 1 in sections:
                    print(f"\n== 1. warm dispatch: POST -> first progress vs one cold ssh, {args.rounds} rounds "
                          f"(load average {os.getloadavg()[0]:.2f})", flush=True)
                    section_dispatch(url, config, remote, args.rounds, "warm", trace)
                    print(f"\n== 1b. the same with the connection closed before each run, {args.rounds} rounds "
                          f"(load average {os.getloadavg()[0]:.2f})", flush=True)
                    section_dispatch(url, config, remote, args.rounds, "new", trace)
                if 2 in sections:
                    print(f"\n== 2. cold first run ({remote}/code deleted first), {args.cold_rounds} rounds "
                          f"(load average {os.getloadavg()[0]:.2f})", flush=True)
                    section_dispatch(url, config, remote, args.cold_rounds, "cold", trace)
                if 3 in sections:
                    print(f"\n== 3. copy-back of {args.artifact_mb} MiB, {args.copy_rounds} rounds (load average "
                          f"{os.getloadavg()[0]:.2f})", flush=True)
                    section_copy(url, config, tmp, remote, args.artifact_mb, args.copy_rounds, args.other_cipher)
        finally:
            on_host(f"rm -rf {remote}", check=False)
            close_connection(config)
            try:  # the server's control-master folder in /tmp (empty once the last master has exited)
                control_dir(config.parent / "out" / "training").rmdir()
            except OSError:
                pass
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
