"""The local backend: the worker as a subprocess of the server, in its own process group (R1, R11).

Cancel is SIGTERM to the whole group (the worker and anything its trainer started), then
SIGKILL after ``grace_seconds``; the group is why a trainer's data-loader children die too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import potato
from potato.training.archive import extract_archive
from potato.training.jobfiles import EventFollower

PID_FILE = "worker.pid"


def source_root() -> Path:
    """The folder that holds the ``potato`` package, for the worker's PYTHONPATH."""
    return Path(potato.__file__).resolve().parent.parent


def worker_env(num_threads: int | None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: our source first on PYTHONPATH; thread caps when configured (R16)."""
    env = dict(os.environ if base is None else base)
    paths = [str(source_root())] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    if num_threads:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[name] = str(num_threads)
    # Never hand the server's secrets to a trainer.
    for name in list(env):
        if name.startswith("POTATO_") and "TOKEN" in name:
            del env[name]
    return env


class LocalExecution:
    """One worker process for one run."""

    def __init__(self, job_dir: Path, proc: subprocess.Popen) -> None:
        self.job_dir = job_dir
        self.proc = proc
        self.follower = EventFollower(job_dir / "events.jsonl")

    @classmethod
    def start(cls, bundle: Path, job_dir: Path, num_threads: int | None = None,
              python: str = sys.executable) -> LocalExecution:
        extract_archive(bundle, job_dir / "bundle")
        out = (job_dir / "worker.out").open("ab")
        try:
            proc = subprocess.Popen(
                [python, "-m", "potato.training.worker", str(job_dir)],
                cwd=str(job_dir),
                env=worker_env(num_threads),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            out.close()
        (job_dir / PID_FILE).write_text(str(proc.pid))
        return cls(job_dir, proc)

    def poll(self) -> int | None:
        return self.proc.poll()

    def events(self) -> list[dict[str, Any]]:
        return self.follower.read_new()

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass  # already gone: nothing left to stop

    def terminate(self) -> None:
        """Warm stop: the worker saves what it can and exits 143."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """Cold stop for a worker that ignored SIGTERM for ``grace_seconds``."""
        self._signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass  # unkillable (D state): poll() keeps reporting it and the run still ends


def kill_orphan(job_dir: Path) -> bool:
    """Stop a worker left behind by a server that died (kill -9): its pid file names it.

    Only a process whose command line is our worker for this job dir is signalled, so a
    recycled pid is never hit.
    """
    try:
        pid = int((job_dir / PID_FILE).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return False
    if b"potato.training.worker" not in cmdline or str(job_dir).encode() not in cmdline:
        return False
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True
