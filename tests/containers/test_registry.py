"""The images as users receive them: pulled from a registry onto an engine that never built them, run
the way docs/containers.md says (issue 19).

scripts/containers pushes the three images (tagged with the package's version) to a real registry on
loopback (Debian's docker-registry) and starts a second dockerd whose storage starts empty; it sets
``POTATO_REGISTRY`` and ``POTATO_PULL_DOCKER_HOST``. The agent then runs in a network namespace of its
own: a veth pair to this machine is its only link, it has no route anywhere else, and its input
filter drops every connection that it did not open itself. It trains a run with only the token and the
server's address: the "behind NAT, outbound connections only" claim, shown rather than asserted.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests

import potato
from tests.harness.agents import register
from tests.harness.images import agent_container, docker, project_copy
from tests.harness.runs import H, TERMINAL, label_all, start, wait
from tests.harness.machines import answers
from tests.harness.servers import ServerProcess, free_port

REGISTRY = os.environ.get("POTATO_REGISTRY", "")
PULL_HOST = os.environ.get("POTATO_PULL_DOCKER_HOST", "")
VERSION = potato.__version__
pytestmark = [pytest.mark.containers,
              pytest.mark.skipif(not (REGISTRY and PULL_HOST), reason="run by scripts/containers (a registry and a "
                                                                       "second engine)")]
IMAGES = ("potato-server", "potato-agent", "potato-worker-cuda")
# Only the input hook is filtered: the agent's own connections (and their answers) pass, nothing new comes in.
INBOUND_FILTER = """table inet potato_agent {
  chain inbound { type filter hook input priority 0; policy drop; iif "lo" accept; ct state established,related accept; }
}
"""


def pulled(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """docker on the second engine (the host that pulls)."""
    return docker(*args, check=check, timeout=timeout, host=PULL_HOST)


def image(name: str) -> str:
    return f"{REGISTRY}/{name}:{VERSION}"


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{' '.join(argv)}: {out.stdout}{out.stderr}"
    return out


@pytest.fixture(scope="module")
def images() -> dict[str, str]:
    """Each image pulled from the registry onto the empty engine."""
    out = {}
    for name in IMAGES:
        pulled("pull", "-q", image(name))
        out[name] = image(name)
    return out


@pytest.fixture
def link() -> Iterator[tuple[str, str, str]]:
    """A veth pair: (this side's name, the agent's side's name, this side's address); the agent's side
    is moved into the container's namespace by the test."""
    n = random.randrange(1, 250)
    here, there = f"pv{os.getpid() % 10000}h{n}", f"pv{os.getpid() % 10000}c{n}"
    run("ip", "link", "add", here, "type", "veth", "peer", "name", there)
    run("ip", "addr", "add", f"10.231.{n}.1/30", "dev", here)
    run("ip", "link", "set", here, "up")
    try:
        yield here, there, f"10.231.{n}.1"
    finally:
        subprocess.run(["ip", "link", "del", here], capture_output=True)


def test_the_empty_engine_pulls_each_image_with_its_version(images: dict[str, str]) -> None:
    for name, ref in images.items():
        labels = json.loads(pulled("image", "inspect", ref).stdout)[0]["Config"]["Labels"]
        assert labels["org.opencontainers.image.version"] == VERSION, (name, labels)
        assert labels["org.opencontainers.image.title"] == name
    # Nothing else is on that engine: what runs below came from the registry.
    listed = pulled("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    assert sorted(listed) == sorted(images.values())


def test_the_pulled_server_serves_the_example_as_the_docs_run_it(images: dict[str, str], tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    port = free_port()
    name = f"potato-pulled-server-{port}"
    try:
        pulled("run", "-d", "--name", name, "--network", "host", "-e", f"POTATO_PORT={port}", "-v",
               f"{project}:/project", images["potato-server"])
        answers(f"http://127.0.0.1:{port}/healthz", timeout=90)
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()["version"] == VERSION
    finally:
        pulled("rm", "-f", name, check=False)


def test_the_pulled_agent_trains_from_a_namespace_that_reaches_only_the_server(
        images: dict[str, str], make_project: Callable[..., Path], link: tuple[str, str, str]) -> None:
    here, there, address = link
    config = make_project(40, model_training={
        "enabled": True, "grace_seconds": 2,
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
        "backends": {"lab": {"type": "agent"}}})
    srv = ServerProcess(config, extra_args=["--host", address])
    srv.url = f"http://{address}:{srv.port}"  # it listens on the link's address only
    srv.start()
    name = f"potato-pulled-agent-{srv.port}"
    try:
        label_all(srv, 30)
        _, token = register(config, "lab")
        # As docs/containers.md runs it, with no network but the test's link. It keeps running after the
        # job, as there: when its namespace goes, the link goes with it.
        agent_container(name, images["potato-agent"], srv.url, token, "--network", "none", once=False, host=PULL_HOST)
        pid = pulled("inspect", "-f", "{{.State.Pid}}", name).stdout.strip()
        netns = ["nsenter", "-t", pid, "-n"]
        # The filter goes on before the link comes up: a connection already open when conntrack starts
        # would look new to it, and its answers would be dropped.
        run("ip", "link", "set", there, "netns", pid)
        subprocess.run([*netns, "nft", "-f", "-"], input=INBOUND_FILTER, text=True, check=True, timeout=30)
        run(*netns, "ip", "addr", "add", f"{address[:-1]}2/30", "dev", there)
        run(*netns, "ip", "link", "set", there, "up")

        # Only the link's /30 is routed: any other address is unreachable from inside.
        routes = run(*netns, "ip", "route").stdout
        assert "default" not in routes and routes.strip().startswith(f"{address[:-1]}0/30"), routes
        assert run(*netns, "ip", "-o", "addr").stdout.count("inet ") == 2  # lo and the link
        probe = subprocess.run([*netns, "python3", "-c", "import socket; socket.create_connection(('1.1.1.1', 443), 3)"],
                               capture_output=True, text=True, timeout=30)
        assert probe.returncode != 0 and "unreachable" in probe.stderr.lower(), probe.stderr

        run_ = start(srv, schemas=["sentiment"], backend="lab")  # the default trainer: scikit-learn is in the image
        wait(srv, run_["id"], TERMINAL | {"running", "copying"}, timeout=180)
        # While it trains: the agent listens on nothing, and a connection from outside is dropped.
        listening = run(*netns, "ss", "-Htlnu").stdout.strip()
        assert listening == "", listening
        knock = subprocess.run(["python3", "-c", f"import socket; socket.create_connection(('{address[:-1]}2', 22), 2)"],
                               capture_output=True, text=True, timeout=30)
        assert knock.returncode != 0 and "timed out" in knock.stderr, knock.stderr
        done = wait(srv, run_["id"], TERMINAL, timeout=240)
        logs = pulled("logs", name, check=False).stdout + pulled("logs", name, check=False).stderr
        assert done["state"] == "succeeded", (done, logs)
        assert done["trainer"] == "sklearn-text-classification"
        export = requests.get(f"{srv.url}/admin/training/api/runs/{run_['id']}/suggestions", headers=H, timeout=10)
        assert export.json()["count"] == 40
        assert token not in logs
        agents = requests.get(f"{srv.url}/admin/training/api/agents", headers=H, timeout=10).json()["agents"]
        assert agents[0]["agent"]["version"] == VERSION
    finally:
        pulled("rm", "-f", name, check=False)
        srv.stop()
