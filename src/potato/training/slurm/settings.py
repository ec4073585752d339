"""SLURM settings: what the agent submits a run's worker with (``slurm.json``), and the rule
for where a SLURM job's files may live.

Remote-safe: standard library only, Python 3.8. Kept apart from the job script Potato writes
(:mod:`potato.training.slurm.script`) and from what the scheduler says (:mod:`potato.training.slurm.state`)
because both read these settings, and the server's config check uses the node-local rule too
(one rule for the config's ``remote_dir`` and a hand-started agent's ``--workdir``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from potato.defaults import SLURM_POLL_INTERVAL_S
from potato.errors import PotatoError, did_you_mean
from potato.training.launch.containers import ContainerSpec

SETTINGS_FILE = "slurm.json"


class SlurmConfigError(PotatoError, ValueError):
    """slurm.json (``--slurm-config``) is not what the agent can submit with; the message names the key."""


NODE_LOCAL_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
"""Folders each node has its own copy of, so a SLURM job cannot share files through them."""


def node_local_dir(path: str) -> Optional[str]:
    """The node-local folder ``path`` lies in (``/tmp``, ``/var/tmp``, ``/dev/shm``), or None.

    Normalised first, so ``//tmp/x`` and ``/tmp/../tmp/x`` do not slip through. One rule for the
    config's ``remote_dir`` and a hand-started agent's ``--workdir``: both are where the
    agent on the login node and the job on a compute node share files.
    """
    if not path.startswith("/"):
        return None
    normal = posixpath.normpath("/" + path.lstrip("/"))
    for local in NODE_LOCAL_DIRS:
        if normal == local or normal.startswith(local + "/"):
            return local
    return None


def node_local_message(shown: str, local: str, example: str) -> str:
    """Why a folder under ``local`` cannot hold a SLURM job's files, and the fix (``example``)."""
    return (f"{shown} is under {local}; /tmp, /var/tmp and /dev/shm are local to each node, so the job on a compute "
            "node would not see the files the agent writes on the login node. Use storage the login and compute "
            f"nodes share, e.g. {example}")



@dataclass(frozen=True)
class SlurmSettings:
    """What the agent needs to submit a run's worker: the backend's slurm settings, from the
    server or, for a hand-started agent, from ``--slurm-config slurm.json``."""

    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    gres: Optional[str] = None
    time: Optional[str] = None
    mem: Optional[str] = None
    cpus_per_task: Optional[int] = None
    constraint: Optional[str] = None
    extra_sbatch_args: Tuple[str, ...] = ()
    job_python: Optional[str] = None
    """The compute nodes' interpreter; None: the agent's ``--python``."""
    prelude: Tuple[str, ...] = ()
    """Shell lines run before the worker (``module load cuda/12.4``, an env's activation)."""
    poll_interval_s: float = SLURM_POLL_INTERVAL_S
    num_threads: Optional[int] = None
    container: Optional[ContainerSpec] = None
    """In slurm.json ``{"runtime": "apptainer" | "docker", "image": ..., "options": [...]}``."""

    @classmethod
    def from_json(cls, data: Any) -> "SlurmSettings":
        if not isinstance(data, dict):
            raise SlurmConfigError("must be a JSON object of slurm settings, e.g. "
                                   '{"partition": "gpu", "gres": "gpu:1", "time": "02:00:00"}')
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise SlurmConfigError(f"unknown key {unknown[0]!r}{did_you_mean(str(unknown[0]), sorted(known))}; "
                                   f"valid keys: {', '.join(sorted(known))}")
        values: Dict[str, Any] = {}
        for key, value in data.items():
            if value is None:
                continue
            if key in ("extra_sbatch_args", "prelude"):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise SlurmConfigError(f"{key} must be a list of strings, got {value!r}")
                values[key] = tuple(value)
            elif key in ("cpus_per_task", "num_threads"):
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise SlurmConfigError(f"{key} must be a whole number of at least 1, got {value!r}")
                values[key] = value
            elif key == "poll_interval_s":
                if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                    raise SlurmConfigError(f"poll_interval_s must be a number of seconds above 0, got {value!r}")
                values[key] = float(value)
            elif key == "container":
                try:
                    values[key] = ContainerSpec.from_json(value)
                except ValueError as bad:
                    raise SlurmConfigError(str(bad)) from None
            else:
                if not isinstance(value, (str, int)) or isinstance(value, bool):
                    raise SlurmConfigError(f"{key} must be text, got {value!r}")
                values[key] = str(value)
        return cls(**values)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for key in self.__dataclass_fields__:
            value = getattr(self, key)
            if value is None or value == ():
                continue
            if isinstance(value, ContainerSpec):
                out[key] = value.to_json()
            else:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out
