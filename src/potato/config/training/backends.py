"""Checks for ``model_training.backends``; pure, no I/O.

One key table per backend type. Keys that are wrong for a known reason (``packages`` or ``gpus`` on
slurm, ssh settings on an agent backend) get a message that explains the reason instead of the
generic unknown-key text, because that is where a user copying an ssh block goes wrong.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from potato import defaults
from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    Problem,
    boolean,
    check_keys,
    choice,
    integer,
    key_text,
    mapping,
    number,
    show,
    text,
    text_list,
)
from potato.config.schema import AgentBackendSettings, BackendSettings, Container, SlurmBackendSettings, SshBackendSettings
from potato.training.slurm.settings import node_local_dir, node_local_message  # one rule with the agent's --workdir


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GPU_LIST = re.compile(r"\d{1,4}(,\d{1,4})*")
_SLURM_TIME = re.compile(r"(?:(\d{1,9})-)?(\d{1,9})(?::(\d{1,9}))?(?::(\d{1,9}))?")
_UNLIMITED = ("infinite", "unlimited")


def gpus(value: object) -> str:
    """``auto``, ``none`` or GPU indices as text; an unquoted ``gpus: 1`` is an int in YAML."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10000:
        return str(value)
    if isinstance(value, str):
        cleaned = value.replace(" ", "")
        if cleaned in ("auto", "none"):
            return cleaned
        if _GPU_LIST.fullmatch(cleaned):
            indices = cleaned.split(",")
            if len(set(indices)) == len(indices):
                return cleaned
    hint = "; to train on the CPU write gpus: none" if value is False else ""
    raise Invalid(
        f"{show(value)} is not a GPU choice{hint}; use auto (the GPU with the most free memory), none (the CPU), "
        'or GPU indices such as "1" or "0,1"'
    )


def env(value: object) -> dict[str, str]:
    """Environment variables for the run: names a shell accepts, values as text."""
    raw = mapping(value, "{PATH: /opt/bin:/usr/bin}")
    out: dict[str, str] = {}
    problems: list[Problem] = []
    for key, val in raw.items():
        at = f".{key_text(key)}"
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            problems.append((at, "is not a valid environment variable name; use letters, digits and _"))
        elif isinstance(val, str) and "\x00" not in val:
            out[key] = val
        elif isinstance(val, (int, float)) and not isinstance(val, bool) and abs(val) < 2**63:
            out[key] = str(val)
        else:
            problems.append((at, f"must be text, got {show(val)}; quote the value"))
    if problems:
        raise Invalid(problems=problems)
    return out


def env_names(value: object) -> tuple[str, ...]:
    """Names of environment variables to pass on to the worker, e.g. [HF_TOKEN]."""
    names = text_list("[HF_TOKEN]", unique=True)(value)
    bad = [(f"[{i}]", f"{show(name)} is not a valid environment variable name; use letters, digits and _")
           for i, name in enumerate(names) if not _ENV_NAME.fullmatch(name)]
    if bad:
        raise Invalid(problems=bad)
    return names


_CONTAINER_KEYS: Mapping[str, Check] = {
    "runtime": choice(("apptainer", "docker"), "container runtime"),
    "image": text(),
    "options": text_list('["--nv"]'),
}


def container(value: object) -> Container:
    """Run the worker through apptainer or docker on the host."""
    raw = mapping(value, "{runtime: apptainer, image: /shared/images/potato-worker.sif}")
    values, problems = check_keys(raw, _CONTAINER_KEYS, "a container")
    if raw.get("runtime") is None:
        problems.append((".runtime", "missing; set runtime: apptainer or runtime: docker"))
    if raw.get("image") is None:
        problems.append((".image", "missing; name the worker image, e.g. image: /shared/images/potato-worker.sif"))
    if problems:
        raise Invalid(problems=problems)
    return Container(**values)


def parse_slurm_time(value: str) -> int | None:
    """Seconds in a SLURM time limit, None for no limit; :class:`Invalid` if SLURM would refuse it.

    Formats as sbatch takes them: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS; 0, ``infinite`` and
    ``unlimited`` mean no limit.
    """
    stripped = value.strip()
    if stripped.lower() in _UNLIMITED:
        return None
    match = _SLURM_TIME.fullmatch(stripped)
    if not match:
        raise Invalid(
            f"{show(value)} is not a SLURM time; use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS, "
            'e.g. time: "04:00:00"'
        )
    day, first, second, third = match.groups()
    parts = [int(p) for p in (first, second, third) if p is not None]
    if day is not None:
        parts += [0] * (3 - len(parts))
        seconds = int(day) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    elif len(parts) == 1:
        seconds = parts[0] * 60
    elif len(parts) == 2:
        seconds = parts[0] * 60 + parts[1]
    else:
        seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return seconds or None


def slurm_time(value: object) -> str:
    """A SLURM ``time`` as written. YAML 1.1 reads an unquoted ``12:00:00`` as the int 43200."""
    if isinstance(value, int) and not isinstance(value, bool):
        example = _as_clock(value) if 60 <= value < 10**7 else "04:00:00"
        raise Invalid(
            f"YAML read this unquoted value as the number {show(value)} (an unquoted time such as 12:00:00 "
            f'becomes seconds); quote the time, e.g. time: "{example}"'
        )
    if not isinstance(value, str):
        raise Invalid(f'must be a SLURM time in quotes, e.g. time: "04:00:00", got {show(value)}')
    parse_slurm_time(value)
    return value.strip()


def _as_clock(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


_REMOTE_BASE: dict[str, Check] = {
    "type": text(),
    "description": text(allow_empty=True),
    "host": text(option_safe=True),
    "user": text(numbers=True, option_safe=True),
    "port": integer(1, 65535),
    "identity_file": text(),
    "python": text(),
}
_REMOTE_REST: dict[str, Check] = {
    "min_free_gpu_mb": integer(0),
    "num_threads": integer(1),
    "remote_dir": text(),
    "max_artifact_mb": integer(0),
    "max_artifacts_total_mb": integer(0),
    "fetch_artifacts": boolean,
    "keep_remote": boolean,
    "keep_connection_s": integer(0),
    "heartbeat_timeout_s": integer(1),
    "env": env,
    "container": container,
}
"""With ``_REMOTE_BASE``, the keys of :class:`RemoteHost` that ssh and slurm share (plus ``type``), checked
by one table; split in two so the ssh keys keep the docs' order, ``packages`` and ``gpus`` between them."""

SSH_KEYS: Mapping[str, Check] = {
    **_REMOTE_BASE,
    "packages": text_list('["transformers>=4.46.0", "peft>=0.13.0"]'),
    "gpus": gpus,
    **_REMOTE_REST,
}
"""The ssh keys and ``container``, in the order the docs list them."""

SLURM_KEYS: Mapping[str, Check] = {
    **_REMOTE_BASE,
    **_REMOTE_REST,
    "job_python": text(),
    "prelude": text_list('["module load cuda/12.4"]'),
    "partition": text(numbers=True),
    "account": text(numbers=True),
    "qos": text(numbers=True),
    "gres": text(),
    "time": slurm_time,
    "mem": text(numbers=True),
    "cpus_per_task": integer(1),
    "constraint": text(numbers=True),
    "extra_sbatch_args": text_list('["--exclusive"]'),
    "poll_interval_s": number(0, open_low=True),
}
"""Every ssh key but ``gpus`` and ``packages``, plus the sbatch settings."""

AGENT_KEYS: Mapping[str, Check] = {
    "type": text(),
    "description": text(allow_empty=True),
    "heartbeat_timeout_s": integer(1),
    "queue_timeout_s": integer(1),
}
"""These and no other key."""

_SLURM_HINTS = {
    "packages": (
        "packages is not supported on a slurm backend: a venv built on the login node may not run on the compute "
        "nodes. Point job_python at an environment the compute nodes have, and put module loads or its "
        'activation in prelude, e.g. prelude: ["module load cuda/12.4"]'
    ),
    "gpus": (
        "gpus is not supported on a slurm backend: GPUs come from gres (e.g. gres: gpu:1), and the scheduler "
        "sets CUDA_VISIBLE_DEVICES for the GPUs it allocates. Remove gpus and set gres"
    ),
}
_SSH_HINTS = {
    key: f"{key} is a slurm setting, but this backend has type: ssh; remove it or set type: slurm"
    for key in SLURM_KEYS
    if key not in SSH_KEYS
}
_AGENT_HINTS = {
    key: (
        f"an agent backend takes no {key}: Potato never connects to the training machine, the agent there "
        "opens every connection itself and takes its settings on the `potato training agent` command line. "
        f"Valid keys: {', '.join(AGENT_KEYS)}"
    )
    for key in (*SSH_KEYS, *SLURM_KEYS)
    if key not in AGENT_KEYS
}


def _nothing_required(body: Mapping[Any, object]) -> list[Problem]:
    return []


@dataclass(frozen=True)
class BackendKind:
    """A backend type as the config knows it: its keys and their checks, and the settings dataclass
    it builds (``settings(name=..., **checked values)``). The server's side of the same type is a
    :class:`~potato.server.training.backends.base.Backend` subclass; registering that one registers
    this one too, so a new backend is its module and its settings dataclass."""

    type: str
    settings: Callable[..., BackendSettings]
    keys: Mapping[str, Check]
    """Every key it takes, ``type`` included, in the order the docs list them."""
    noun: str
    """How messages name it: "an ssh backend"."""
    hints: Mapping[str, str] = field(default_factory=dict)
    """A message for a key that is wrong here for a known reason, instead of the unknown-key text."""
    required: Callable[[Mapping[Any, object]], list[Problem]] = _nothing_required
    extras: Callable[[str, Mapping[str, Any], Findings], None] | None = None
    """Checks across keys, once each key is valid on its own."""
    polled: bool = False
    """Its runs wait until an agent asks for them (the server starts nothing); the server's class for
    it says ``claimed_by_agents``, and its settings carry ``heartbeat_timeout_s``."""
    ssh_socket: bool = False
    """Its agent reaches the server through an ssh socket, so its requests arrive as loopback ones."""


BACKEND_KINDS: dict[str, BackendKind] = {}
"""Every backend type a config may name, by ``type``, in registration order."""


def polled(settings: BackendSettings) -> bool:
    """Whether agents poll for this backend's runs (:attr:`BackendKind.polled`); ``local`` is not."""
    kind = BACKEND_KINDS.get(settings.type)
    return kind is not None and kind.polled


def register_backend_kind(kind: BackendKind) -> None:
    """Let configs name ``kind.type`` under ``model_training.backends``."""
    if kind.type == defaults.LOCAL_BACKEND or (kind.type in BACKEND_KINDS and BACKEND_KINDS[kind.type] != kind):
        raise ValueError(f"a backend type {kind.type!r} exists already")
    BACKEND_KINDS[kind.type] = kind


def _one_of(types: list[str]) -> str:
    return types[0] if len(types) == 1 else f"{', '.join(types[:-1])} or {types[-1]}"


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a backend, or None. ``local`` is taken."""
    if not isinstance(name, str):
        return f"backend names must be text, got {show(name)}; quote the name"
    if name == defaults.LOCAL_BACKEND:
        return (
            f"'{name}' is reserved for the backend that always exists (a subprocess on this server); "
            "set its device, num_threads and max_ram_mb directly under model_training, and rename this backend"
        )
    if not _NAME.fullmatch(name):
        return (
            f"{show(name)} is not a valid backend name; use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    return None


def declared_types(raw: object) -> dict[str, str | None]:
    """Every well-named backend with its type (None when the type is bad): what references may name."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, str | None] = {}
    for name, body in raw.items():
        if name_problem(name) is None:
            btype = body.get("type") if isinstance(body, dict) else None
            out[str(name)] = btype if isinstance(btype, str) and btype in BACKEND_KINDS else None
    return out


def check_backends(raw: object, findings: Findings) -> dict[str, BackendSettings] | None:
    """All backends under ``model_training.backends``, or None if any is invalid."""
    path = "model_training.backends"
    if not isinstance(raw, dict):
        findings.error(path, f"must be a mapping of backend names to settings, e.g. gpu-server: {{type: ssh, "
                             f"host: gpu.example.org}}, got {show(raw)}")
        return None
    out: dict[str, BackendSettings] = {}
    ok = True
    for name, body in raw.items():
        where = f"{path}.{key_text(name)}"
        problem = name_problem(name)
        if problem is not None:
            findings.error(where, problem)
            ok = False
            continue
        backend = _check_backend(str(name), body, findings)
        if backend is None:
            ok = False
        else:
            out[str(name)] = backend
    return out if ok else None


def _check_backend(name: str, body: object, findings: Findings) -> BackendSettings | None:
    where = f"model_training.backends.{name}"
    before = len(findings.errors)
    types = list(BACKEND_KINDS)
    if not isinstance(body, dict):
        findings.error(where, f"must be a mapping with type: {_one_of(types)} and its settings, got {show(body)}",
                       name)
        return None
    btype = body.get("type")
    if btype is None:
        findings.error(f"{where}.type", f"missing; set type: {_one_of(types)}", name)
        return None
    if not isinstance(btype, str) or btype not in BACKEND_KINDS:
        findings.error(f"{where}.type", f"{show(btype)} is not a backend type; valid types: {', '.join(types)}", name)
        return None
    kind = BACKEND_KINDS[btype]
    values, problems = check_keys(body, kind.keys, kind.noun, kind.hints)
    problems += kind.required(body)
    findings.errors_at(where, problems, name)
    if kind.extras is not None:
        kind.extras(name, values, findings)
    if len(findings.errors) > before:
        return None
    return kind.settings(name=name, **{k: v for k, v in values.items() if k != "type"})


def _needs_host(noun: str) -> Callable[[Mapping[Any, object]], list[Problem]]:
    def required(body: Mapping[Any, object]) -> list[Problem]:
        return [] if body.get("host") is not None else [(".host", f"missing; {noun} {_HOST_HELP}")]
    return required


def _slurm_required(body: Mapping[Any, object]) -> list[Problem]:
    """A slurm backend needs ``host`` and a shared ``remote_dir``."""
    problems = _needs_host("a slurm backend")(body)
    if body.get("remote_dir") is None:
        problems.append((".remote_dir", f"missing; a slurm backend {_SHARED_DIR_HELP}"))
    return problems


_HOST_HELP = (
    "needs the host to log in to (any name ssh accepts, e.g. gpu.example.org or an alias from ~/.ssh/config)"
)
_SHARED_DIR_HELP = (
    "needs remote_dir on storage the login node and the compute nodes share, "
    "e.g. remote_dir: /shared/projects/me/potato-training"
)


def _slurm_extras(name: str, values: Mapping[str, Any], findings: Findings) -> None:
    """``remote_dir`` off node-local folders; a long ``time`` warns."""
    where = f"model_training.backends.{name}"
    remote_dir = values.get("remote_dir")
    local = node_local_dir(remote_dir) if isinstance(remote_dir, str) else None
    if local is not None:
        findings.error(
            f"{where}.remote_dir",
            node_local_message(show(remote_dir), local, "remote_dir: /shared/projects/me/potato-training"),
            name,
        )
    written = values.get("time")
    if isinstance(written, str):
        seconds = parse_slurm_time(written)
        limit = math.inf if seconds is None else seconds
        if limit > defaults.SLURM_LONG_TIME_S:
            findings.warn_exact(
                f"{where}.time",
                f"{where}.time is {written}. A job that holds a GPU for more than "
                f"{defaults.SLURM_LONG_TIME_S // 3600} hours is long on a shared cluster; check its policy",
                name,
            )


for _kind in (
    BackendKind("ssh", SshBackendSettings, SSH_KEYS, "an ssh backend", _SSH_HINTS, _needs_host("an ssh backend"),
                ssh_socket=True),
    BackendKind("slurm", SlurmBackendSettings, SLURM_KEYS, "a slurm backend", _SLURM_HINTS, _slurm_required,
                _slurm_extras, ssh_socket=True),
    BackendKind("agent", AgentBackendSettings, AGENT_KEYS, "an agent backend", _AGENT_HINTS, polled=True),
):
    register_backend_kind(_kind)
