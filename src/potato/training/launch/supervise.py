"""The one loop that runs a worker: start it, follow its events, stop it on a cancel or a limit.

Remote-safe: standard library only, Python 3.8. The agent is the only caller, wherever it runs
(the server's own machine for the local backend, an ssh host, a machine behind NAT), so a worker
is started, followed and stopped by exactly this code everywhere.

The decisions are pure functions of the clock (:func:`check_limits`); the loop in
:class:`Supervisor` only applies them. Stopping is warm, then cold: SIGTERM to the
worker's whole process group, SIGKILL once ``grace_seconds`` have passed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence

from potato.training.launch.codefiles import code_root
from potato.training.launch.containers import ContainerSpec, worker_argv
from potato.training.job.files import EventFollower, read_exit_code, read_json
from potato.training.job.limits import THREAD_VARIABLES, apply_thread_limit
from potato.training.job.results import LIFELINE_FLAG, Reason

Clock = Callable[[], float]
POLL_S = 0.2
"""How often the loop looks at the worker's files and process."""

PID_FILE = "worker.pid"


@dataclass
class Stop:
    """Why the worker is being stopped, and when the cold stop (SIGKILL) is due."""

    reason: Reason
    message: str
    kill_at: float

    def to_json(self) -> Dict[str, str]:
        return {"reason": self.reason.value, "message": self.message}


@dataclass
class StopRequest:
    """Someone asks the worker to stop: the server (cancel, wall limit), the agent's operator
    (Ctrl-C) or the agent itself (the server out of reach for too long)."""

    reason: Reason
    message: str


def wall_limit_message(max_wall_seconds: int) -> str:
    return (f"The run passed max_wall_seconds ({max_wall_seconds} s) and was stopped; "
            "raise model_training.max_wall_seconds or train on fewer items.")


def check_limits(started_at: Optional[float], now: float, max_wall_seconds: Optional[int],
                 grace_seconds: float, request: Optional[StopRequest]) -> Optional[Stop]:
    """A Stop when the worker must stop now: someone asked, or it passed max_wall_seconds."""
    if request is not None:
        return Stop(request.reason, request.message, now + grace_seconds)
    if max_wall_seconds and started_at is not None and now - started_at > max_wall_seconds:
        return Stop(Reason.TIMEOUT, wall_limit_message(max_wall_seconds), now + grace_seconds)
    return None


WORKER_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TMP", "TEMP",
    "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
    "XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_CACHE",
    "TRANSFORMERS_OFFLINE", "TORCH_HOME", "SENTENCE_TRANSFORMERS_HOME",
)
"""What a worker sees of the environment it is started from (plus :data:`WORKER_ENV_PREFIXES`): what
programs, locales, CUDA and the shipped trainers read. Anything else (cloud keys, HF_TOKEN, the server's
own settings) stays out unless named in ``pass_env`` / ``--pass-env`` or set in a backend's ``env``."""
WORKER_ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "NCCL_", "PYTORCH_", "OMP_", "MKL_", "KMP_",
                       "DOCKER_", "APPTAINER_", "SINGULARITY_")
"""Families of the allow-list: locale, CUDA and its libraries, thread pools, and the container
runtimes' own settings (``DOCKER_HOST``, ``APPTAINER_BINDPATH``) for a worker in an image."""


def allowed_env(source: Mapping[str, str], pass_env: Sequence[str] = (),
                extra_paths: Optional[List[str]] = None) -> Dict[str, str]:
    """The allow-list (:data:`WORKER_ENV`, :data:`WORKER_ENV_PREFIXES`, thread variables) of ``source``
    plus the names in ``pass_env``, ``extra_paths`` first on PYTHONPATH, unbuffered output; never
    Potato's own variables (an agent's token, the server's admin key). The one definition of what a
    training process sees: the worker's environment, and the local agent's (which must carry the
    ``pass_env`` names to hand them on, and nothing else of the server's)."""
    keep = set(WORKER_ENV) | set(THREAD_VARIABLES) | set(pass_env)
    env = {k: v for k, v in source.items()
           if (k in keep or k.startswith(WORKER_ENV_PREFIXES)) and not k.startswith("POTATO_")}
    paths = list(extra_paths or []) + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def worker_env(num_threads: Optional[int], base: Optional[Mapping[str, str]] = None,
               extra_paths: Optional[List[str]] = None, pass_env: Sequence[str] = ()) -> Dict[str, str]:
    """The worker's environment: :func:`allowed_env` of the agent's, thread caps when configured."""
    env = allowed_env(os.environ if base is None else base, pass_env, extra_paths)
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    apply_thread_limit(num_threads, env)
    return env


class WorkerProcess:
    """The worker as a subprocess in its own process group (a session of its own), so that a
    Ctrl-C at the agent's terminal does not reach it and a stop reaches its children too.

    Its stdin is a lifeline: a pipe whose write end only this agent holds and never writes to.
    However the agent ends (``kill -9`` included), the kernel closes that end, the worker reads end
    of file and stops itself as a warm stop would: never two workers at once, no orphan holding a
    GPU. Through ``docker run -i`` and ``apptainer exec`` the pipe reaches the worker too.
    """

    def __init__(self, job_dir: Path, proc: "subprocess.Popen[bytes]", container: Optional[str] = None) -> None:
        self.job_dir = job_dir
        self.proc = proc
        self.container = container
        """The docker container's name when the worker runs in one (a cold stop must kill it there)."""

    @classmethod
    def start(cls, job_dir: Path, python: str = sys.executable, num_threads: Optional[int] = None,
              container: Optional[ContainerSpec] = None, shared_dir: Optional[Path] = None,
              pass_env: Sequence[str] = ()) -> "WorkerProcess":
        """Start the worker; with ``container`` inside that image, the job's folder ``shared_dir``
        mounted at its own path and this agent's code first on its ``PYTHONPATH``. The GPUs are the ``CUDA_VISIBLE_DEVICES`` the agent was given."""
        env = worker_env(num_threads, extra_paths=[code_root()], pass_env=pass_env)
        argv: List[str] = [python, "-m", "potato.training.worker", LIFELINE_FLAG, str(job_dir)]
        name = None
        if container is not None:
            name = f"potato-worker-{job_dir.name}" if container.runtime == "docker" else None
            threads: Dict[str, str] = {}
            apply_thread_limit(num_threads, threads)
            argv = [str(w) for w in worker_argv(
                container, str(job_dir), code_root(), str(shared_dir or job_dir), user=f"{os.getuid()}:{os.getgid()}",
                gpus=os.environ.get("CUDA_VISIBLE_DEVICES") or None, name=name, env=threads, lifeline=True)]
        out = open(str(job_dir / "worker.out"), "ab")
        try:
            # stdin=PIPE: the lifeline. Its write end is non-inheritable and close_fds holds, so no
            # other child of the agent keeps it open after the agent is gone.
            proc = subprocess.Popen(argv, cwd=str(job_dir), env=env, stdin=subprocess.PIPE, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
        finally:
            out.close()
        (job_dir / PID_FILE).write_text(str(proc.pid))
        return cls(job_dir, proc, name)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> Optional[int]:
        code = self.proc.poll()
        if code is not None:
            self._drop_lifeline()
        return code

    def _drop_lifeline(self) -> None:
        """Close the lifeline once the worker has ended (a polling agent runs many workers)."""
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.close()
            except OSError:
                pass  # a pipe nobody reads any more: closing is all that was wanted

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass  # already gone: nothing left to stop

    def terminate(self) -> None:
        """Warm stop: the worker saves what it can and exits 143."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """Cold stop, for a worker that ignored SIGTERM for ``grace_seconds``. In docker the worker is
        the daemon's child, not ours: killing the client would leave it running, so kill it there."""
        if self.container:
            try:
                subprocess.run(["docker", "kill", self.container], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass  # the client's SIGKILL below still ends what is ours
        self._signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass  # unkillable (D state): poll() keeps saying so and the loop still ends it
        else:
            self._drop_lifeline()

    def ended_by(self) -> Optional["Stop"]:
        """Nothing but the worker itself ends a worker process (a SLURM job can be ended by SLURM)."""
        return None


class Worker(Protocol):
    """What the Supervisor drives: a :class:`WorkerProcess` here, or a SLURM job
    (:class:`potato.training.slurm.job.SlurmJob`) whose worker runs on a compute node."""

    job_dir: Path

    def poll(self) -> Optional[int]: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...

    def ended_by(self) -> Optional["Stop"]: ...


@dataclass
class Ending:
    """How a worker ended: its own exit_code file when it wrote one, its result, and the Stop
    that ended it, if any."""

    exit_code: Optional[int]
    result: Optional[Dict[str, Any]]
    stop: Optional[Stop]


OnEvents = Callable[[List[Dict[str, Any]]], Optional[StopRequest]]
"""Takes the events the worker wrote since the last call (often none) and answers whether the
worker must stop. The agent's reporter sends them to the server at its own cadence."""


class Supervisor:
    """Follows one worker until it ends, forwarding its events and applying stops."""

    def __init__(self, worker: Worker, report: OnEvents, grace_seconds: float,
                 max_wall_seconds: Optional[int] = None, say: Callable[[str], None] = lambda text: None,
                 clock: Clock = time.time, sleep: Callable[[float], None] = time.sleep) -> None:
        self.worker = worker
        self.report = report
        self.grace_seconds = grace_seconds
        self.max_wall_seconds = max_wall_seconds
        self.say = say
        self.clock = clock
        self.sleep = sleep
        self.follower = EventFollower(worker.job_dir / "events.jsonl")
        self.stop: Optional[Stop] = None

    def run(self) -> Ending:
        started = self.clock()
        while True:
            request = self.report(self.follower.read_new())
            code = self.worker.poll()
            if code is not None:
                request = self.report(self.follower.read_new()) or request
                break
            now = self.clock()
            if self.stop is None:
                self.stop = check_limits(started, now, self.max_wall_seconds, self.grace_seconds, request)
                if self.stop is not None:
                    self.say(f"{self.stop.message} Sending SIGTERM to the worker; SIGKILL in "
                             f"{self.grace_seconds:g} s if it does not stop.")
                    self.worker.terminate()
            elif now >= self.stop.kill_at:
                self.say("The worker did not stop after SIGTERM; sending SIGKILL.")
                self.worker.kill()
                self.stop.kill_at = float("inf")
            self.sleep(POLL_S)
        job_dir = self.worker.job_dir
        exit_code = read_exit_code(job_dir)
        code = code if exit_code is None else exit_code
        if self.stop is None and code != 0:
            # A stop asked for as the worker ended is what ended it: systemd's stop signals the agent
            # and its worker at once, and the worker's own SIGTERM exit beat the agent's warm stop.
            self.stop = self.worker.ended_by() or check_limits(None, self.clock(), None, 0, request)
        return Ending(code, read_json(job_dir / "result.json"), self.stop)
