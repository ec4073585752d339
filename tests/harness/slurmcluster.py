"""The real SLURM cluster the slurm backend's tests submit to, behind the rig's login node.

Two rigs, one entry (:func:`start_cluster`), so no test knows which it runs against:

* the host rig (default; ``scripts/test-infra start``): munged + slurmctld + slurmd (Debian's
  slurm-wlm 22.05) beside the loopback sshd. The ``trainer`` account logs in over ssh to "the login
  node" and submits there; the job runs on the same machine (the one node, ``hostname -s``), which
  shares every folder with the login node, as shared storage would. slurm.conf is the rig's own, so
  SLURM_CONF goes to the backend through ``env``.
* the container rig (``POTATO_TEST_RIG``; ``scripts/test-infra start --containers``): a login node
  (sshd, slurmctld) and two compute nodes (slurmd), /home shared between all three (a volume), /tmp
  each node's own; slurm.conf where SLURM looks by default.

Both: KillWait 10 s, DefMemPerCPU 1000 MB, MinJobAge 300 s.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest

from tests.harness.runs import log_of
from tests.harness.servers import ServerProcess
from tests.harness.sshd import ROOT, TC_DIR, SshHost, container_rig, docker_cli, docker_env, hold_rig, rig_host
from tests.harness.waiting import wait_until


@dataclass(frozen=True)
class Cluster:
    login: SshHost
    remote_dir: str = "~/potato-slurm"
    slurm_conf: str = str(TC_DIR / "etc" / "slurm.conf")
    nodes: Tuple[str, ...] = ()
    """The compute nodes' names, as SLURM knows them."""
    node_containers: Dict[str, str] = dataclasses.field(default_factory=dict)
    """Each compute node's container (container rig only): a node can really go down."""

    def backend(self, **extra: Any) -> Dict[str, Any]:
        """A slurm backend on this cluster: SLURM_CONF through ``env`` (as PATH would be on a real one),
        squeue every second so tests see queue states quickly."""
        body: Dict[str, Any] = {
            "type": "slurm", "host": self.login.host, "port": self.login.port, "user": self.login.user,
            "identity_file": self.login.identity_file, "python": self.login.python, "remote_dir": self.remote_dir,
            "poll_interval_s": 1, "env": {"SLURM_CONF": self.slurm_conf},
        }
        body.update(extra)
        return body

    def run(self, command: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """A command on the login node as the trainer, with SLURM_CONF set."""
        return self.login.run(f"export SLURM_CONF={self.slurm_conf}; {command}", input=input)

    def jobs(self) -> list[str]:
        """The trainer's jobs SLURM still lists (queued, running, completing)."""
        return self.run("squeue -h -u trainer -o '%i %T %j'").stdout.split("\n")[:-1]

    def fill(self, seconds: int) -> str:
        """Submit a job that takes every compute node whole for ``seconds``; its id."""
        out = self.run(f"sbatch --parsable --exclusive -N {len(self.nodes)} -o /dev/null --wrap 'sleep {seconds}'")
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def node_down(self, node: str) -> None:
        """Power a compute node off (container rig): its slurmd and every job step there die at once."""
        subprocess.run([docker_cli(), "kill", self.node_containers[node]], check=True, capture_output=True,
                       timeout=60, env=docker_env())

    def node_up(self, node: str) -> None:
        """Boot it again; it returns to service (ReturnToService=2) once its slurmd registers."""
        subprocess.run([docker_cli(), "start", self.node_containers[node]], check=True, capture_output=True,
                       timeout=60, env=docker_env())
        self.run(f"for i in $(seq 120); do sinfo -h -n {node} -o %t | grep -qx idle && break; sleep 0.5; done")


def start_cluster(clean: bool = True) -> Cluster:
    """The rig's cluster, running; with ``clean``, the trainer's jobs and files of earlier sessions go."""
    rig = container_rig()
    if rig is not None:
        info = rig["cluster"]
        hold_rig(Path(rig["identity_file"]).parent)
        cluster = Cluster(rig_host(info), slurm_conf=info["slurm_conf"], nodes=tuple(info["nodes"]),
                          node_containers=dict(info["nodes"]))
        for node in cluster.nodes:  # a node an earlier test powered off
            if "down" in cluster.run(f"sinfo -h -n {node} -o %t").stdout or docker_state(info["nodes"][node]) != "true":
                cluster.node_up(node)
    else:
        if os.geteuid() != 0 or shutil.which("slurmctld") is None or shutil.which("munged") is None:
            pytest.fail("The slurm backend's tests need a real SLURM: as root, `apt-get install slurm-wlm munge "
                        "openssh-server` (.ci/run does), then they start it with scripts/test-infra start; or "
                        "containers: scripts/test-infra start --containers (tests/README.md).")
        out = subprocess.run([str(ROOT / "scripts" / "test-infra"), "start"], capture_output=True, text=True,
                             timeout=180)
        if out.returncode != 0:
            pytest.fail(f"scripts/test-infra start failed:\n{out.stdout}\n{out.stderr}")
        hold_rig(TC_DIR)
        node = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
        cluster = Cluster(SshHost(), nodes=(node,))
    if clean:
        cluster.run("scancel -u trainer; rm -rf ~/potato-slurm /tmp/potato-2*")
    return cluster


def docker_state(container: str) -> str:
    return subprocess.run([docker_cli(), "inspect", "-f", "{{.State.Running}}", container], capture_output=True,
                          text=True, timeout=60, env=docker_env()).stdout.strip()


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return start_cluster()


def slurm_config(cluster: Cluster, **settings: Any) -> Dict[str, Any]:
    return {"model_training": {
        "enabled": True,
        "grace_seconds": 2,
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
        "backends": {"cluster": cluster.backend(**settings)},
    }}


def slurm_job_id(srv: ServerProcess, run_id: str, timeout: float = 60) -> str:
    """The SLURM job id the run's log names once the agent submitted it."""
    found: list[str] = []

    def submitted() -> bool:
        for line in log_of(srv, run_id).splitlines():
            if "Submitted SLURM job " in line:
                found.append(line.split("Submitted SLURM job ", 1)[1].split(":", 1)[0])
                return True
        return False

    wait_until(submitted, timeout=timeout, what="the job's submission")
    return found[0]


def _check(config_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "potato", "training", "check", "cluster", str(config_path), *extra],
                          capture_output=True, text=True, timeout=120)
