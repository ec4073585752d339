"""``potato training check <backend>`` and the page's Check button: one report for both (R9, R12)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from potato.config.schema import AgentBackend, Config, LocalBackend, SlurmBackend, SshBackend


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


def check_local(backend: LocalBackend) -> CheckReport:
    """Which device a local run would get (R11, R12), e.g. ``local: this machine, CPU (2 threads)``."""
    from potato.training.devices import describe_local, probe_devices, resolve_device

    probe = probe_devices()
    device, warning = resolve_device(backend.device, probe)
    lines = [describe_local(device, probe, backend.num_threads)]
    if warning:
        lines.append(f"warning: {warning}")
    nvrtc = local_nvrtc_problem() if device.startswith("cuda") else None
    if nvrtc:
        lines.append(nvrtc)
    return CheckReport(backend.name, "local", nvrtc is None, lines,
                       {"device": device, "warning": warning, "nvrtc_error": nvrtc})


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
    """The backend's token entry with ``last_seen`` (R34), or how to issue one; no secret shown."""
    from potato.db import Database
    from potato.server.training.tokens import BackendTokens

    now = time.time() if now is None else now
    entry = BackendTokens(Database(config.database_path)).get(backend.name)
    if entry is None:
        return CheckReport(backend.name, "agent", False, [
            f"{backend.describe()}: no token issued yet",
            f"Issue one on this server: potato training register {backend.name} {config.path.name}",
        ], {"token": None})
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
    return CheckReport(backend.name, "agent", True, lines, {"token": entry.to_json()})


def check_ssh(config: Config, backend: SshBackend) -> CheckReport:
    """Log in and report the host's Python, every GPU with its free memory and load, and what a
    run would get (R17); ok when a run could start."""
    from potato.server.training.ssh import gpus_unknown_error
    from potato.server.training.sshcmd import SshFailed, SshTarget, preamble_notice
    from potato.server.training.sshhost import HostFacts, control_dir, probe_host
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
        return check_local(backend)
    if isinstance(backend, AgentBackend):
        return check_agent(config, backend)
    if isinstance(backend, SshBackend):
        return check_ssh(config, backend)
    return check_slurm(config, backend)
