"""The shell lines an ssh or slurm run sends to its host: pure functions, no processes.

Each takes what it needs as shell words (:func:`~potato.server.training.backends.ssh.command.remote_path` for a
folder that may start with ``~``, :func:`shlex.quote` for everything else) or quotes it here, so a
value from the config (a backend name, a package, an image) is always one word on the remote
shell (tests/unit/server/training/backends/ssh/test_lines.py runs them in a real ``sh`` with hostile values).
"""

from __future__ import annotations

import shlex
from typing import Mapping, Sequence

from potato.config.schema import Container

from potato.server.training.backends.ssh.copyback import SEND_ARTIFACTS
from potato.server.training.backends.ssh.command import shell


def push_code(remote_dir: str, digest: str) -> str:
    """Unpack the code's tar stream (stdin) into ``remote_dir/code/<digest>``: under ``<digest>.tmp``
    first, renamed when complete, so a broken copy is never used."""
    code = f"{remote_dir}/code/{digest}"
    tmp = f"{code}.tmp"
    return f"mkdir -p {remote_dir}/code && rm -rf {tmp} && mkdir {tmp} && tar -x -C {tmp} && rm -rf {code} && mv {tmp} {code}"


def venv_built(venv: str) -> str:
    """Exits 0 when the venv at ``venv`` (a shell word) is complete."""
    return f"test -f {venv}/.potato-complete"


def build_venv(remote_dir: str, venv: str, env_prefix: str, python_path: str, packages: Sequence[str]) -> str:
    """A venv at ``venv`` that sees the host's packages (``--system-site-packages``: its CUDA torch
    stays) plus ``packages``; built under ``<venv>.tmp`` and renamed when complete, like the code."""
    tmp = f"{venv}.tmp"
    return (f"mkdir -p {remote_dir}/venvs && rm -rf {tmp} && {env_prefix}"
            f"{shlex.quote(python_path)} -m venv --system-site-packages {tmp} && {tmp}/bin/python -m pip "
            f"install --disable-pip-version-check --no-input {shell(list(packages))} && "
            f"touch {tmp}/.potato-complete && rm -rf {venv} && mv {tmp} {venv}")


def agent_line(remote_dir: str, digest: str, python: str, env: Mapping[str, str], socket: str, backend: str,
                run_id: str, pass_env: Sequence[str], agent_args: Sequence[str] = (), host: str = "") -> str:
    """The agent for one run, with this server behind the forwarded ``socket`` and the run's token on
    stdin. ``python`` is a shell word (the backend's interpreter, or its packages venv's);
    ``agent_args`` are shell text already (the container options, ``--slurm-config``); ``host`` is
    the host as the config names it, so that an agent which outlives its session's end long enough
    to report it says so in the server's words."""
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    code = f"{remote_dir}/code/{digest}"
    return (f"mkdir -p {remote_dir}/jobs && cd {remote_dir} && exec env {assignments} "
            f"PYTHONPATH={code} {python} -m potato.training.agent "
            f"--server {shlex.quote('unix:' + socket)} --backend {shlex.quote(backend)} "
            f"--run {shlex.quote(run_id)} --token-stdin --session {shlex.quote(host)} --workdir {remote_dir}"
            + "".join(f" --pass-env={shlex.quote(name)}" for name in pass_env)  # the admin's env: the worker's too
            + "".join(f" {arg}" for arg in agent_args))


def container_args(box: Container | None) -> list[str]:
    """The agent's ``--container-*`` arguments for the backend's container (none without one)."""
    return [] if box is None else box.agent_args()


def send_artifacts(job_dir: str, python: str, max_file_bytes: int, max_total_bytes: int) -> str:
    """The copy-back's sender, in the job folder: lists the model files, then streams those within
    the limits (:data:`~potato.server.training.backends.ssh.copyback.SEND_ARTIFACTS`)."""
    return (f"cd {job_dir} && exec {shlex.quote(python)} -c {shlex.quote(SEND_ARTIFACTS)} "
            f"artifacts {max_file_bytes} {max_total_bytes}")


def clean_up(socket_dir: str, job_dir: str | None, before: Sequence[str] = ()) -> str:
    """Remove the run's socket folder and (unless it is kept: ``job_dir`` None) its job folder, after
    the ``before`` lines; each runs whatever the one before it did."""
    parts = [*before, f"rm -rf {shlex.quote(socket_dir)}"]
    if job_dir is not None:
        parts.append(f"rm -rf {job_dir}")
    return " ; ".join(parts)
