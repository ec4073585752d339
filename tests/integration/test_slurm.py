"""The slurm backend against a real single-node SLURM over a real sshd (R24-R30, E8, E9): the agent
on the login node submits the worker with sbatch and follows it through the shared job dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict

import pytest
import requests

from tests.conftest import ADMIN_KEY
from tests.integration.test_ssh import log_of
from tests.integration.test_training_local import TERMINAL, start, wait
from tests.servers import ServerProcess
from tests.slurmcluster import Cluster, start_cluster

pytestmark = pytest.mark.integration
H = {"X-API-Key": ADMIN_KEY}


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


def run_dir(srv: ServerProcess, run_id: str) -> Path:
    return srv.config_path.parent / "annotation_output" / "training" / "runs" / run_id


def test_a_run_is_submitted_followed_through_the_queue_and_brings_predictions_and_the_model_back(
        cluster: Cluster, make_server: Callable[..., ServerProcess]) -> None:
    srv = make_server(slurm_config(cluster, mem="500M", time="00:10:00"))
    run = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"artifact_mb": 2, "sleep_s": 2})
    done = wait(srv, run["id"], TERMINAL, timeout=120)
    log = log_of(srv, run["id"])
    assert done["state"] == "succeeded", (done, log)
    assert "Python 3." in log and "runs the agent" in log  # the login node's Python (R28)
    assert "Submitted SLURM job " in log and "--time=00:10:00 --mem=500M" in log  # with the flags (R29)
    assert "SLURM job " in log and ": RUNNING on " in log  # each queue state change
    assert "Copied the model from 127.0.0.1: 2.1 MB" in log
    assert (run_dir(srv, run["id"]) / "artifacts" / "weights.bin").stat().st_size == 2 * 1024 * 1024
    export = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
    assert export["count"] == 40
    # The job dir is gone from the shared storage; the pushed code stays for the next run.
    assert cluster.run("ls ~/potato-slurm/jobs/; ls -d ~/potato-slurm/code/*").stdout.strip().startswith("/home/trainer/potato-slurm/code/")
