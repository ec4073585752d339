"""One run the server drives over ssh, on a plain host or a SLURM login node: the skeleton both share.

Steps, each on the run's step line: connect; check the interpreter (and, on a plain host, read
``nvidia-smi``); copy Potato's code to ``remote_dir/code/<hash>`` when the host lacks that version
(a tar stream into ``<hash>.tmp``, renamed when complete, so a broken copy is never used); start
the same agent the other backends use, for this one run, with a reverse forward from a Unix socket
in the host's ``/tmp`` (inside a 0700 folder of its own) back to this server and the run's token on
stdin; then the agent reports through the protocol like any other. On success the model files come
back in one stream over the open connection and the remote job folder is removed. All of it goes
over one connection (shared by the backends and checks that reach the same user@host:port), which
closes ``keep_connection_s`` after the run; for 0 the run retires it at its end without cutting off
a command of someone else's still on it (``-O stop``).

What differs between a plain host (:class:`~potato.server.training.backends.ssh.run.SshRun`) and a cluster
(:class:`~potato.server.training.backends.slurm.run.SlurmRun`) is four hooks of :meth:`RemoteRun.execute`
and the clean-up's :meth:`RemoteRun.left_behind_commands`.

Until the agent starts and after it has reported, this thread is the run's only actor: the run's
``last_seen`` is cleared then, so the agent heartbeat does not judge a step the server itself is in;
each of those steps has a deadline of its own (:class:`~potato.server.training.backends.ssh.command.SshStep`).

Everything here is I/O; every remote command line is built by :mod:`~potato.server.training.backends.ssh.lines`
and every ssh invocation by :mod:`~potato.server.training.backends.ssh.command`.
"""

from __future__ import annotations

import logging
import os
import secrets
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Callable, Generic, TypeVar
from urllib.parse import urlsplit

from potato.config.schema import SlurmBackendSettings, SshBackendSettings
from potato.defaults import SSH_CODE_PUSH_TIMEOUT_S, SSH_STEP_TIMEOUT_S
from potato.project import Project
from potato.server.serving import stopping
from potato.server.training.backends.ssh.codepush import code_archive, code_hash
from potato.server.training.backends.ssh import lines
from potato.server.training.backends.ssh.copyback import CopyFailed, over_total_message, receive
from potato.server.training.runs.modelplace import Kept, ModelPlace
from potato.training.job.private import open_private
from potato.server.training.runs.recorder import RunRecorder
from potato.server.training.runs.store import Run, RunState, RunStore
from potato.server.training.backends.ssh.command import (
    SshFailed,
    SshTarget,
    SshStep,
    client_env,
    framed,
    new_nonce,
    preamble_notice,
    remote_path,
)
from potato.server.training.backends.ssh.session import SessionRecord, SshClient, session_alive
from potato.server.training.backends.ssh.host import (
    Answer,
    HostFacts,
    Preparation,
    close_connection,
    control_dir,
    master_command,
    probe_host,
    run_ssh,
    stop_remote,
)
from potato.server.training.runs.watchdog import CANCEL_SLACK_S
from potato.server.training.runs.wakeup import Wakeup
from potato.training.gpus.nvidia import NoGpuFree
from potato.training.job.results import Reason
from potato.training.job.limits import apply_thread_limit

log = logging.getLogger(__name__)

WATCH_S = 1.0
"""How often a followed run's session end and cancel grace are looked at; its moves ring at once."""

CODE_STEP = SshStep("copying Potato's code", SSH_CODE_PUSH_TIMEOUT_S,
                 "the code is well under a MB, so the connection or the host's disk stalls: check `df -h` and "
                 "that remote_dir is writable there")
SOCKET_STEP = SshStep("looking at the agent's socket", SSH_STEP_TIMEOUT_S)
CLEAN_UP_STEP = SshStep("cleaning up the job folder", 60)
MB = 1024 * 1024


Host = TypeVar("Host", SshBackendSettings, SlurmBackendSettings)
"""The settings of the backend a run class serves (ssh or slurm): each run class owns its own."""


class RemoteRun(Generic[Host]):
    """One run over ssh, from connect to closing the connection; :meth:`drive` is its thread's whole
    life (:meth:`start` runs it in one). Subclasses supply the hooks of :meth:`execute`."""

    def __init__(self, project: Project, store: RunStore, run: Run, token: str, backend: Host,
                 agent_url: str, clock: Callable[[], float] = time.time) -> None:
        self.project = project
        self.store = store
        self.run = run
        self.token = token
        self.backend: Host = backend
        self.agent_url = agent_url
        self.clock = clock
        self.target = SshTarget(backend, Path("/nonexistent"))
        """Set in :meth:`execute`, where a bad control folder fails the run instead of the dispatcher."""
        self.recorder = RunRecorder(project, store, run)
        self.run_dir = store.run_dir(run.id)
        self.session: SshClient | None = None
        """The ssh client carrying the agent (from :meth:`start_agent`, or taken over by :meth:`adopt`)."""
        self.remote_dir = remote_path(backend.remote_dir)
        self.job_dir = f"{self.remote_dir}/jobs/{shlex.quote(run.id)}"
        self.socket_dir = f"/tmp/potato-{run.id}-{secrets.token_hex(4)}"
        self.python = shlex.quote(backend.python)
        """The agent's interpreter as a shell word: the backend's python, or its packages venv's."""
        self.keep_job = backend.keep_remote
        """Whether the remote job folder stays: keep_remote, or model files that did not come back."""
        self.adopted = False
        self.forward = ""
        """The agent's reverse forward, ``<socket>:<server host>:<port>``: cancelled at the end."""
        self.preamble_said = False
        """Whether run.log named what the host's login shell prints (once per run)."""

    # -- plumbing ---------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.recorder.log.write(text)

    def step(self, text: str) -> None:
        """A new phase: the run's step line, and a ``step:`` line in run.log as the agent's phases get,
        so the log keeps every phase the page showed."""
        self.store.update(self.run.id, step=text)
        self.say(f"step: {text}")

    def progress(self, text: str) -> None:
        """The step line within a phase (how much has arrived): not logged, it changes every second."""
        self.store.update(self.run.id, step=text)

    def ssh(self, command: str, stdin: bytes | None = None, *, step: SshStep) -> Answer:
        out = run_ssh(self.target, command, stdin, step)
        self.said_preamble(out.preamble)
        return out

    def said_preamble(self, text: str) -> None:
        """Name, once per run, what the host's login shell prints around every command (ignored)."""
        if text and not self.preamble_said:
            self.preamble_said = True
            self.say(preamble_notice(self.backend.host, text))

    def no_agent_yet(self) -> None:
        """No agent speaks for the run now (before it starts, after it reported): the heartbeat
        waits, this thread's steps have their own deadlines."""
        self.store.update(self.run.id, last_seen=None)

    # -- the run ------------------------------------------------------------------------------------

    def start(self) -> threading.Thread:
        """Drive the run in a thread of its own (the dispatcher watches it)."""
        thread = threading.Thread(target=self.drive, name=f"potato-ssh-{self.run.id}", daemon=True)
        thread.start()
        return thread

    def drive(self) -> None:
        try:
            if self.adopted:
                self.target = SshTarget(self.backend, control_dir(self.project.config.training_dir))
                if self.follow():
                    self.copy_back()
            else:
                self.execute()
        except Exception as exc:
            if stopping.requested.is_set():
                self.left_to_the_next_server(exc)
                return
            if isinstance(exc, (SshFailed, NoGpuFree)):
                self.recorder.fail(Reason.ERROR, str(exc))
            else:  # any failure ends this run, never the dispatcher
                log.exception("run %s on %s failed", self.run.id, self.backend.name)
                self.recorder.fail(Reason.ERROR, f"The run on {self.backend.host} stopped on an internal error: {exc}")
        self.clean_up()

    def left_to_the_next_server(self, exc: Exception) -> None:
        """The server is stopping (a restart, Ctrl-C in its terminal): a step that failed now may
        have failed with it, while the agent's session, a process group of its own, goes on. The
        run stays as it is, and nothing is cleaned up: the restarted server takes the run over from
        that session, or ends it for a restart when the session is gone."""
        self.say(f"The server is stopping; it leaves the run to the restarted server ({exc})")

    def execute(self) -> None:
        """Every step up to the agent, then follow it: the same for ssh and slurm, which differ only
        in :meth:`reads_gpus`, :meth:`python_line`, :meth:`before_code` and :meth:`agent_setup`."""
        self.target = SshTarget(self.backend, control_dir(self.project.config.training_dir))
        self.no_agent_yet()
        self.step(f"connecting to {self.backend.host}")
        digest = code_hash()
        facts = probe_host(self.target, read_gpus=self.reads_gpus(), prepare=self.preparation(digest))
        self.said_preamble(facts.preamble)
        self.say(self.python_line(facts))
        self.said_stale(facts)
        self.before_code(facts)
        self.push_code(digest, facts.code_present)
        env, args = self.agent_setup()
        self.start_agent(digest, f"{self.socket_dir}/agent.sock", env, *args)
        self.follow_and_fetch()

    # -- the hooks: what a plain host and a cluster do differently --------------------------------------

    def reads_gpus(self) -> bool:
        """Whether the first probe reads the host's GPUs (the host runs the worker)."""
        raise NotImplementedError

    def python_line(self, facts: HostFacts) -> str:
        """run.log's line on the interpreter the probe found."""
        raise NotImplementedError

    def before_code(self, facts: HostFacts) -> None:
        """What the host must have or get before Potato's code goes there."""
        raise NotImplementedError

    def agent_setup(self) -> tuple[dict[str, str], list[str]]:
        """The agent's environment for the run and its arguments beyond the run's own."""
        raise NotImplementedError

    def follow_and_fetch(self) -> None:
        """Follow the agent's run to its end; bring the model back when the run has results."""
        if self.follow():
            self.copy_back()
        elif not self.backend.fetch_artifacts and (self.store.get(self.run.id) or self.run).state is RunState.SUCCEEDED:
            self.keep_job = True  # fetch_artifacts: false leaves every model file on the host

    def preparation(self, digest: str) -> Preparation:
        """What the first command of a run looks at (the code) and makes (the socket folder)."""
        return Preparation(f"{self.remote_dir}/code/{digest}", shlex.quote(self.socket_dir))

    def said_stale(self, facts: HostFacts) -> None:
        """The socket folder is a 0700 folder of this run's own in the host's /tmp: the socket inside
        is the user's only, whatever the server's StreamLocalBindMask, and no earlier run's socket can
        be in the way; folders that crashed runs left behind went first."""
        if facts.stale_socket_dirs:
            self.say(f"Removed {len(facts.stale_socket_dirs)} stale agent socket folder(s) on {self.backend.host}: "
                     f"{', '.join(facts.stale_socket_dirs)}")

    def push_code(self, digest: str, present: bool) -> None:
        """Copy the code under ``digest`` unless the probe found it there (``present``)."""
        if present:
            self.say(f"Potato's code {digest} is on {self.backend.host} already")
            return
        self.step(f"copying Potato's code to {self.backend.host}")
        out = self.ssh(lines.push_code(self.remote_dir, digest), stdin=code_archive(), step=CODE_STEP)
        if out.returncode != 0:
            raise SshFailed(f"Copying Potato's code to {self.backend.host} failed: "
                            f"{out.stderr.decode('utf-8', 'replace').strip()[-500:]}")
        self.say(f"Copied Potato's code {digest} to {self.backend.host}:{self.backend.remote_dir}/code/{digest}")

    def start_agent(self, digest: str, socket: str, run_env: dict[str, str], *agent_args: str) -> None:
        """The agent for this run, in a session of its own over the backend's connection, with the
        reverse forward; the run's token goes to its stdin, so it is on no command line and in no
        environment. When this session's ssh ends (killed, or the connection broke), sshd closes the
        agent's stdout, and the agent stops its worker (``--session``). The command is framed like
        every other (the start line lands in agent.out, after what the login shell printed); the
        agent's stdout stays the session's own channel, its lifeline. From here the heartbeat counts."""
        b = self.backend
        self.step(f"waiting for the agent on {b.host}")
        self.store.update(self.run.id, last_seen=self.clock())
        env = {**b.env, **run_env}
        apply_thread_limit(b.num_threads, env)  # over what a login shell sets
        command = lines.agent_line(self.remote_dir, digest, self.python, env, socket, b.name, self.run.id,
                                    list(b.env), agent_args, host=b.host)
        server = urlsplit(self.agent_url)
        self.forward = forward = f"{socket}:{server.hostname}:{server.port}"
        out = open_private(self.run_dir / "agent.out", "ab")
        try:
            proc = subprocess.Popen(
                self.target.argv(framed(command, new_nonce()), "-o", "ExitOnForwardFailure=yes", "-R", forward),
                stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env=client_env(os.environ))
        finally:
            out.close()
        self.session = SshClient(self.run.id, proc)
        stdin: IO[bytes] | None = proc.stdin
        if stdin is not None:
            stdin.write(self.token.encode("ascii") + b"\n")
            stdin.close()
        SessionRecord(self.socket_dir, self.python, proc.pid, forward).write(self.run_dir)
        self.store.update(self.run.id, agent_pid=proc.pid, agent_host=b.host)
        mode = self.ssh(f"sleep 1; stat -c %a {shlex.quote(socket)}", step=SOCKET_STEP)
        self.say(f"Agent socket on {b.host}: {socket} (mode {mode.stdout.decode().strip() or 'unknown'}, "
                 f"in a 0700 folder)")

    def follow(self) -> bool:
        """Wait until the run ends or its results are in (True: copy the model back). The run's bell
        tells the moment the agent's report moved it (in whichever process took the report), so the
        copy-back starts then; between rings the session's own end and a cancel's grace are looked at
        every :data:`WATCH_S`."""
        bell = Wakeup.of(self.store.runs_dir.parent, self.run.id)
        bell.listen()  # before the first look: a move after it rings
        try:
            return self._follow(bell)
        finally:
            bell.remove()

    def _follow(self, bell: Wakeup) -> bool:
        mt = self.project.config.model_training
        while True:
            run = self.store.get(self.run.id)
            if run is None or run.state.terminal:
                return False
            if run.state is RunState.COPYING and run.awaiting_copy:
                return True  # (copying before it: the writeback runs; the files must wait for it)
            session = self.session
            if session is not None and session.ended():
                after = self.store.get(self.run.id)  # the agent may have reported and exited just now
                if after is not None and (after.state.terminal or after.state is RunState.COPYING):
                    bell.wait(WATCH_S)  # its report's moves ring (one that came meanwhile, at once)
                    continue
                self.recorder.fail(Reason.AGENT_LOST,
                                   f"The ssh session to {self.backend.host} ended during the run "
                                   f"({session.how_it_ended()}); "
                                   "agent.out and agent.log in the run's folder say why.")
                return False
            if (run.cancel_requested and run.cancel_at is not None
                    and self.clock() - run.cancel_at > mt.grace_seconds + CANCEL_SLACK_S):
                self.close_session()  # once grace_seconds passed, the agent's session is closed
            bell.wait(WATCH_S)

    def close_session(self) -> None:
        if self.session is not None:
            self.session.stop()

    @classmethod
    def adopt(cls, project: Project, store: RunStore, run: Run, backend: Host) -> RemoteRun[Host] | None:
        """Take over a run whose ssh session outlived the server that started it (a restart): follow
        it, copy the model back and clean up as the first server would have. None when nothing of the
        session is left to take over (the watchdog then ends the run)."""
        record = SessionRecord.read(store.run_dir(run.id))
        if record is None or not session_alive(record.pid, run.id):
            return None
        me = cls(project, store, run, "", backend, "")
        me.adopted = True
        me.socket_dir, me.python, me.forward = record.socket_dir, record.python, record.forward
        me.session = SshClient(run.id, pid=record.pid)
        me.say(f"The server restarted; it took the run over from its ssh session to {backend.host} (still open).")
        return me

    def copy_back(self) -> None:
        """The model files in one stream over the open connection, counted for the step line.
        The host lists them first: files over max_artifact_mb stay there, and when the others together
        pass max_artifacts_total_mb none is sent at all (nothing partial), as with fetch_artifacts: false."""
        b = self.backend
        self.no_agent_yet()  # the agent has reported; the copy's own stall limit applies
        nonce = new_nonce()
        command = lines.send_artifacts(self.job_dir, b.python, b.max_artifact_mb * MB, b.max_artifacts_total_mb * MB)
        target = self.run_dir / "artifacts"

        def progress(got: int, total: int) -> None:
            self.progress(f"copying the model from {b.host}: {got / 1e6:.0f} of {max(total, got) / 1e6:.0f} MB")

        try:
            copied = receive(self.target.argv(framed(command, nonce)), target, b.host, progress, self.clock,
                             max_file_bytes=b.max_artifact_mb * MB, max_total_bytes=b.max_artifacts_total_mb * MB,
                             nonce=nonce, env=client_env(os.environ),
                             reserve_mb=self.project.config.model_training.disk_reserve_mb)
        except CopyFailed as exc:
            self.keep_job = True
            if exc.remote_pid is not None:  # the sender may still run there (a stall): stop it, its files stay
                stop_remote(self.target, exc.remote_pid)
            self.recorder.fail(Reason.ERROR, f"{exc}; the predictions are already saved, only the model files "
                               f"are missing here. They are still on {b.host} in {b.remote_dir}/jobs/"
                               f"{self.run.id}/artifacts.")
            return
        self.said_preamble(copied.preamble)
        if copied.over_total is not None:  # none came back: all stay with the job folder, as fetch_artifacts: false
            self.keep_job = True
            self.say(over_total_message(b.host, copied.over_total, b.max_artifacts_total_mb))
            folder = copied.over_total[2]
            self.recorder.copied(f"{b.host}:{folder}", ModelPlace(host=b.host, host_folder=folder,
                                                                  kept=Kept.TOTAL_CAP, limit_mb=b.max_artifacts_total_mb))
            return
        self.keep_job = self.keep_job or bool(copied.left_behind)
        for name, size in copied.left_behind:
            self.say(f"Left on {b.host} (over max_artifact_mb {b.max_artifact_mb} MB): {name} ({size / 1e6:.0f} MB)")
        self.say(f"Copied the model from {b.host}: {copied.received / 1e6:.1f} MB")
        if not copied.left_behind:
            self.recorder.copied(str(target), ModelPlace.here(target))
            return
        folder = f"{b.remote_dir}/jobs/{self.run.id}/artifacts"
        self.recorder.copied(f"{target} (and on {b.host}:{folder})",
                             ModelPlace.here(target, host=b.host, host_folder=folder, kept=Kept.FILE_CAP,
                                             kept_files=tuple(name for name, _size in copied.left_behind),
                                             limit_mb=b.max_artifact_mb))

    def left_behind_commands(self) -> list[str]:
        """Shell commands that end, before the job folder goes, what the run may have left running on
        the host beyond its agent's reach (nothing, over plain ssh: the worker ends with its agent)."""
        return []

    def said_left_behind(self, output: str) -> None:
        """Log what :meth:`left_behind_commands` reported."""

    def clean_up(self) -> None:
        """Remove the remote job folder (unless keep_remote), the socket folder and its forward; close
        the connection now when ``keep_connection_s`` is 0 (else ssh closes it once idle that long)."""
        if not self.target.control_dir.is_dir():
            return  # never connected
        if self.session is not None:
            self.session.finish()
        command = lines.clean_up(self.socket_dir, None if self.keep_job else self.job_dir, self.left_behind_commands())
        try:
            done = self.ssh(command, step=CLEAN_UP_STEP)
        except SshFailed as exc:
            self.say(f"Could not clean up on {self.backend.host}: {exc}")
        else:
            self.said_left_behind(done.stdout.decode("utf-8", "replace"))
        problems = [master_command(self.target, self.target.cancel_forward(self.forward),
                                   "cancelling the agent's forward")] if self.forward else []
        if not self.backend.keep_connection_s:
            problems.append(close_connection(self.target))  # -O stop: a check or run still on it goes on
        for problem in problems:
            if problem:
                self.say(f"Clean-up: {problem}")
        if self.backend.keep_connection_s:
            return
        try:
            self.target.control_dir.rmdir()  # only when empty: no other backend's master is in it
        except OSError:
            pass

