"""The test rig as containers: a training host and a two-node SLURM cluster that any machine with Docker
can run (``scripts/test-infra start --containers``), beside the host rig's daemons.

One image (tests/rig/Dockerfile), four containers per rig instance: ``NAME-host`` (sshd: the ssh
backend's training host), ``NAME-login`` (sshd, slurmctld), ``NAME-c1`` and ``NAME-c2`` (slurmd). They
share the machine's network stack, so what the server under test reaches at 127.0.0.1 the login node
reaches too (an agent there talks to the server as the host rig's does); each instance takes free ports
of its own, its own accounts (inside its containers), its own volumes (``NAME-home``: the cluster's
shared storage, mounted as /home on the login and compute nodes; /tmp is each node's own) and its own
state folder (``/tmp/NAME``: the ssh key and rig.json, which the tests read through
``POTATO_TEST_RIG``). Two instances, or an instance and the host rig, do not meet.

Usage: python3 tests/rig/containers.py start|stop|status [--name NAME]   (as scripts/test-infra does)
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "potato-rig:dev"
NODES = ("c1", "c2")
DOCKER = os.environ.get("TC_DOCKER") or ("/usr/bin/docker" if Path("/usr/bin/docker").exists() else "docker")
"""The docker CLI: a distribution's /usr/bin/docker first (this project's CI machine has a second,
newer CLI on PATH that lacks buildx, so it cannot build with BuildKit)."""
PYTHON38_PREFIXES = sorted(Path("/root/.pyenv/versions").glob("3.8.*"))
"""An installed Python 3.8 on this machine, copied into the image instead of building one from source."""


class RigError(Exception):
    """The rig cannot start; the message says what to do."""


def state_dir(name: str) -> Path:
    return Path(tempfile.gettempdir()) / name


def docker(*args: str, check: bool = True, timeout: float = 600, **kw: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout, **kw)  # type: ignore[call-overload]
    if check and out.returncode != 0:
        raise RigError(f"docker {' '.join(args[:3])} failed: {out.stderr.strip() or out.stdout.strip()}")
    return out


def free_ports(n: int) -> List[int]:
    """Ports free on 127.0.0.1 now (held open together, so the n are distinct)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def build(base: Optional[str]) -> None:
    """The rig image. The build context is a folder of its own: the entry script, and the Python 3.8
    prefix where this machine has one (python.org's source is built otherwise)."""
    with tempfile.TemporaryDirectory(prefix="potato-rig-build-") as tmp:
        context = Path(tmp)
        (context / "tests" / "rig").mkdir(parents=True)
        shutil.copy2(ROOT / "tests" / "rig" / "entry", context / "tests" / "rig" / "entry")
        args = ["build", "-q", "--network", "host", "-f", str(ROOT / "tests" / "rig" / "Dockerfile"), "-t", IMAGE]
        if base:
            args += ["--build-arg", f"BASE_IMAGE={base}"]
        if PYTHON38_PREFIXES:
            shutil.copytree(PYTHON38_PREFIXES[-1], context / "python3.8", symlinks=True,
                            ignore=shutil.ignore_patterns("test", "__pycache__", "site-packages"))
            (context / "python3.8" / "lib" / "python3.8" / "site-packages").mkdir()
            args += ["--build-arg", "PYTHON38=prebuilt"]
        docker(*args, str(context), env={**os.environ, "DOCKER_BUILDKIT": "1"}, timeout=1800)


def run_container(rig: str, role: str, hostname: str, env: Dict[str, str], volumes: List[str]) -> None:
    # The machine's network and PID namespaces: the server under test reaches sshd on 127.0.0.1 and an
    # agent on the login node reaches the server there, and tests see a run's processes in /proc, as
    # on the host rig. SYS_PTRACE: slurmstepd reads its job's /proc to enforce --mem (OverMemoryKill).
    argv = ["run", "-d", "--name", f"{rig}-{hostname}", "--hostname", hostname, "--network", "host",
            "--pid", "host", "--cap-add", "SYS_PTRACE", "--label", f"potato-rig={rig}"]
    for key, value in env.items():
        argv += ["-e", f"{key}={value}"]
    for volume in volumes:
        argv += ["-v", volume]
    docker(*argv, IMAGE, role)


def wait_until(what: str, ok: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise RigError(f"timed out waiting for {what}")
        time.sleep(0.3)


def ssh_ok(key: Path, port: int, user: str) -> bool:
    return subprocess.run(["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=5",
                           "-i", str(key), "-p", str(port), "-l", user, "127.0.0.1", "true"],
                          capture_output=True, timeout=30).returncode == 0


def host_key(container: str) -> str:
    """The container's sshd host key ("TYPE BASE64"), once its entry script has made it."""
    path = "/etc/ssh/ssh_host_ed25519_key.pub"
    wait_until(f"{container}'s host key",
               lambda: docker("exec", container, "test", "-s", path, check=False).returncode == 0)
    return " ".join(docker("exec", container, "cat", path).stdout.split()[:2])


def known_hosts(entries: Dict[int, str], add: bool) -> None:
    """The server under test runs ssh as this machine's user, with no options of ours: it must trust the
    rig's host keys as a user would after a first connect. Lines for these ports only."""
    home = Path.home() / ".ssh"
    home.mkdir(mode=0o700, exist_ok=True)
    path = home / "known_hosts"
    prefixes = tuple(f"[127.0.0.1]:{port} " for port in entries)
    lines = [line for line in path.read_text().splitlines() if not line.startswith(prefixes)] if path.exists() else []
    if add:
        lines += [f"[127.0.0.1]:{port} {key}" for port, key in entries.items()]
    path.write_text("".join(line + "\n" for line in lines))
    path.chmod(0o600)


def start(name: str, base: Optional[str]) -> Path:
    state = state_dir(name)
    stop(name)  # what an earlier start of this name left, if anything
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = state / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
                   check=True, capture_output=True)
    build(base)
    host_ssh, login_ssh, ctld, *slurmds = free_ports(3 + len(NODES))
    public = (state / "id_ed25519.pub").read_text().strip()
    common = {"RIG_AUTHORIZED_KEY": public}
    home, shared = f"{name}-home", f"{name}-rig"
    for volume in (home, shared):
        docker("volume", "create", "--label", f"potato-rig={name}", volume)
    nodes = " ".join(f"{node}:{port}" for node, port in zip(NODES, slurmds))
    cluster_env = {**common, "RIG_CTLD_PORT": str(ctld), "RIG_NODES": nodes}
    run_container(name, "host", "host", {**common, "RIG_SSH_PORT": str(host_ssh)}, [])
    run_container(name, "login", "login", {**cluster_env, "RIG_SSH_PORT": str(login_ssh)},
                  [f"{home}:/home", f"{shared}:/rig"])
    for node in NODES:
        run_container(name, "node", node, cluster_env, [f"{home}:/home", f"{shared}:/rig"])
    keys = {}
    for container, port in ((f"{name}-host", host_ssh), (f"{name}-login", login_ssh)):
        keys[port] = host_key(container)
    known_hosts(keys, add=True)
    for port in (host_ssh, login_ssh):
        wait_until(f"sshd on 127.0.0.1:{port}", functools.partial(ssh_ok, key, port, "trainer"))
    wait_until("the compute nodes to be idle", lambda: docker(
        "exec", f"{name}-login", "sinfo", "-h", "-o", "%t %D", check=False).stdout.split() == ["idle", str(len(NODES))])
    rig = {
        "kind": "containers", "name": name, "docker_host": os.environ.get("DOCKER_HOST", ""),
        "identity_file": str(key), "known_host_ports": [host_ssh, login_ssh],
        "ssh": {"host": "127.0.0.1", "port": host_ssh, "user": "trainer", "python": "/usr/bin/python3",
                "python38": "/usr/local/bin/python3.8", "container": f"{name}-host"},
        "cluster": {"host": "127.0.0.1", "port": login_ssh, "user": "trainer", "python": "/usr/bin/python3",
                    "container": f"{name}-login", "slurm_conf": "/etc/slurm/slurm.conf",
                    "nodes": {node: f"{name}-{node}" for node in NODES}},
    }
    (state / "rig.json").write_text(json.dumps(rig, indent=2) + "\n")
    return state / "rig.json"


def stop(name: str) -> None:
    state = state_dir(name)
    ids = docker("ps", "-aq", "--filter", f"label=potato-rig={name}", check=False).stdout.split()
    if ids:
        docker("rm", "-f", *ids, check=False)
    volumes = docker("volume", "ls", "-q", "--filter", f"label=potato-rig={name}", check=False).stdout.split()
    if volumes:
        docker("volume", "rm", "-f", *volumes, check=False)
    try:
        ports = json.loads((state / "rig.json").read_text())["known_host_ports"]
    except (OSError, ValueError, KeyError):
        ports = []
    known_hosts({port: "" for port in ports}, add=False)
    shutil.rmtree(state, ignore_errors=True)


def status(name: str) -> str:
    return docker("ps", "-a", "--filter", f"label=potato-rig={name}", "--format", "{{.Names}} {{.Status}}").stdout


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/test-infra ... --containers")
    parser.add_argument("command", choices=["start", "stop", "status"])
    parser.add_argument("--name", default=os.environ.get("TC_RIG_NAME", "potato-rig"),
                        help="the rig instance (its containers, volumes and /tmp/NAME); two names never meet")
    parser.add_argument("--base-image", default=os.environ.get("TC_RIG_BASE_IMAGE"),
                        help="the image to build on (default debian:bookworm-slim)")
    args = parser.parse_args(argv)
    try:
        if docker("version", "--format", "{{.Server.Version}}", check=False).returncode != 0:
            raise RigError("no Docker engine answers: start Docker (or, as root on Debian, `eval "
                           "\"$(scripts/containers engine | tail -1)\"` for a private one), then run this again")
        if args.command == "start":
            rig = start(args.name, args.base_image)
            print(f"export POTATO_TEST_RIG={rig}")
        elif args.command == "stop":
            stop(args.name)
        else:
            print(status(args.name), end="")
    except RigError as exc:
        print(f"test rig: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
