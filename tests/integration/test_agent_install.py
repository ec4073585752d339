"""A training machine with Python 3.8 and nothing of ours on it, set up by the commands `potato training
register` prints, run as printed (issue 19).

The tutorial's training machine was told `pip install "potato-annotation[train-text]"`, which installs the
released upstream Potato from the public index (no `training` command), and `--server
http://localhost:8000` for a server on another port. Here the machine is a fresh Python 3.8 venv with a
HOME of its own and no path to this checkout; the printed lines run in bash as they are, the agent
trains the default trainer there, and the server's run succeeds with its predictions written back.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest
import requests

import potato
from tests.harness.agents import register
from tests.conftest import ADMIN_KEY
from tests.harness.agentsetup import agent_config
from tests.harness.runs import TERMINAL, label_all, start, wait
from tests.harness.machines import PYTHON38, Machine, stop
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

@pytest.fixture(scope="module")
def python38() -> Path:
    if not PYTHON38:
        pytest.skip("no Python 3.8 under /root/.pyenv/versions (the training machine's interpreter)")
    return PYTHON38[-1]


def test_a_python_3_8_machine_installs_and_connects_an_agent_with_the_printed_commands(
        make_project: Callable[..., Path], tmp_path: Path, python38: Path) -> None:
    config_path = make_project(40, **agent_config())
    srv = ServerProcess(config_path).start()
    agent: subprocess.Popen[bytes] | None = None
    machine = Machine.make(tmp_path / "training-machine", python38)
    try:
        label_all(srv, 30)
        output, token = register(config_path, "lab")
        commands = [line.strip() for line in output.split("On the training machine:", 1)[1].splitlines()
                    if line.startswith("  ")]
        install, export, run_agent = commands
        assert install.startswith('pip install "potato-annotation[train-sklearn] @ http://127.0.0.1:')
        assert run_agent == f"potato training agent --server {srv.url} --backend lab"

        # 1. The install line, as printed: this server's Potato, of exactly its version.
        done = machine.sh(install, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        version = machine.sh("potato --version", timeout=60)
        assert version.stdout.strip() == f"potato, version {potato.__version__}"
        shown = machine.sh("python -m pip show flask", timeout=60)
        assert shown.returncode != 0, "Flask was installed on Python 3.8, where the server cannot run anyway"

        # The server itself does not run there, and says which Python it needs.
        refused = machine.sh(f"potato start {config_path}", timeout=60)
        assert refused.returncode == 1
        assert refused.stderr.startswith("Error: The annotation server needs Python 3.9 or newer; this is Python 3.8.")

        # 2. The next two lines, as printed: the agent connects and trains the default trainer there.
        agent = machine.start(f"{export}\nexec {run_agent} --workdir {machine.root / 'work'}\n",
                              machine.root / "agent.out")
        run = start(srv, schemas=["sentiment"], backend="lab")  # no trainer named: the default one
        finished = wait(srv, run["id"], TERMINAL, timeout=180)
        agent_out = (machine.root / "agent.out").read_text(errors="replace")
        assert finished["state"] == "succeeded", (finished, agent_out)
        assert finished["trainer"] == "sklearn-text-classification"
        assert "Python 3.8." in agent_out
        suggestions = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions",
                                   headers={"X-API-Key": ADMIN_KEY}, timeout=10).json()
        assert suggestions["count"] > 0
        # The agent's poll carries its version; the training page's agents list shows it.
        agents = requests.get(f"{srv.url}/admin/training/api/agents", headers={"X-API-Key": ADMIN_KEY}, timeout=10)
        assert agents.status_code == 200 and f'"version": "{potato.__version__}"' in agents.text.replace('":"', '": "')
        assert token not in agent_out
    finally:
        stop(agent)
        srv.stop()
        shutil.rmtree(machine.root / "work", ignore_errors=True)
