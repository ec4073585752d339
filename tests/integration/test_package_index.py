"""The release the way users receive it: built, checked, uploaded to a real package index, and installed
from it in fresh venvs exactly as the docs write the commands (issue 19).

The index is pypiserver on loopback, put in front of the normal index as a user's pip.conf would
(index-url ours, extra-index-url PyPI for the dependencies). On PyPI "potato-annotation" is the released
upstream Potato 2.12.1, whose `potato` has no `training` command: every install here must get this one.
- Python 3.8, the training machine: `pip install "potato-annotation[train-sklearn]"`; no Flask comes
  with it; its agent connects to a server and trains the default trainer.
- the newest Python, the annotation server: `pip install "potato-annotation[server]"`; `potato start`
  serves the example project under gunicorn and an annotator signs in.
- Python 3.11, the tutorial's own line for a GPU machine: `pip install "potato-annotation[train-text]"`
  (torch pinned to the CPU build on this disk, as a CPU-only machine would); the hf trainer's imports
  resolve.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests
import yaml

import potato
from tests.harness.agents import register
from tests.harness.agentsetup import agent_config
from tests.harness.runs import TERMINAL, label_all, start, wait
from tests.harness.machines import PYENV, Machine, answers, stop
from tests.harness.servers import ServerProcess, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_INDEX = "https://pypi.org/simple/"


def pyenv_python(minor: str) -> Path:
    found = sorted(PYENV.glob(f"{minor}.*/bin/python{minor}"))
    if not found:
        pytest.skip(f"no Python {minor} under {PYENV}")
    return found[-1]


def newest_python() -> Path:
    found = [p for p in PYENV.glob("3.*/bin/python3.*") if p.name[8:].isdigit()]  # python3.NN
    found.sort(key=lambda p: int(p.name[8:]))
    if not found:
        pytest.skip(f"no Python under {PYENV}")
    return found[-1]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A package index holding this release, uploaded with twine; its /simple/ URL."""
    tmp = tmp_path_factory.mktemp("index")
    dist, packages = tmp / "dist", tmp / "packages"
    packages.mkdir()
    built = subprocess.run([sys.executable, str(ROOT / "scripts" / "release"), "build", "--outdir", str(dist)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    port = free_port()
    with (tmp / "index.log").open("wb") as out:
        server = subprocess.Popen([str(Path(sys.executable).parent / "pypi-server"), "run", "-i", "127.0.0.1", "-p",
                                   str(port), "-a", ".", "-P", ".", "--disable-fallback", str(packages)],
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        answers(url + "/health")
        # Uploads are open on this loopback index; twine still needs a name and password (none is a secret).
        env = dict(os.environ, TWINE_USERNAME="ci", TWINE_PASSWORD="ci", TWINE_NON_INTERACTIVE="1")
        uploaded = subprocess.run([sys.executable, "-m", "twine", "upload", "--repository-url", url + "/",
                                   *map(str, sorted(dist.iterdir()))], env=env, capture_output=True, text=True,
                                  timeout=120)
        assert uploaded.returncode == 0, uploaded.stdout + uploaded.stderr
        listed = requests.get(f"{url}/simple/potato-annotation/", timeout=10).text
        assert f"potato_annotation-{potato.__version__}-py3-none-any.whl" in listed
        yield f"{url}/simple/"
    finally:
        stop(server)


def fresh_machine(tmp_path: Path, python: Path, index_url: str) -> Machine:
    """A venv of ``python`` with its own HOME, pip pointed at our index in front of the public one."""
    machine = Machine.make(tmp_path / f"machine-{python.name}", python)
    machine.env.update(PIP_INDEX_URL=index_url, PIP_EXTRA_INDEX_URL=PUBLIC_INDEX)
    return machine


def assert_ours(machine: Machine) -> None:
    shown = machine.sh("potato --version && potato training --help", 60)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert shown.stdout.startswith(f"potato, version {potato.__version__}\n") and "agent" in shown.stdout


def test_the_training_machine_on_python_3_8_installs_this_potato_from_the_index_and_trains(
        index: str, tmp_path: Path, make_project: Callable[..., Path]) -> None:
    machine = fresh_machine(tmp_path, pyenv_python("3.8"), index)
    done = machine.sh('pip install "potato-annotation[train-sklearn]"')
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert_ours(machine)
    assert machine.sh("python -m pip show flask", 60).returncode != 0
    config_path = make_project(40, **agent_config())
    srv = ServerProcess(config_path).start()
    agent = None
    try:
        label_all(srv, 30)
        _, token = register(config_path, "lab")
        agent = machine.start(f"export POTATO_TRAINING_TOKEN={token}\n"
                              f"exec potato training agent --server {srv.url} --backend lab --once "
                              f"--workdir {machine.root / 'work'}\n", machine.root / "agent.out")
        run = start(srv, schemas=["sentiment"], backend="lab")
        finished = wait(srv, run["id"], TERMINAL, timeout=180)
        assert finished["state"] == "succeeded", (finished, (machine.root / "agent.out").read_text(errors="replace"))
        agent.wait(60)
        assert agent.returncode == 0
    finally:
        stop(agent)
        srv.stop()


def test_the_server_on_the_newest_python_installs_from_the_index_and_serves(index: str, tmp_path: Path) -> None:
    machine = fresh_machine(tmp_path, newest_python(), index)
    done = machine.sh('pip install "potato-annotation[server]"')
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert_ours(machine)
    # No checkout here: the example project comes from the installed package, as the docs say.
    made = machine.sh("potato init reviews", 60)
    assert made.returncode == 0, made.stdout + made.stderr
    assert "Start it:  potato start reviews/config.yaml" in made.stdout
    # [server] alone brings no trainer: init says what the example's runs on this machine need
    assert "lacks scikit-learn" in made.stdout and "[train-sklearn]" in made.stdout
    project = machine.root / "reviews"
    admin_key = yaml.safe_load((project / "config.yaml").read_text(encoding="utf-8"))["admin_api_key"]
    port = free_port()
    server = machine.start(f"cd {project}\nexec potato start config.yaml -p {port}\n", machine.root / "server.out")
    url = f"http://127.0.0.1:{port}"
    try:
        answers(url + "/healthz")
        annotator = requests.Session()
        assert annotator.post(url + "/login", data={"name": "first-annotator"}, timeout=10).ok
        page = annotator.get(url + "/annotate", timeout=10)
        assert page.status_code == 200 and "Is this review positive or negative?" in page.text
        wheel = requests.get(url + "/training/agent/v1/package/", timeout=10).json()
        assert wheel["version"] == potato.__version__
        assert requests.get(wheel["url"], timeout=30).status_code == 200  # it hands its agents what it runs
        assert requests.get(url + "/admin/training/api/runs", headers={"X-API-Key": admin_key}, timeout=10).ok
    finally:
        stop(server, 60)


def test_the_tutorials_train_text_line_installs_this_potato_with_the_hf_trainers_packages(
        index: str, tmp_path: Path) -> None:
    machine = fresh_machine(tmp_path, pyenv_python("3.11"), index)
    # A CPU-only machine pins the CPU torch build (this disk has it); the command is the tutorial's.
    (machine.root / "cpu-torch.txt").write_text("torch==2.13.0\n")
    machine.env["PIP_CONSTRAINT"] = str(machine.root / "cpu-torch.txt")
    done = machine.sh('pip install "potato-annotation[train-text]"', timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert_ours(machine)
    imports = machine.sh("python -c \"from potato.training.trainers import get_trainer; "
                         "get_trainer('hf-text-classification').check_imports({'lora': True}); print('ok')\"", 300)
    assert imports.stdout.strip() == "ok", imports.stdout + imports.stderr
