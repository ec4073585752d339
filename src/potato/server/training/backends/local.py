"""The local backend: the agent as a subprocess of the server, for one run.

The agent is started in a session of its own, so it outlives a server restart: the worker goes
on, the agent retries its reports until the server is back, and the run finishes (the local run
and a remote one behave alike). The run's token reaches it on stdin, never on its command line.
Its job folder is under the training dir (``agent/jobs/<run>``), so the model files are on this
machine when the run reports its result.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Sequence

from potato.config.schema import Config, LocalBackendSettings
from potato.defaults import LOCAL_BACKEND
from potato.project import Project
from potato.server.training.backends.base import Backend, CheckReport, Launch, Results, Session
from potato.training.job.private import open_private, private_dir
from potato.server.training.runs.recorder import RunRecorder
from potato.server.training.runs.store import Run, RunStore
from potato.training.launch.codefiles import code_root
from potato.training.launch.supervise import allowed_env
from potato.training.trainers import CLASSIFIES

log = logging.getLogger(__name__)

AGENT_OUT = "agent.out"


def agent_env(pass_env: Sequence[str] = (), base: dict[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: the worker's allow-list of the server's (``supervise.allowed_env``) plus the
    ``pass_env`` names, which the agent hands on to its worker; our source first on PYTHONPATH. The rest
    (cloud keys, HF_TOKEN, the admin key) stays with the server: the agent needs none of it."""
    return allowed_env(os.environ if base is None else base, pass_env, extra_paths=[code_root()])


def spawn_agent(server_url: str, run_id: str, token: str, workdir: Path, run_dir: Path,
                python: str = sys.executable, pass_env: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """The agent for one local run. It and its worker see an allow-list of the server's environment plus
    ``model_training.pass_env``."""
    private_dir(workdir)  # the agent makes jobs/<run> 0700 inside
    cmd = [python, "-m", "potato.training.agent", "--server", server_url, "--backend", LOCAL_BACKEND,
           "--run", run_id, "--token-stdin", "--workdir", str(workdir), *(f"--pass-env={n}" for n in pass_env)]
    with open_private(run_dir / AGENT_OUT, "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, cwd=str(workdir),
                                env=agent_env(pass_env), start_new_session=True)
    stdin = proc.stdin
    if stdin is not None:  # always, with stdin=PIPE
        stdin.write(token.encode("ascii") + b"\n")
        stdin.close()
    return proc


def agent_alive(pid: int | None, run_id: str) -> bool | None:
    """Whether the local agent for ``run_id`` still runs; None when no pid is known.

    The command line is checked, so a recycled pid never counts as our agent.
    """
    if not pid:
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"potato.training.agent" in cmdline and run_id.encode() in cmdline


def local_workdir(project: Project) -> Path:
    """The local agent's ``--workdir``: the training dir's ``agent/`` folder."""
    return project.config.training_dir / "agent"


def local_job_dir(project: Project, run: Run) -> Path:
    """Where the local agent keeps a run's job."""
    return local_workdir(project) / "jobs" / run.id


class AgentProcess:
    """A local run's session: the agent process this server started (its child, reaped here)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def alive(self) -> bool:
        return self.proc.poll() is None


class Local(Backend):
    """The server's own machine: the dispatcher starts each run's agent as a subprocess."""

    type = "local"
    on_this_machine = True

    def __init__(self, settings: LocalBackendSettings) -> None:
        super().__init__(settings)
        self.local = settings

    def check(self, config: Config) -> CheckReport:
        return check_local(self.local, config.model_training.trainer, config.training_kinds())

    def cannot_train(self, trainer: str, requires: Sequence[str]) -> str | None:
        missing = self.packages_missing(requires)
        return local_import_problem(trainer, missing) if missing else None

    def packages_missing(self, requires: Sequence[str]) -> list[str]:
        """The worker is this Python: looked up by name, not imported (about a millisecond for every
        trainer together), so each request asks afresh and a `pip install` shows without a restart."""
        from potato.training.job.failures import missing_packages

        return missing_packages(requires)

    def claimer(self) -> tuple[str, str]:
        return f"local-{os.getpid()}", "this machine"

    def first_step(self) -> str:
        return "starting the agent"

    def no_address(self) -> str:
        return ("This server was started without an address its local agent can use; start it with "
                "`potato start` (gunicorn) or `potato start --dev`.")

    def start(self, launch: Launch, run: Run, token: str) -> Session:
        proc = spawn_agent(launch.agent_url, run.id, token, local_workdir(launch.project), launch.store.run_dir(run.id),
                           pass_env=self.local.pass_env)
        launch.store.update(run.id, agent_pid=proc.pid)
        return AgentProcess(proc)

    def agent_alive(self, run: Run, session: Session | None) -> bool | None:
        if session is not None:  # our own child: alive() also reaps it
            return session.alive()
        return agent_alive(run.agent_pid, run.id) if run.agent_pid else None

    def end_silent_agent(self, project: Project, store: RunStore, run: Run, session: Session | None) -> None:
        """A local agent that fell silent (hung, or SIGSTOPped) still holds its worker's lifeline, so
        the worker would train on beside the next run: end the agent (its own process group), and the
        worker stops itself, as for an agent killed any other way."""
        if not run.agent_pid or not self.agent_alive(run, session):
            return
        try:
            os.killpg(run.agent_pid, signal.SIGKILL)
        except OSError as exc:
            log.warning("run %s: could not end its silent local agent (pid %s): %s", run.id, run.agent_pid, exc)
            return
        RunRecorder(project, store, run).log.write(
            f"Ended the silent local agent (pid {run.agent_pid}); its worker stops with it.")

    def results(self, project: Project, run: Run) -> Results:
        return Results(artifacts=local_job_dir(project, run) / "artifacts")

    def finished(self, project: Project, run: Run) -> None:
        shutil.rmtree(local_job_dir(project, run), ignore_errors=True)


# -- the check ----------------------------------------------------------------------------------

def check_local(backend: LocalBackendSettings, default_trainer: str | None = None,
                kinds: Iterable[str] = CLASSIFIES) -> CheckReport:
    """Which device a local run would get, e.g. ``local: this machine, CPU (2 threads)``,
    and each trainer this Python cannot import (before a run hits it); ok unless a run could not
    start: a broken NVRTC, or the default trainer (``model_training.trainer``) lacking a package."""
    from potato.training.gpus.devices import describe_local, probe_devices, resolve_device

    probe = probe_devices()
    device, warning = resolve_device(backend.device, probe)
    lines = [describe_local(device, probe, backend.num_threads)]
    if warning:
        lines.append(f"warning: {warning}")
    nvrtc = local_nvrtc_problem() if device.startswith("cuda") else None
    if nvrtc:
        lines.append(nvrtc)
    missing = local_packages_missing(kinds)
    lines.extend(local_import_problem(trainer, packages) for trainer, packages in missing.items())
    ok = nvrtc is None and default_trainer not in missing
    return CheckReport(backend.name, "local", ok, lines,
                       {"device": device, "warning": warning, "nvrtc_error": nvrtc, "missing_packages": missing})


def local_packages_missing(kinds: Iterable[str] = CLASSIFIES) -> dict[str, list[str]]:
    """Trainer -> the pip packages this Python (the one local runs' workers use) cannot import."""
    from potato.training.job.failures import missing_packages
    from potato.training.trainers import trainers_for

    missing = {t.name: missing_packages(t.requires) for t in trainers_for(kinds) if t.requires}
    return {name: packages for name, packages in missing.items() if packages}


def local_import_problem(trainer: str, packages: list[str]) -> str:
    """The missing packages of a local run, every one named once, with the one command that installs them all
    (Potato's extra where pip installed Potato here; inside one of Potato's images, the image that has them)."""
    from potato.training.job.failures import image_fix, image_name, install_command, module_name

    head = f"Trainer '{trainer}' could not be imported on this machine: {sys.executable} lacks {', '.join(packages)}"
    image = image_name()
    if image:
        return f"{head}; {image_fix(image, module_name(packages[0]))}"
    return f"{head} (`{install_command(sys.executable, packages)}`)"


def local_nvrtc_problem() -> str | None:
    """NVRTC on this machine: the same one-line compile the ssh check runs on a host."""
    import json

    from potato.training.gpus.nvidia import TORCH_PROBE, nvrtc_problem

    out = subprocess.run([sys.executable, "-c", TORCH_PROBE], capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return nvrtc_problem(report) if isinstance(report, dict) else None
