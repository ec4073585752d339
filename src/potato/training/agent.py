"""The training agent: ``python -m potato.training.agent`` (also ``potato training agent``).

Remote-safe: standard library only, Python 3.8. It turns a job into a worker process and the
worker's files into protocol calls, the same way wherever it runs:

- polling: ``--server URL --backend NAME`` with the backend's token in
  ``POTATO_TRAINING_TOKEN`` or ``--token-file``. It asks the server for work (a long poll), runs
  each job and waits again. It opens every connection itself and never listens on a port.
- one run (local, ssh, slurm backends): ``--run RUN_ID --token-stdin``; the server started it for
  that run and wrote the run's token to its stdin, so the token is on no command line.

A job: download the bundle (``Range`` resume, sha256 checked), extract it safely, run the worker
under :class:`~potato.training.supervise.Supervisor`, stream events (the reply carries a cancel),
upload ``predictions.jsonl``, report the result. Network trouble is retried with backoff and
jitter and never ends the agent; only a rejected token does. After ``--give-up-after`` seconds
(300) without reaching the server during a run, the agent stops the worker itself.
"""

from __future__ import annotations

import argparse
import json
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
from potato.defaults import REMOTE_DIR
from potato.errors import PotatoError
from potato.training.archive import UnsafeArchive, extract_archive
from potato.training.containers import ContainerSpec
from potato.training.failures import image_name
from potato.training.gpus import query_gpus
from potato.training.protocol import (
    CUT_OFF,
    EMPTY_UPLOAD,
    BundleCorrupt,
    Client,
    LONG_POLL_MAX_S,
    Forbidden,
    ProtocolError,
    RunEnded,
    TokenRejected,
    TooLarge,
    Unreachable,
    backoff_delay,
    predictions_problem,
)
from potato.training.reporting import GIVE_UP_S, HEARTBEAT_S, Console, Reporter
from potato.training.results import Reason
from potato.training.slurmtext import SlurmConfigError, SlurmSettings, node_local_dir, node_local_message
from potato.training.slurmjob import SlurmError, SlurmJob, shared_code
from potato.training.supervise import Ending, Stop, StopRequest, Supervisor, Worker, WorkerProcess

TOKEN_ENV = "POTATO_TRAINING_TOKEN"
WORKDIR = REMOTE_DIR
"""Where jobs (bundle, worker files, model files) live unless ``--workdir`` says otherwise: the same
folder an ssh backend uses by default, so a host has one Potato folder however its agent started."""
POLL_WAIT_S = LONG_POLL_MAX_S
"""How long one ``jobs/next`` may wait on the server for a job (a long poll)."""
EXIT_TOKEN = 3
EXIT_INTERRUPTED = 130
NOT_STARTED: Optional[int] = None
"""The ``exit_code`` reported for a job whose worker never started."""


RETRY_CAP_S = 30.0
"""The longest wait between two tries to reach a server that does not answer."""
UPLOAD_TRIES = 3
"""Uploads of predictions.jsonl that the server may find cut short (the file was whole here) before
the run is reported failed with the server's answer."""
LEAVE_WAIT_S = 5.0
"""The longest a stopping agent waits for the server to take note that it leaves: a stop (Ctrl-C,
``systemctl stop``) is never held up for longer."""


class AgentError(PotatoError):
    """The agent cannot go on; the message says why and what to do."""

    exit_code = 1


class TokenError(AgentError):
    """No token, or the server rejects it (unknown, or replaced by registering again)."""

    exit_code = EXIT_TOKEN


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


class Agent:
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

    # -- one job ---------------------------------------------------------------------------------

    def run_job(self, job: Dict[str, Any], client: Client) -> None:
        run_id = str(job["run_id"])
        job_dir = private_dir(private_dir(self.workdir / "jobs") / run_id)
        reporter = Reporter(client, run_id, self.console, self.give_up_after_s, self.clock)
        self.reporter = reporter
        self.busy = True
        say = self.console.say
        try:
            say(f"run {run_id}: {job.get('trainer')} on {', '.join(job.get('schemas') or [])}")
            ending = self._prepare_and_run(job, client, job_dir, reporter)
            self._finish(job, client, job_dir, reporter, ending)
        finally:
            worker = self.worker
            if worker is not None and worker.poll() is None:  # only on an unexpected error: never leave it behind
                self.console.say(f"run {run_id}: the agent stopped on an error; killing the worker")
                worker.kill()
            self.busy = False
            self.reporter = None
            self.worker = None
            if not self.keep:
                shutil.rmtree(job_dir / "bundle", ignore_errors=True)
                for name in ("bundle.tar.gz", "bundle.tar.gz.part"):
                    try:
                        (job_dir / name).unlink()
                    except FileNotFoundError:
                        pass

    def _prepare_and_run(self, job: Dict[str, Any], client: Client, job_dir: Path, reporter: Reporter) -> Ending:
        run_id = str(job["run_id"])
        bundle = job.get("bundle") or {}
        size, sha = int(bundle.get("size") or 0), str(bundle.get("sha256") or "")
        reporter.add({"type": "step", "text": f"downloading the bundle on {self.host}"})
        reporter([])
        self.console.say(f"run {run_id}: downloading the bundle ({size / 1e6:.1f} MB)")
        last_beat = [self.clock()]

        def progress(done: int, total: int) -> None:
            self.console.progress("bundle", done, total)
            if self.clock() - last_beat[0] >= HEARTBEAT_S:  # a long download still says it is alive
                last_beat[0] = self.clock()
                reporter([])

        archive = job_dir / "bundle.tar.gz"
        try:
            if not archive.exists():
                client.download_bundle(run_id, archive, size, sha, progress, self.console.say, self.sleep,
                                       keep_trying_s=self.give_up_after_s, clock=self.clock)
            extract_archive(archive, job_dir / "bundle")
        except (Unreachable, BundleCorrupt, UnsafeArchive, ProtocolError, OSError) as exc:
            message = f"The agent on {self.host} could not get the run's bundle: {exc}"
            self.console.say(message)
            return Ending(NOT_STARTED, None, _stop(Reason.ERROR, message))
        if reporter.stop is not None:
            return Ending(NOT_STARTED, None, _stop(reporter.stop.reason, reporter.stop.message))

        def note(text: str) -> None:  # how a stop went (and SLURM's queue states) belong in the run's log too
            self.console.say(text)
            reporter.add({"type": "log", "text": text})

        try:
            self.worker = self._start_worker(job, job_dir, reporter, note)
        except (OSError, SlurmError) as exc:
            message = (str(exc) if isinstance(exc, SlurmError) else
                       f"The worker could not start on {self.host} with {self.python}: {exc}")
            self.console.say(message)
            return Ending(NOT_STARTED, None, _stop(Reason.ERROR, message))

        supervisor = Supervisor(self.worker, reporter, float(job.get("grace_seconds") or 20),
                                job.get("max_wall_seconds"), say=note, clock=self.clock, sleep=self.sleep)
        return supervisor.run()

    def _start_worker(self, job: Dict[str, Any], job_dir: Path, reporter: Reporter,
                      note: Callable[[str], None]) -> Worker:
        """The worker as a process here, or as a SLURM job that runs it on a compute node."""
        run_id = str(job["run_id"])
        if self.slurm is None:
            self.console.say(f"run {run_id}: starting the worker ({self.python})")
            reporter.add({"type": "step", "text": f"starting the worker on {self.host}"})
            if self.container is not None:
                note(f"run {run_id}: the worker runs in {self.container.runtime} image {self.container.image}")
            return WorkerProcess.start(job_dir, self.python, job.get("num_threads"), self.container, self.workdir,
                                       self.pass_env)
        settings = self.slurm
        python = settings.job_python or self.python
        reporter.add({"type": "step", "text": f"submitting the job on {self.host}"})
        return SlurmJob.submit(job_dir, settings, run_id, python, shared_code(self.workdir), str(self.workdir),
                               self.host, note, lambda text: reporter.add({"type": "step", "text": text}),
                               clock=self.clock)

    def _finish(self, job: Dict[str, Any], client: Client, job_dir: Path, reporter: Reporter,
                ending: Ending) -> None:
        run_id = str(job["run_id"])
        reporter.drain(self.sleep)
        report: Dict[str, Any] = {
            "exit_code": ending.exit_code,
            "result": ending.result,
            "stop": ending.stop.to_json() if ending.stop else None,
            "artifact_uri": f"{self.host}:{job_dir / 'artifacts'}" if (job_dir / "artifacts").is_dir() else None,
            "agent": self.id,
        }
        predictions = job_dir / "predictions.jsonl"
        if ending.stop is None and ending.exit_code == 0 and predictions.exists():
            failure: Optional[str] = ""
            problem = predictions_problem(predictions)
            if problem is not None and problem[0] == EMPTY_UPLOAD:
                # Nothing to send (the server would refuse it): the result keeps the suggestions shown now.
                self.console.say(f"run {run_id}: the worker wrote no predictions; nothing to upload")
            elif problem is not None:
                failure = f"The worker's predictions.jsonl on {self.host} {problem[1]}; it was not uploaded."
            else:
                size = predictions.stat().st_size
                self.console.say(f"run {run_id}: uploading predictions ({size / 1e6:.1f} MB)")
                failure = self._upload_predictions(client, run_id, predictions)
                if failure is None:
                    return
            if failure:  # the run fails saying why, rather than time out on the server
                self.console.say(f"run {run_id}: {failure}")
                ending = Ending(ending.exit_code, ending.result, _stop(Reason.ERROR, failure))
                report["stop"] = _stop(Reason.ERROR, failure).to_json()
        status = "cancelled" if ending.stop and ending.stop.reason is Reason.CANCELLED else (
            "failed" if ending.stop or ending.exit_code != 0 else "succeeded")
        self.console.say(f"run {run_id}: reporting the result ({status})")
        report["log"] = self.console.take()
        if self._retry(lambda: client.result(run_id, report), "reporting the result"):
            self.console.say(f"run {run_id}: {status}" + (f" ({ending.stop.message})" if ending.stop else ""))
            if report["artifact_uri"]:
                self.console.say(f"run {run_id}: model files in {job_dir / 'artifacts'}")

    def _upload_predictions(self, client: Client, run_id: str, path: Path) -> Optional[str]:
        """Upload ``path``: "" once the server has it; what to fail the run with when the server refuses
        it (rather than leave the run to time out); None when the run is over there (a 413 failed it, or
        it ended): nothing more to send. One that arrived cut short (``incomplete``: the connection, not
        the file, which was found whole here) is sent again, :data:`UPLOAD_TRIES` times in all."""
        refused: List[ProtocolError] = []

        def put() -> None:
            try:
                client.put_predictions(run_id, path)
            except ProtocolError as exc:
                if type(exc) is not ProtocolError:  # 401, 403, 409, 413: the run is over for this agent
                    raise
                refused.append(exc)

        for _ in range(UPLOAD_TRIES):
            del refused[:]
            if not self._retry(put, "uploading predictions"):
                return None
            if not refused:
                return ""
            if refused[0].code != CUT_OFF:
                break
            self.console.say(f"run {run_id}: the predictions arrived cut short ({refused[0]}); sending them again")
        return f"The server refused the predictions upload: {refused[0]}"

    def _retry(self, call: Callable[[], Any], what: str) -> bool:
        """Retry ``call`` through network trouble until the give-up time; False if it never went."""
        started, failures = self.clock(), 0
        while True:
            try:
                call()
                return True
            except TooLarge as exc:
                self.console.say(f"the server refused the upload: {exc}")
                return False
            except (RunEnded, Forbidden, TokenRejected) as exc:
                self.console.say(f"the server no longer takes this run ({what}): {exc}")
                return False
            except ProtocolError as exc:
                self.console.say(f"the server refused {what}: {exc}")
                return False
            except Unreachable as exc:
                if self.session_ended or self.clock() - started > self.give_up_after_s:
                    self.console.say(f"gave up {what} after {self.give_up_after_s:g} s: {exc}")
                    return False
                if failures == 0:
                    self.console.say(f"cannot reach the server while {what} ({exc}); retrying")
                self.sleep(backoff_delay(failures, base=1.0, cap=15.0))
                failures += 1

    def watch_session(self, interval_s: float = 1.0, stdout: int = 1) -> None:
        """``--session``: the agent was started by an ssh session (``exec``: sshd holds the other end
        of its stdout). When the session ends (its ssh client killed, the connection broken), sshd
        closes that end, and when the whole connection goes the agent is handed to another parent:
        either way stop the worker at once, so the host's GPU is not held by a run nobody can
        report, and give up reporting (the server was reachable only through the session's
        forward). The closed stdout is what tells a session multiplexed over a connection that
        stays open (sshd's process then lives on). A server restart ends neither: the ssh client
        runs apart from the server, and the run goes on."""
        parent = os.getppid()

        def watch() -> None:
            while os.getppid() == parent and not reader_gone(stdout):
                time.sleep(interval_s)
            self.stopping = True
            self.session_ended = True
            reporter = self.reporter
            if reporter is not None:
                reporter.give_up_after_s = 0.0
                reporter.request_stop(StopRequest(
                    Reason.AGENT_LOST, f"The session to {self.host} that started the agent ended during the run."))
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


def private_dir(path: Path) -> Path:
    """``path`` as a folder only its owner can enter, made (0700) or tightened if it was there with wider
    modes (made by a clean-up, an older version or a server-side ``mkdir -p``)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path


def _stop(reason: Reason, message: str) -> Stop:
    """A stop that needs no SIGKILL: nothing was started."""
    return Stop(reason, message, 0.0)


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


def read_token(args: argparse.Namespace, stdin: Any = None) -> str:
    if args.token_stdin:
        token = (stdin or sys.stdin).readline().strip()
        source = "stdin"
    elif args.token_file:
        try:
            token = Path(args.token_file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            image = container_image()
            if under_systemd():
                hint = (f"; this agent runs as a systemd service, whose user may not read files elsewhere: "
                        f"{SYSTEMD_CREDENTIAL}")
            elif image:
                hint = (f"; this agent runs in a container, which sees only the files mounted into it: "
                        f"`docker run -v /path/on/the/host/token:{args.token_file}:ro ... {image} ... "
                        f"--token-file {args.token_file}`")
            else:
                hint = ""
            raise AgentError(f"cannot read --token-file {args.token_file}: {exc.strerror}{hint}") from None
        source = f"--token-file {args.token_file}"
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
        source = TOKEN_ENV
    if not token:
        register = f"On the server run `potato training register {args.backend} config.yaml`, then"
        if under_systemd():  # a unit has no shell to export in
            raise TokenError(f"no token in {source}. {register} save it on this machine "
                             f"(`install -m 600 /dev/stdin /etc/potato/agent-token`) and {SYSTEMD_CREDENTIAL}")
        image = container_image()
        docker = (f"`docker run -e {TOKEN_ENV}=<token> ... {image or '<image>'} --server {args.server} "
                  f"--backend {args.backend}`")
        if image and image != OTHER_IMAGE:  # Potato's agent image runs the agent, no shell: an export cannot reach it
            raise TokenError(
                f"no token in {source}. {register} start this container with the token in its environment: {docker} "
                "(or mount a file that holds it: `-v /path/to/token:/run/secrets/potato-token:ro` and pass "
                "--token-file /run/secrets/potato-token).")
        elsewhere = f"; where the agent is a container's command: {docker}" if image else ""
        raise TokenError(
            f"no token in {source}. {register} on this machine `export {TOKEN_ENV}=<token>` (or save it to a file "
            f"and pass --token-file FILE){elsewhere}.")
    return token


SYSTEMD_CREDENTIAL = ("hand it to the service as a credential: `LoadCredential=token:/etc/potato/agent-token` in "
                      "the unit and `--token-file ${CREDENTIALS_DIRECTORY}/token` on its command line, as the "
                      "potato-agent.service that Potato ships does")


def under_systemd() -> bool:
    """Whether systemd started this agent as a system service (whose files it reads as the unit's
    user, with no shell to export in): the service manager, PID 1, is its parent, and it set
    INVOCATION_ID. A terminal that a user's systemd started also has INVOCATION_ID, not that parent."""
    return os.getppid() == 1 and bool(os.environ.get("INVOCATION_ID"))


CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv")
"""Files docker and podman put in every container they run."""
OTHER_IMAGE = "<image>"


def container_image() -> Optional[str]:
    """The image this agent runs in: the name Potato's images write (``potato-agent``), ``<image>`` in
    another container (where a shell may still export the token), None outside one."""
    name = image_name()
    if name:
        return name
    return OTHER_IMAGE if any(os.path.exists(marker) for marker in CONTAINER_MARKERS) else None


def read_slurm_config(path: str) -> SlurmSettings:
    """``--slurm-config``: the slurm settings as a JSON object, checked before any job."""
    try:
        data = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise AgentError(f"cannot read --slurm-config {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise AgentError(f"--slurm-config {path} is not JSON: {exc}") from None
    try:
        return SlurmSettings.from_json(data)
    except SlurmConfigError as exc:
        raise AgentError(f"--slurm-config {path}: {exc}") from None


def check_slurm_workdir(given: str, workdir: Path) -> None:
    """With ``--slurm-config`` the jobs' files live in ``--workdir``, which the compute nodes must
    share with this login node: the config's rule for ``remote_dir``, checked before any job."""
    local = node_local_dir(given) or node_local_dir(str(workdir))
    if local is not None:
        shown = f"--workdir {given}" + (f" ({workdir})" if str(workdir) != given else "")
        raise AgentError(node_local_message(shown, local, "--workdir /shared/projects/me/potato-training"))


def container_settings(args: argparse.Namespace, slurm: bool) -> Optional[ContainerSpec]:
    """``--container-*`` as the worker's container, checked before any job."""
    if not (args.container_runtime or args.container_image or args.container_option):
        return None
    if slurm:
        raise AgentError('with --slurm-config the container goes in slurm.json: '
                         '"container": {"runtime": "apptainer", "image": "/shared/images/potato-worker.sif"}')
    if not (args.container_runtime and args.container_image):
        raise AgentError("--container-runtime and --container-image go together, e.g. "
                         "--container-runtime docker --container-image potato-worker-cuda")
    return ContainerSpec(args.container_runtime, args.container_image, tuple(args.container_option))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="potato training agent",
        description="Run training jobs for one backend on this machine. The agent connects to the server "
                    "itself (no inbound port); the backend's token comes from POTATO_TRAINING_TOKEN or --token-file.")
    p.add_argument("--server", required=True, help="the annotation server, e.g. https://annotate.example.org")
    p.add_argument("--backend", required=True, help="the agent backend's name in the server's config")
    p.add_argument("--token-file", help="read the token from this file instead of POTATO_TRAINING_TOKEN")
    p.add_argument("--python", default=sys.executable,
                   help="interpreter that runs the worker (default: the agent's own)")
    p.add_argument("--once", action="store_true", help="exit after one job")
    p.add_argument("--workdir", default=WORKDIR, help=f"folder for jobs and model files (default {WORKDIR})")
    p.add_argument("--keep", action="store_true", help="keep each job's bundle after the run")
    p.add_argument("--give-up-after", type=float, default=GIVE_UP_S, metavar="SECONDS",
                   help="stop a running job after this long without reaching the server (default 300)")
    p.add_argument("--slurm-config", metavar="FILE",
                   help="submit each job's worker with sbatch, with the slurm settings in this JSON file "
                        "(on a login node; --workdir must be storage the compute nodes share)")
    p.add_argument("--container-runtime", choices=("docker", "apptainer"),
                   help="run each worker in a container with this runtime (with --container-image)")
    p.add_argument("--container-image", metavar="IMAGE", help="the worker image (e.g. potato-worker-cuda)")
    p.add_argument("--container-option", action="append", default=[], metavar="OPTION",
                   help="one more option for docker run / apptainer exec (repeat for more)")
    p.add_argument("--pass-env", action="append", default=[], metavar="NAME",
                   help="let the worker see this variable of the agent's environment, e.g. HF_TOKEN (repeatable; "
                        "it sees PATH, HOME, locale, CUDA and cache variables only otherwise)")
    p.add_argument("--run", help=argparse.SUPPRESS)
    p.add_argument("--token-stdin", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--session", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--poll-wait", type=float, default=POLL_WAIT_S, help=argparse.SUPPRESS)
    return p


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
        if args.session:
            agent.watch_session()
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


if __name__ == "__main__":
    sys.exit(main())
