"""The ssh backend: a host the server reaches with ssh.

The server drives each run itself, as an :class:`~potato.server.training.backends.ssh.run.SshRun` session:
it copies its code there, starts the agent for the one run over the connection and copies the
model files back when the run has results. Runs to the same login share one control master, so
a run starts only when the last one's clean-up is done (:attr:`one_session_at_a_time`).
"""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Any, ClassVar, Generic, Iterable, Mapping, Sequence, Type

from potato.config.schema import Config, SshBackendSettings
from potato.project import Project
from potato.server.training.backends.base import Backend, CheckReport, Launch, AgentTimeouts, Results, Session
from potato.server.training.runs.modelplace import Kept
from potato.server.training.runs.store import Run
from potato.server.training.backends.ssh.remoterun import Host, RemoteRun
from potato.server.training.backends.ssh.run import VENV_CHECK_STEP, SshRun
from potato.server.training.backends.ssh.lines import venv_built
from potato.server.training.backends.ssh.command import SshFailed, SshTarget, preamble_notice, remote_path
from potato.server.training.backends.ssh.host import (
    HostFacts,
    control_dir,
    gpus_unknown_error,
    missing_modules,
    probe_host,
    run_ssh,
    venv_key,
)
from potato.training.job.failures import PIP_NAMES
from potato.training.gpus.nvidia import NoGpuFree, choose_gpus
from potato.errors import TrainingError
from potato.training.trainers import CLASSIFIES, get_trainer, trainers_for


class SessionThread:
    """A run's ssh session as the dispatcher watches it: the thread that drives it."""

    def __init__(self, thread: threading.Thread) -> None:
        self.thread = thread

    def alive(self) -> bool:
        return self.thread.is_alive()


class RemoteBackend(Backend, Generic[Host]):
    """A host the server logs in to over ssh and drives a run on through its own run class: an ssh
    host (:class:`Ssh`) or a SLURM login node (:class:`~potato.server.training.backends.slurm.backend.Slurm`)."""

    one_session_at_a_time = True
    adopts_runs = True
    session_kind: ClassVar[Type[RemoteRun[Any]]]
    """The run class a run gets, which takes this backend's own settings."""

    def __init__(self, settings: Host) -> None:
        super().__init__(settings)
        self.remote: Host = settings

    def agent_timeouts(self) -> AgentTimeouts:
        return AgentTimeouts(self.remote.heartbeat_timeout_s)

    def claimer(self) -> tuple[str, str]:
        return f"{self.type}-{os.getpid()}", self.remote.host

    def first_step(self) -> str:
        return f"connecting to {self.remote.host}"

    def start(self, launch: Launch, run: Run, token: str) -> Session:
        session = self.session_kind(launch.project, launch.store, run, token, self.remote, launch.agent_url)
        return SessionThread(session.start())

    def adopt(self, launch: Launch, run: Run) -> Session | None:
        session = self.session_kind.adopt(launch.project, launch.store, run, self.remote)
        return SessionThread(session.start()) if session is not None else None

    def adopt_lost(self, run: Run) -> str:
        return (f"The server restarted and the run's ssh session to {self.remote.host} is gone; start the "
                "run again.")

    def results(self, project: Project, run: Run) -> Results:
        fetch = self.remote.fetch_artifacts
        return Results(fetch=fetch, kept=None if fetch else Kept.NOT_FETCHED)


class Ssh(RemoteBackend[SshBackendSettings]):
    """A host the server logs in to; the agent there starts the worker itself."""

    type = "ssh"
    session_kind = SshRun

    def check(self, config: Config) -> CheckReport:
        return check_ssh(config, self.remote)


def check_ssh(config: Config, backend: SshBackendSettings) -> CheckReport:
    """Log in and report the host's Python, every GPU with its free memory and load, and what a
    run would get; ok when a run could start."""
    head = backend.describe()
    try:
        target = SshTarget(backend, control_dir(config.training_dir))
        facts: HostFacts = probe_host(target)
    except SshFailed as exc:
        return CheckReport(backend.name, "ssh", False, [f"{head}: {exc}"], {"error": str(exc)})
    lines = [f"{head}: Python {facts.python_version} ({facts.python_path})"]
    if facts.preamble:
        lines.append(preamble_notice(backend.host, facts.preamble))
    for g in facts.gpus:
        load = f", {g.utilization_pct} % busy" if g.utilization_pct is not None else ""
        kernels = " (torch there has no kernels for it)" if g.index in facts.no_kernels else ""
        lines.append(f"GPU {g.index}: {g.name}, {g.memory_free_mb} of {g.memory_total_mb} MB free{load}{kernels}")
    if not facts.gpus and not facts.gpus_unknown:
        lines.append("no GPU (nvidia-smi is missing or found none)")
    details: dict[str, Any] = {"python": facts.python_version, "python_path": facts.python_path,
                               "gpus": None if facts.gpus_unknown else [g.to_json() for g in facts.gpus],
                               "no_kernels": facts.no_kernels}
    if facts.gpus_unknown:  # GPUs unknown: a run that must choose one cannot start
        if backend.gpus != "none":
            error = gpus_unknown_error(facts.gpus_unknown, backend.gpus)
            lines.append(f"GPUs unknown: {error}")
            return CheckReport(backend.name, "ssh", False, lines, {**details, "error": error})
        lines.append(f"GPUs unknown: {facts.gpus_unknown}")
    try:
        choice = choose_gpus(facts.gpus, backend.gpus, backend.min_free_gpu_mb, facts.no_kernels)
    except NoGpuFree as exc:
        lines.append(str(exc))
        return CheckReport(backend.name, "ssh", False, lines, {**details, "error": str(exc)})
    lines.append(f"A run would get {choice.text}.")
    several = [index for index in choice.cuda_visible_devices.split(",") if index]
    if len(several) > 1:
        lines.append(f"A torch trainer trains data-parallel on all {len(several)} of them (one process per GPU); "
                     "the others use the first.")
    if facts.nvrtc_error and choice.cuda_visible_devices and backend.container is None:
        lines.append(facts.nvrtc_error)
        return CheckReport(backend.name, "ssh", False, lines, {**details, "error": facts.nvrtc_error})
    details["cuda_visible_devices"] = choice.cuda_visible_devices
    if backend.container is not None:  # the host's Python only runs the agent; the trainers are the image's
        lines.append(f"The worker runs in {backend.container.runtime} image {backend.container.image}; "
                     "the trainers' packages are the image's.")
        return CheckReport(backend.name, "ssh", True, lines, {**details, "container": backend.container.image})
    # A run's worker has the packages venv's Python when the backend lists packages: built,
    # the check asks that Python; not yet built, the first run installs them, so they count as there.
    venv_python: str | None = None
    interpreter, planned = backend.python, set()
    if backend.packages:
        key = venv_key(facts.python_path, backend.packages)
        venv, shown = f"{remote_path(backend.remote_dir)}/venvs/{key}", f"{backend.remote_dir}/venvs/{key}"
        if run_ssh(target, venv_built(venv), step=VENV_CHECK_STEP).returncode == 0:
            venv_python, interpreter = f"{venv}/bin/python", f"the packages venv's Python ({shown}/bin/python)"
            lines.append(f"Packages {', '.join(backend.packages)}: venv {shown} on {backend.host} (built); "
                         "a run's worker uses its Python.")
        else:
            planned = {requirement_name(p) for p in backend.packages}
            lines.append(f"Packages {', '.join(backend.packages)}: not on {backend.host} yet; the first run builds "
                         f"a venv with them ({shown}; pip there must reach the package index).")
        details["packages_venv"] = {"path": shown, "built": venv_python is not None}
    missing: dict[str, list[str]] = {}
    for trainer, packages in trainer_packages_missing(target, config.model_training.trainer, venv_python,
                                                      config.training_kinds(),
                                                      config.model_training.trainer_params).items():
        left = [p for p in packages if requirement_name(p) not in planned]
        if left:
            missing[trainer] = left
    details["missing_packages"] = missing
    for trainer, packages in missing.items():
        them = "it" if len(packages) == 1 else "them"
        lines.append(f"Trainer '{trainer}' could not be imported on {backend.host}: {interpreter} lacks "
                     f"{', '.join(packages)} (add {them} to the backend's packages, and a run builds a venv with "
                     f"{them}; or point `python:` at the python of a venv on {backend.host} that has {them})")
    default_missing = config.model_training.trainer in missing
    if default_missing:  # the config's trainer decides whether a run can start: the lines that fix it
        trainer = config.model_training.trainer
        lines.append(f"For trainer '{trainer}', set in {config.path.name}:")
        lines.extend(packages_snippet(backend.name, backend.packages, missing[trainer]))
    return CheckReport(backend.name, "ssh", not default_missing, lines, details)


def trainer_packages_missing(target: Any, default_trainer: str, python: str | None = None,
                             kinds: Iterable[str] = CLASSIFIES,
                             trainer_params: Mapping[str, Mapping[str, object]] | None = None) -> dict[str, list[str]]:
    """Trainer -> the pip packages the host lacks for it (before a run hits it), for the trainers of
    ``kinds`` of scheme (the project's); ``python`` is the interpreter a run's worker would have
    there as a shell word (the packages venv's), else the backend's ``python``. What a trainer needs
    beyond its usual packages for the config's ``trainer_params`` counts too (bitsandbytes for a
    quantised LLM), and only then."""
    modules_for = {pip: module for module, pip in PIP_NAMES.items()}
    wanted = {t.name: packages_for(t.name, t.requires, (trainer_params or {}).get(t.name) or {})
              for t in trainers_for(kinds) if t.requires and not t.local_only}
    modules = sorted({modules_for.get(p, p) for packages in wanted.values() for p in packages})
    absent = set(missing_modules(target, modules, python))
    return {name: [p for p in packages if modules_for.get(p, p) in absent]
            for name, packages in wanted.items() if any(modules_for.get(p, p) in absent for p in packages)}


def packages_for(trainer: str, requires: Sequence[str], params: Mapping[str, object]) -> list[str]:
    """The pip packages a trainer needs with these parameters: its own, then what they add."""
    try:
        cls = get_trainer(trainer)
        modules = cls.required_modules(cls.validate_params(params))
    except (ImportError, TrainingError):  # parameters the config check already refuses
        return list(requires)
    extra = list(dict.fromkeys(PIP_NAMES.get(m.split(".")[0], m.split(".")[0]) for m in modules))
    return list(requires) + [p for p in extra if p not in requires]


def requirement_name(requirement: str) -> str:
    """A pip requirement's project name, normalized as pip compares them: ``Scikit_Learn>=1.3`` ->
    ``scikit-learn`` (a URL or path keeps its text: it names no project)."""
    name = re.split(r"[\s<>=!~;\[@(]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def packages_snippet(backend: str, packages: Sequence[str], more: Sequence[str]) -> list[str]:
    """The config lines (indented two spaces) that add ``more`` to the backend's ``packages``, so a
    run builds a venv with them: Debian's and Ubuntu's own Python refuse ``pip install`` (externally
    managed)."""
    listed = {requirement_name(p) for p in packages}
    merged = [*packages, *(p for p in more if requirement_name(p) not in listed)]
    return ["  model_training:", "    backends:", f"      {backend}:", f"        packages: {json.dumps(merged)}"]
