"""The training agent: ``python -m potato.training.agent`` (also ``potato training agent``).

Remote-safe: standard library only, Python 3.8. It turns a job into a worker process and the
worker's files into protocol calls, the same way wherever it runs:

- polling: ``--server URL --backend NAME`` with the backend's token in
  ``POTATO_TRAINING_TOKEN`` or ``--token-file``. It asks the server for work (a long poll), runs
  each job and waits again. It opens every connection itself and never listens on a port.
- one run (local, ssh, slurm backends): ``--run RUN_ID --token-stdin``; the server started it for
  that run and wrote the run's token to its stdin, so the token is on no command line.

A job: download the bundle (``Range`` resume, sha256 checked), extract it safely, run the worker
under :class:`~potato.training.launch.supervise.Supervisor`, stream events (the reply carries a cancel),
upload ``predictions.jsonl``, report the result. Network trouble is retried with backoff and
jitter and never ends the agent; only a rejected token does. After ``--give-up-after`` seconds
(300) without reaching the server during a run, the agent stops the worker itself.

The program and its polling loop are here; how it is set up from its arguments is in
:mod:`potato.training.agent.startup`, and one job's download, supervision and report in
:mod:`potato.training.agent.job`.
"""

from __future__ import annotations

import os
import platform
import select
import shutil
import signal
import socket
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import potato
from potato.training.agent.job import JobRunner
from potato.training.agent.startup import (
    POLL_WAIT_S,
    AgentError,
    TokenError,
    check_slurm_workdir,
    container_settings,
    parser,
    read_slurm_config,
    read_token,
)
from potato.training.launch.containers import ContainerSpec
from potato.training.gpus.nvidia import query_gpus
from potato.training.agent.protocol import Client, ProtocolError, TokenRejected, Unreachable, backoff_delay
from potato.training.agent.reporting import GIVE_UP_S, Console, Reporter
from potato.training.job.results import Reason
from potato.training.slurm.settings import SlurmSettings
from potato.training.launch.supervise import StopRequest, Worker

EXIT_INTERRUPTED = 130
RETRY_CAP_S = 30.0
"""The longest wait between two tries to reach a server that does not answer."""
LEAVE_WAIT_S = 5.0
"""The longest a stopping agent waits for the server to take note that it leaves: a stop (Ctrl-C,
``systemctl stop``) is never held up for longer."""


def machine_info(agent_id: str, python: str, workdir: Path) -> Dict[str, Any]:
    """What the training page shows for this agent (host, Python, GPUs)."""
    return {
        "id": agent_id,
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "worker_python": python,
        "platform": platform.platform(terse=True),
        "version": potato.__version__,
        "workdir": str(workdir),
        "gpus": [gpu.to_json() for gpu in query_gpus()],
    }


class Agent(JobRunner):
    """The agent: asks the server for jobs (or fetches the one it was started for) and runs each as
    a :class:`~potato.training.agent.job.JobRunner`; a first signal stops it warm, a second at once."""

    def __init__(self, client: Client, backend: str, workdir: Path, python: str = sys.executable,
                 keep: bool = False, give_up_after_s: float = GIVE_UP_S, poll_wait_s: float = POLL_WAIT_S,
                 console: Optional[Console] = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, slurm: Optional[SlurmSettings] = None,
                 container: Optional[ContainerSpec] = None, pass_env: Sequence[str] = ()) -> None:
        self.client = client
        self.backend = backend
        self.workdir = workdir
        self.python = python
        self.keep = keep
        self.give_up_after_s = give_up_after_s
        self.poll_wait_s = poll_wait_s
        self.console = console or Console()
        self.clock = clock
        self.sleep = sleep
        self.id = uuid.uuid4().hex[:12]
        self.host = socket.gethostname()
        self.busy = False
        self.reporter: Optional[Reporter] = None
        self.worker: Optional[Worker] = None
        self.slurm = slurm
        """Set when this agent submits its workers with sbatch (a login node) instead of starting them."""
        self.container = container
        """Set when the workers run in a container image."""
        self.pass_env = tuple(pass_env)
        """Variables of this agent's environment its workers see beyond the allow-list (``--pass-env``)."""
        self.stopping = False
        self.session_ended = False

    # -- polling ---------------------------------------------------------------------------------

    def serve(self, once: bool = False) -> int:
        """Ask for jobs and run them until stopped (or after one job with ``once``)."""
        info = machine_info(self.id, self.python, self.workdir)
        gpus = ", ".join(f"{g['index']}: {g['name']}" for g in info["gpus"]) or "no GPU"
        self.console.say(f"agent {self.id} on {self.host} (Python {info['python']}, {gpus}), workdir {self.workdir}")
        self.console.say(f"waiting for jobs on {self.backend} at {self.client.endpoint.url}")
        failures = 0
        while not self.stopping:
            try:
                job, retry_after = self.client.next_job(self.backend, info, self.poll_wait_s)
            except TokenRejected as exc:
                raise TokenError(str(exc)) from None
            except Unreachable as exc:
                delay = backoff_delay(failures, base=1.0, cap=RETRY_CAP_S)
                if failures == 0:  # then quiet for a while: a person reading along must not think it hung
                    self.console.say(f"cannot reach the server ({exc}); trying again until it answers, at most "
                                     f"{RETRY_CAP_S:.0f} s apart")
                elif failures % 10 == 0:
                    self.console.say(f"cannot reach the server after {failures} tries ({exc}); still trying")
                failures += 1
                self.sleep(delay)
                continue
            except ProtocolError as exc:
                raise AgentError(f"the server refused this agent: {exc}") from None
            if failures:
                self.console.say(f"reached the server again; waiting for jobs on {self.backend}")
            failures = 0
            if job is None:
                if retry_after:
                    self.sleep(retry_after)
                continue
            self.run_job(job, Client(self.client.endpoint.url, str(job["run_token"]), self.client.timeout))
            if once or self.stopping:
                break
            info = machine_info(self.id, self.python, self.workdir)  # GPU memory moved meanwhile
            self.console.say(f"waiting for jobs on {self.backend} at {self.client.endpoint.url}")
        return 0

    def leave(self) -> None:
        """Tell the server this agent stops: the training page and the check then say it left, not
        "connected", and a long poll it had open on the server claims no run for it (the run would
        wait for the job hand-over to time out). Best effort: one try, in a thread waited for at most
        :data:`LEAVE_WAIT_S` (a name lookup has no timeout of its own). A signal meanwhile exits at once."""
        self.stopping = True
        outcome: List[str] = []

        def tell() -> None:
            try:
                self.client.leave(self.backend, self.id, LEAVE_WAIT_S)
                outcome.append("")
            except (Unreachable, ProtocolError) as exc:
                outcome.append(str(exc))

        thread = threading.Thread(target=tell, name="potato-leave", daemon=True)
        thread.start()
        thread.join(LEAVE_WAIT_S)
        if outcome == [""]:
            self.console.say("told the server this agent stops")
        else:
            why = outcome[0] if outcome else f"no answer within {LEAVE_WAIT_S:g} s"
            self.console.say(f"could not tell the server this agent stops ({why}); the training page shows it "
                             "as connected until it misses its polls")

    def run_one(self, run_id: str) -> int:
        """Run the one job the server started this agent for (the client holds its run token)."""
        failures = 0
        started = self.clock()
        while True:
            try:
                job = self.client.job(run_id)
                break
            except Unreachable as exc:
                if self.session_ended or self.clock() - started > self.give_up_after_s:
                    raise AgentError(f"could not reach the server for {self.give_up_after_s:g} s: {exc}") from None
                failures += 1
                self.sleep(backoff_delay(failures, base=0.5, cap=10.0))
            except ProtocolError as exc:
                raise AgentError(f"the server has no job for run {run_id}: {exc}") from None
        self.run_job(job, self.client)
        return 0

    def watch_session(self, host: str = "", interval_s: float = 1.0, stdout: int = 1) -> None:
        """``--session``: the agent was started by an ssh session (``exec``: sshd holds the other end
        of its stdout). When the session ends (its ssh client killed, the connection broken), sshd
        closes that end, and when the whole connection goes the agent is handed to another parent:
        either way stop the worker at once, so the host's GPU is not held by a run nobody can
        report, and give up reporting (the server was reachable only through the session's
        forward). The closed stdout is what tells a session multiplexed over a connection that
        stays open (sshd's process then lives on). A server restart ends neither: the ssh client
        runs apart from the server, and the run goes on. ``host`` is the session's host as the
        server names it: when the session's forward lasts long enough to carry this report, the run
        fails in the same words the server would have used."""
        parent = os.getppid()
        message = (f"The ssh session to {host} ended during the run (the agent on {self.host} saw it end)."
                   if host else f"The session to {self.host} that started the agent ended during the run.")

        def watch() -> None:
            while os.getppid() == parent and not reader_gone(stdout):
                time.sleep(interval_s)
            self.stopping = True
            self.session_ended = True
            reporter = self.reporter
            if reporter is not None:
                reporter.give_up_after_s = 0.0
                reporter.request_stop(StopRequest(Reason.AGENT_LOST, message))
            self.console.say("the session that started this agent ended; stopping the run")

        threading.Thread(target=watch, name="potato-session-watch", daemon=True).start()

    # -- Ctrl-C ----------------------------------------------------------------------------------

    def on_signal(self, signum: int, frame: Any) -> None:
        """First Ctrl-C (or SIGTERM): a warm stop (finish the upload, or stop the worker and report
        it cancelled). Second: out at once, taking the worker down with the agent."""
        if self.stopping:
            worker = self.worker
            if worker is not None:
                worker.kill()
            self.console.say("stopped at once")
            os._exit(EXIT_INTERRUPTED)
        self.stopping = True
        if not self.busy:
            raise Interrupted()
        self.console.say("stopping after this run's report; press Ctrl-C again to exit at once")
        if self.reporter is not None:
            self.reporter.request_stop(StopRequest(Reason.CANCELLED, f"Stopped on the training machine ({self.host})."))


class Interrupted(BaseException):
    """Ctrl-C while idle. A ``BaseException`` so that no ``except Exception`` on the way out of a
    blocking long poll swallows it."""


PRIVATE_UMASK = 0o077
"""What the agent and its workers write is the user's only: bundles hold every item, label and
annotator's name, and the training host's folders are often readable by every account there."""


def reader_gone(fd: int) -> bool:
    """Whether nobody reads ``fd`` any more: a pipe or socket whose other end is closed (poll's
    POLLERR/POLLHUP, seen without writing a byte). A file, a terminal or a closed ``fd`` is never gone."""
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    try:
        events = poller.poll(0)
    except OSError:
        return False
    return any(mask & (select.POLLERR | select.POLLHUP) and not mask & select.POLLNVAL for _, mask in events)


def main(argv: Optional[Sequence[str]] = None) -> int:
    os.umask(PRIVATE_UMASK)  # before any file: the bundle, its extraction, worker.out, job.sh
    args = parser().parse_args(argv)
    console = Console()
    try:
        token = read_token(args)
        client = Client(args.server, token)
        slurm = read_slurm_config(args.slurm_config) if args.slurm_config else None
        container = container_settings(args, slurm is not None)
        python = shutil.which(args.python) or args.python
        if slurm is None and not os.path.exists(python):  # a job's python lives on the compute nodes
            raise AgentError(f"{args.python} was not found on {socket.gethostname()}; pass --python with the "
                             "interpreter that has the trainer's packages")
        workdir = Path(args.workdir).expanduser().resolve()
        if slurm is not None:
            check_slurm_workdir(args.workdir, workdir)
        workdir.mkdir(mode=0o700, parents=True, exist_ok=True)  # jobs hold the project's texts
        agent = Agent(client, args.backend, workdir, python, args.keep, args.give_up_after, args.poll_wait, console,
                      slurm=slurm, container=container, pass_env=args.pass_env)
        if args.session is not None:
            agent.watch_session(args.session)
        signal.signal(signal.SIGINT, agent.on_signal)
        signal.signal(signal.SIGTERM, agent.on_signal)
        signal.signal(signal.SIGHUP, agent.on_signal)  # a hung-up terminal or session: a warm stop too
        if args.run:
            return agent.run_one(args.run)
        try:
            code = agent.serve(once=args.once)
        except Interrupted:  # Ctrl-C or SIGTERM while waiting for a job
            agent.leave()
            raise
        agent.leave()  # after a stop mid-run (its run reported first) or --once
        return code
    except ValueError as exc:  # a malformed --server address
        console.say(f"error: {exc}")
        return 2
    except AgentError as exc:
        console.say(f"error: {exc}")
        return exc.exit_code
    except Interrupted:
        console.say("stopped")
        return EXIT_INTERRUPTED
