"""How an agent is set up from its command line and its environment: the parser, the token, and
the slurm and container settings, each checked before any job.

Remote-safe: standard library only, Python 3.8. Apart from :mod:`potato.training.agent` (the
program and its polling loop) because what goes wrong here is a person's setup, not a run: every
error says what to do on this machine (a systemd unit, a container, a shell), and
``potato training agent`` hands its arguments to :func:`parser` here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

from potato.defaults import REMOTE_DIR
from potato.errors import PotatoError
from potato.training.launch.containers import ContainerSpec
from potato.training.job.failures import image_name
from potato.training.agent.protocol import LONG_POLL_MAX_S
from potato.training.agent.reporting import GIVE_UP_S
from potato.training.slurm.settings import SlurmConfigError, SlurmSettings, node_local_dir, node_local_message

TOKEN_ENV = "POTATO_TRAINING_TOKEN"
WORKDIR = REMOTE_DIR
"""Where jobs (bundle, worker files, model files) live unless ``--workdir`` says otherwise: the same
folder an ssh backend uses by default, so a host has one Potato folder however its agent started."""
POLL_WAIT_S = LONG_POLL_MAX_S
"""How long one ``jobs/next`` may wait on the server for a job (a long poll)."""
EXIT_TOKEN = 3


class AgentError(PotatoError):
    """The agent cannot go on; the message says why and what to do."""

    exit_code = 1


class TokenError(AgentError):
    """No token, or the server rejects it (unknown, or replaced by registering again)."""

    exit_code = EXIT_TOKEN


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
    p.add_argument("--session", nargs="?", const="", default=None, metavar="HOST", help=argparse.SUPPRESS)
    p.add_argument("--poll-wait", type=float, default=POLL_WAIT_S, help=argparse.SUPPRESS)
    return p
