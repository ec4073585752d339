"""The real single-node SLURM cluster the slurm backend's tests submit to (``scripts/test-infra start``).

munged + slurmctld + slurmd (Debian's slurm-wlm 22.05) beside the loopback sshd: the ``trainer``
account logs in over ssh to "the login node" and submits there; the job runs on the same machine
(the node ``hostname -s``), which shares every folder with the login node, as shared storage would.
KillWait is 10 s and DefMemPerCPU 1000 MB (see the script), MinJobAge 300 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

import pytest

from tests.sshd import ROOT, TC_DIR, SshHost

SLURM_CONF = str(TC_DIR / "etc" / "slurm.conf")


@dataclass(frozen=True)
class Cluster:
    login: SshHost
    remote_dir: str = "~/potato-slurm"

    def backend(self, **extra: Any) -> dict[str, Any]:
        """A slurm backend on this cluster: SLURM_CONF through ``env`` (as PATH would be on a real one),
        squeue every second so tests see queue states quickly."""
        body: dict[str, Any] = {
            "type": "slurm", "host": self.login.host, "port": self.login.port, "user": self.login.user,
            "identity_file": self.login.identity_file, "python": self.login.python, "remote_dir": self.remote_dir,
            "poll_interval_s": 1, "env": {"SLURM_CONF": SLURM_CONF},
        }
        body.update(extra)
        return body

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        """A command on the login node as the trainer, with SLURM_CONF set."""
        return self.login.run(f"export SLURM_CONF={SLURM_CONF}; {command}")

    def jobs(self) -> list[str]:
        """The trainer's jobs SLURM still lists (queued, running, completing)."""
        return self.run("squeue -h -u trainer -o '%i %T %j'").stdout.split("\n")[:-1]


def start_cluster() -> Cluster:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None or shutil.which("munged") is None:
        pytest.fail("The slurm backend's tests need a real SLURM: as root, `apt-get install slurm-wlm munge "
                    "openssh-server` (.ci/run does), then they start it with scripts/test-infra start.")
    out = subprocess.run([str(ROOT / "scripts" / "test-infra"), "start"], capture_output=True, text=True, timeout=180)
    if out.returncode != 0:
        pytest.fail(f"scripts/test-infra start failed:\n{out.stdout}\n{out.stderr}")
    cluster = Cluster(SshHost())
    cluster.run("scancel -u trainer; rm -rf ~/potato-slurm /tmp/potato-2*")  # each test session starts clean
    return cluster
