"""``potato training check <backend>`` and the page's Check button: one report for both (R9, R12)."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from potato.config.schema import AgentBackend, Config, LocalBackend, SlurmBackend, SshBackend
from potato.db import Database
from potato.server.training.runs import ACTIVE, Run, RunState, RunStore
from potato.server.training.tokens import BackendToken, BackendTokens


class UnknownBackend(Exception):
    """The check names a backend the config does not have; the message lists those it has."""


@dataclass
class CheckReport:
    """One check's answer: ``ok`` means a run could start there; ``lines`` are what the CLI prints."""

    backend: str
    type: str
    ok: bool
    lines: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "type": self.type, "ok": self.ok, "lines": self.lines, **self.details}


def check_local(backend: LocalBackend, default_trainer: str | None = None) -> CheckReport:
    """Which device a local run would get (R11, R12), e.g. ``local: this machine, CPU (2 threads)``,
    and each trainer this Python cannot import (E4 before a run hits it); ok unless a run could not
    start: E11, or the default trainer (``model_training.trainer``) lacking a package."""
    from potato.training.devices import describe_local, probe_devices, resolve_device

    probe = probe_devices()
    device, warning = resolve_device(backend.device, probe)
    lines = [describe_local(device, probe, backend.num_threads)]
    if warning:
        lines.append(f"warning: {warning}")
    nvrtc = local_nvrtc_problem() if device.startswith("cuda") else None
    if nvrtc:
        lines.append(nvrtc)
    missing = local_packages_missing()
    lines.extend(local_import_problem(trainer, packages) for trainer, packages in missing.items())
    ok = nvrtc is None and default_trainer not in missing
    return CheckReport(backend.name, "local", ok, lines,
                       {"device": device, "warning": warning, "nvrtc_error": nvrtc, "missing_packages": missing})


def local_packages_missing() -> dict[str, list[str]]:
    """Trainer -> the pip packages this Python (the one local runs' workers use) cannot import."""
    from potato.training.failures import missing_packages
    from potato.training.trainers import available_trainers

    missing = {t.name: missing_packages(t.requires) for t in available_trainers() if t.requires}
    return {name: packages for name, packages in missing.items() if packages}


def local_import_problem(trainer: str, packages: list[str]) -> str:
    """E4 for a local run, every missing package named once, with the one command that installs them all
    (Potato's extra where pip installed Potato here; inside one of Potato's images, the image that has them)."""
    import sys

    from potato.training.failures import image_fix, image_name, install_command, module_name

    head = f"Trainer '{trainer}' could not be imported on this machine: {sys.executable} lacks {', '.join(packages)}"
    image = image_name()
    if image:
        return f"{head}; {image_fix(image, module_name(packages[0]))}"
    return f"{head} (`{install_command(sys.executable, packages)}`)"


def local_nvrtc_problem() -> str | None:
    """E11 on this machine: the same one-line NVRTC compile the ssh check runs on a host."""
    import json
    import subprocess
    import sys

    from potato.training.gpus import TORCH_PROBE, nvrtc_problem

    out = subprocess.run([sys.executable, "-c", TORCH_PROBE], capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return nvrtc_problem(report) if isinstance(report, dict) else None


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def check_agent(config: Config, backend: AgentBackend, now: float | None = None) -> CheckReport:
    """The backend's token entry with ``last_seen`` (R34), or how to issue one; no secret shown. ok
    only while an agent works for the backend (asks for work, or reports on its run): a token
    without an agent runs nothing (E10), and the check says how to start one."""
    now = time.time() if now is None else now
    db = Database(config.database_path)
    active = RunStore(db, config.training_dir / "runs").in_states(list(ACTIVE))
    presence = agent_presence(BackendTokens(db), active, backend, now)
    entry = presence.token
    if entry is None:
        return CheckReport(backend.name, "agent", False, [
            f"{backend.describe()}: no token issued yet",
            f"Issue one on this server: potato training register {backend.name} {config.path.name}",
        ], {"token": None, "polling": False})
    lines = [f"{backend.describe()}: token issued {_when(entry.created_at)}"]
    if entry.last_seen is None:
        lines.append("last_seen: never (no agent has connected with this token yet)")
    else:
        lines.append(f"last_seen: {_when(entry.last_seen)} ({now - entry.last_seen:.0f} s ago)")
    agent = entry.agent or {}
    if agent:
        gpus = ", ".join(f"{g.get('index')}: {g.get('name')}" for g in agent.get("gpus") or []) or "no GPU"
        lines.append(f"agent: {agent.get('host')} (Python {agent.get('python')}, {gpus}), "
                     f"workdir {agent.get('workdir')}")
    if presence.busy is not None and presence.polling:
        lines.append(f"The agent is running run {presence.busy.id}.")
    if not presence.polling:
        lines.append(no_agent_text(config, db, backend, presence, now))
    return CheckReport(backend.name, "agent", presence.polling, lines,
                       {"token": entry.to_json(), "polling": presence.polling})


@dataclass
class AgentPresence:
    """Whether an agent works for an agent backend now (E10 when none does)."""

    token: BackendToken | None
    seen: float | None
    """The latest request of the backend's agent: a poll for work, or a report on the run it executes."""
    busy: Run | None
    """The backend's run that executes now (its agent then reports on it instead of polling)."""
    polling: bool


def polling_window_s(backend: AgentBackend) -> float:
    """How long after its last request an agent still counts as there: the backend's
    ``heartbeat_timeout_s``, but never less than one long poll plus the longest ``Retry-After``
    (a waiting agent's ``last_seen`` moves only when a poll starts and ends)."""
    from potato.server.training.agent_api import LONG_POLL_MAX_S, RETRY_AFTER_S

    return float(max(backend.heartbeat_timeout_s, LONG_POLL_MAX_S + max(RETRY_AFTER_S) + 5))


def agent_presence(tokens: BackendTokens, active: Sequence[Run], backend: AgentBackend, now: float) -> AgentPresence:
    """The backend's token entry and whether its agent polled (or reported on its run) lately."""
    entry = tokens.get(backend.name)
    busy = next((run for run in active if run.backend == backend.name), None)
    seen = entry.last_seen if entry is not None else None
    if busy is not None and busy.last_seen is not None and (seen is None or busy.last_seen > seen):
        seen = busy.last_seen
    polling = entry is not None and seen is not None and now - seen <= polling_window_s(backend)
    return AgentPresence(entry, seen, busy, polling)


@functools.lru_cache(maxsize=1)
def _this_host() -> str:
    """This machine's name, looked up once (a slow resolver must not slow every runs list)."""
    from potato.server.training.registration import this_host

    return this_host()


def start_agent_command(config: Config, db: Database, backend: str) -> str:
    """The command that starts an agent for ``backend``, with the address ``register`` prints."""
    from potato.server.training.registration import recorded_address, server_address

    address = server_address(None, config.public_url, recorded_address(db), config.host, config.port, _this_host())
    return f"potato training agent --server {address.url} --backend {backend}"


def no_agent_text(config: Config, db: Database, backend: AgentBackend, presence: AgentPresence, now: float) -> str:
    """E10: no agent polls for the backend, and how to start one (register first, if never registered)."""
    name = backend.name
    if presence.token is None:
        return (f"no agent polls for backend '{name}': no token issued yet; on the server run "
                f"`potato training register {name} {config.path.name}`, then on the training machine the commands "
                "it prints")
    since = ("none has connected with its token yet" if presence.seen is None
             else f"the last request came {now - presence.seen:.0f} s ago")
    return (f"no agent polls for backend '{name}' ({since}): start one on the training machine with the backend's "
            f"token in POTATO_TRAINING_TOKEN: `{start_agent_command(config, db, name)}` (a lost token: "
            f"`potato training register {name} {config.path.name}` issues a new one)")


def explain_queued(config: Config, store: RunStore, runs: Sequence[Run], now: float | None = None) -> None:
    """Set the step line of each queued run on an agent backend to why it waits (at read time, so it
    is always current): no agent polls for its backend (E10), or the run that executes before it."""
    backends = config.model_training.all_backends()
    waiting: list[tuple[Run, AgentBackend]] = []
    for run in runs:
        backend = backends.get(run.backend)
        if run.state is RunState.QUEUED and isinstance(backend, AgentBackend):
            waiting.append((run, backend))
    if not waiting:
        return
    now = time.time() if now is None else now
    db = store.db
    tokens = BackendTokens(db)
    active = store.in_states(list(ACTIVE))
    presences: dict[str, AgentPresence] = {}
    for run, backend in waiting:
        if run.backend not in presences:
            presences[run.backend] = agent_presence(tokens, active, backend, now)
        presence = presences[run.backend]
        if not presence.polling:
            run.step = no_agent_text(config, db, backend, presence, now)
        elif active:
            run.step = f"waiting in the queue behind run {active[0].id} ({active[0].backend})"


def check_ssh(config: Config, backend: SshBackend) -> CheckReport:
    """Log in and report the host's Python, every GPU with its free memory and load, and what a
    run would get (R17); ok when a run could start."""
    from potato.server.training.ssh import (
        VENV_CHECK_STEP,
        gpus_unknown_error,
        packages_snippet,
        requirement_name,
        venv_built,
        venv_key,
    )
    from potato.server.training.sshcmd import SshFailed, SshTarget, preamble_notice, remote_path
    from potato.server.training.sshhost import HostFacts, control_dir, probe_host, run_ssh
    from potato.training.gpus import NoGpuFree, choose_gpus

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
    if facts.nvrtc_error and choice.cuda_visible_devices and backend.container is None:
        lines.append(facts.nvrtc_error)
        return CheckReport(backend.name, "ssh", False, lines, {**details, "error": facts.nvrtc_error})
    details["cuda_visible_devices"] = choice.cuda_visible_devices
    if backend.container is not None:  # the host's Python only runs the agent; the trainers are the image's
        lines.append(f"The worker runs in {backend.container.runtime} image {backend.container.image}; "
                     "the trainers' packages are the image's.")
        return CheckReport(backend.name, "ssh", True, lines, {**details, "container": backend.container.image})
    # A run's worker has the packages venv's Python when the backend lists packages (R14): built,
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
    for trainer, packages in trainer_packages_missing(target, config.model_training.trainer, venv_python).items():
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


def check_slurm(config: Config, backend: SlurmBackend) -> CheckReport:
    """Log in to the login node; report its Python, SLURM's commands (E8), where ``remote_dir``
    really is, the ``job_python`` the job will run, and whether the cluster can ever run the
    request (sinfo, ``sbatch --test-only``) (R28); ok when a run could start."""
    from potato.server.training.slurm import check_cluster

    return check_cluster(config, backend)


def trainer_packages_missing(target: Any, default_trainer: str, python: str | None = None) -> dict[str, list[str]]:
    """Trainer -> the pip packages the host lacks for it (E4 before a run hits it); ``python`` is the
    interpreter a run's worker would have there as a shell word (the packages venv's), else the
    backend's ``python``."""
    from potato.server.training.sshhost import missing_modules
    from potato.training.failures import PIP_NAMES
    from potato.training.trainers import available_trainers

    modules_for = {pip: module for module, pip in PIP_NAMES.items()}
    wanted = {t.name: list(t.requires) for t in available_trainers() if t.requires and not t.local_only}
    modules = sorted({modules_for.get(p, p) for packages in wanted.values() for p in packages})
    absent = set(missing_modules(target, modules, python))
    return {name: [p for p in packages if modules_for.get(p, p) in absent]
            for name, packages in wanted.items() if any(modules_for.get(p, p) in absent for p in packages)}


def run_check(config: Config, name: str) -> CheckReport:
    backends = config.model_training.all_backends()
    backend = backends.get(name)
    if backend is None:
        raise UnknownBackend(f"Backend {name!r} is not in the config. Backends: {', '.join(backends)}.")
    if isinstance(backend, LocalBackend):
        return check_local(backend, config.model_training.trainer)
    if isinstance(backend, AgentBackend):
        return check_agent(config, backend)
    if isinstance(backend, SshBackend):
        return check_ssh(config, backend)
    return check_slurm(config, backend)
