"""The benchmarks that train through the test rig (bench/ssh.py, bench/slurm.py) in quick mode.

They use the rig's ``trainer`` account like the ssh and SLURM tests, whose module fixtures clear that
account's run folders (/tmp/potato-2*, the agents' socket folders among them): CI once failed a
benchmark's run when a test module started beside it and removed its agent's socket. Through the rig's
own fixtures this module runs on the rig's worker, one module after another (tests/conftest.py), and
the rig is up and held by this session before a benchmark starts.
"""

from __future__ import annotations

import pytest

from tests.harness.benchmarks import ON_THE_RIG, runs_in_quick_mode
from tests.harness.slurmcluster import Cluster, start_cluster
from tests.harness.sshd import SshHost, container_rig, start_sshd

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def rig() -> tuple[SshHost, Cluster]:
    if container_rig() is not None:
        pytest.skip("bench/ssh.py and bench/slurm.py measure the host rig's sshd and SLURM (scripts/test-infra start)")
    return start_sshd(), start_cluster()


@pytest.mark.parametrize("name", ON_THE_RIG)
def test_the_benchmark_on_the_rig_runs_in_its_quick_mode(rig: tuple[SshHost, Cluster], name: str) -> None:
    runs_in_quick_mode(name)
