"""The worker inside a container: the apptainer and docker command lines.

Remote-safe: standard library only, Python 3.8. One function builds both the argv an agent starts
on an ssh host or a NAT machine and the line SLURM's job script runs: the image's ``python3`` runs
``potato.training.worker`` with Potato's own code first on ``PYTHONPATH`` (the same version as the
agent, whatever Potato the image has), and the shared folder is mounted at the same path, so every
path in the job stays valid inside.

Where the job script cannot know a value in advance (the user, the GPUs SLURM hands the job), the
caller passes a :class:`Shell` word, which :func:`shell_line` leaves for the shell to expand.

:class:`ContainerSpec` is the one shape of "which image, through which runtime": the config builds
it, the server passes it to the agent as ``--container-*`` words or in slurm.json, and the agent
hands it to :func:`worker_argv`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from potato.training.job.results import LIFELINE_FLAG

RUNTIMES = ("apptainer", "docker")


class Shell(str):
    """A word for the shell to expand at run time (``"$(id -u):$(id -g)"``), not to be quoted."""


Word = Union[str, Shell]

SLURM_JSON_FORM = 'container must be {"runtime": "apptainer" or "docker", "image": ...}'
"""What slurm.json's ``container`` must look like (the message when it does not)."""


@dataclass(frozen=True)
class ContainerSpec:
    """Run the worker inside apptainer or docker on the host: the backend's ``container`` in the
    config, the agent's ``--container-*`` options, slurm.json's ``container``."""

    runtime: str
    image: str
    options: Tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: Any) -> "ContainerSpec":
        """slurm.json's ``container`` object; :class:`ValueError` naming the expected form if it is not one."""
        if not isinstance(data, dict):
            raise ValueError(SLURM_JSON_FORM)
        options = data.get("options") or []
        if data.get("runtime") not in RUNTIMES or not isinstance(data.get("image"), str) \
                or not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise ValueError(SLURM_JSON_FORM)
        return cls(data["runtime"], data["image"], tuple(options))

    def to_json(self) -> Dict[str, Any]:
        return {"runtime": self.runtime, "image": self.image, "options": list(self.options)}

    def agent_args(self) -> List[str]:
        """The agent's ``--container-*`` arguments as shell text: the image and every option one word
        whatever they hold (the runtime is one of :data:`RUNTIMES`)."""
        return ([f"--container-runtime {self.runtime} --container-image {shlex.quote(self.image)}"]
                + [f"--container-option={shlex.quote(o)}" for o in self.options])


def worker_argv(box: ContainerSpec, job_dir: str, code_dir: str, shared_dir: str,
                user: Optional[Word] = None, gpus: Optional[Word] = None, name: Optional[str] = None,
                env: Optional[Mapping[str, str]] = None, lifeline: bool = False) -> List[Word]:
    """``apptainer exec`` or ``docker run`` of the worker for one job dir.

    ``gpus``: the GPUs for the run (``"0,1"``; empty or None: none for docker, all that apptainer's
    ``--nv`` shows). ``user``: docker's ``--user`` (files in the job dir stay the caller's).
    ``name``: docker's ``--name``, so a cold stop can ``docker kill`` it. A :class:`Shell` ``gpus`` means
    "the job's ``$CUDA_VISIBLE_DEVICES``, when set" (a SLURM job learns its GPUs only on the node).
    ``lifeline``: the caller's stdin is the worker's lifeline (``--lifeline-stdin``): docker gets
    ``-i`` to forward it into the container (end of file included); apptainer's process inherits it.
    """
    runtime, image, options = box.runtime, box.image, box.options
    variables = {"PYTHONPATH": code_dir, "PYTHONUNBUFFERED": "1", **(env or {})}
    inner = ["python3", "-m", "potato.training.worker", *([LIFELINE_FLAG] if lifeline else []), job_dir]
    if runtime == "apptainer":
        argv: List[Word] = ["apptainer", "exec", "--nv", "--cleanenv"]
        for key, value in variables.items():
            argv += ["--env", f"{key}={value}"]
        if isinstance(gpus, Shell):
            argv += ["--env", Shell(f'CUDA_VISIBLE_DEVICES="{gpus}"')]
        elif gpus:
            argv += ["--env", f"CUDA_VISIBLE_DEVICES={gpus}"]
        return argv + ["--bind", f"{shared_dir}:{shared_dir}", "--pwd", job_dir, *options, image, *inner]
    if runtime == "docker":
        argv = ["docker", "run", "--rm", "--init"]
        if lifeline:
            argv.append("-i")
        if name:
            argv += ["--name", name]
        if user:
            argv += ["--user", user]
        if isinstance(gpus, Shell):
            argv.append(Shell('${CUDA_VISIBLE_DEVICES:+--gpus "device=${CUDA_VISIBLE_DEVICES}"}'))
        elif gpus:
            argv += ["--gpus", f"device={gpus}"]
        for key, value in variables.items():
            argv += ["-e", f"{key}={value}"]
        return argv + ["-v", f"{shared_dir}:{shared_dir}", "-w", job_dir, *options, image, *inner]
    raise ValueError(f"container runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")


def shell_line(argv: Sequence[Word]) -> str:
    """The argv as one shell line: every word quoted except the :class:`Shell` ones."""
    return " ".join(word if isinstance(word, Shell) else shlex.quote(word) for word in argv)
