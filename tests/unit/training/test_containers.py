"""The worker in a container (D2): the docker and apptainer command lines, and a worker started
through apptainer's documented CLI (a stand-in that checks and records the arguments, then runs the
command: apptainer is not installable here; docker runs for real in tests/containers)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from potato.training.agent import startup as agent
from potato.training.launch.containers import ContainerSpec, Shell, shell_line, worker_argv
from potato.training.slurm.settings import SlurmConfigError, SlurmSettings
from potato.training.launch.supervise import Supervisor, WorkerProcess
from tests.harness.jobdirs import review_job

DOCKER = ContainerSpec("docker", "potato-worker-cuda", ("--shm-size=1g",))
APPTAINER = ContainerSpec("apptainer", "/shared/images/potato-worker.sif")


def test_docker_gets_the_chosen_gpus_the_caller_s_user_a_name_and_the_shared_folder() -> None:
    argv = worker_argv(DOCKER, "/data/p/jobs/r1", "/data/p/code/h", "/data/p", user="1001:1001", gpus="1",
                       name="potato-worker-r1", env={"OMP_NUM_THREADS": "8"})
    assert argv == ["docker", "run", "--rm", "--init", "--name", "potato-worker-r1", "--user", "1001:1001",
                    "--gpus", "device=1", "-e", "PYTHONPATH=/data/p/code/h", "-e", "PYTHONUNBUFFERED=1",
                    "-e", "OMP_NUM_THREADS=8", "-v", "/data/p:/data/p", "-w", "/data/p/jobs/r1", "--shm-size=1g",
                    "potato-worker-cuda", "python3", "-m", "potato.training.worker", "/data/p/jobs/r1"]
    assert "--gpus" not in worker_argv(DOCKER, "/j", "/c", "/s", gpus="")  # gpus: none


def test_apptainer_sees_only_the_variables_it_is_given() -> None:
    argv = worker_argv(APPTAINER, "/shared/p/jobs/r1", "/shared/p/code/h", "/shared/p", gpus="0,1")
    assert argv[:4] == ["apptainer", "exec", "--nv", "--cleanenv"]
    assert "CUDA_VISIBLE_DEVICES=0,1" in argv and "PYTHONPATH=/shared/p/code/h" in argv
    assert argv[-5:] == ["/shared/images/potato-worker.sif", "python3", "-m", "potato.training.worker",
                         "/shared/p/jobs/r1"]


def test_a_hostile_path_stays_one_word_in_the_shell_line() -> None:
    line = shell_line(worker_argv(DOCKER, "/d/it's; rm -rf ~/j", "/d/c", "/d", user=Shell('"$(id -u)"')))
    assert "'/d/it'\"'\"'s; rm -rf ~/j'" in line and ' --user "$(id -u)" ' in line


def test_unknown_runtime_is_refused() -> None:
    with pytest.raises(ValueError, match="container runtime must be one of apptainer, docker"):
        worker_argv(ContainerSpec("podman", "x"), "/j", "/c", "/s")


HOSTILE = "it's a \"worker\" image; rm -rf ~ $(id)"


@pytest.mark.parametrize("runtime", ["apptainer", "docker"])
def test_one_container_spec_round_trips_through_slurm_json_and_the_agent_s_options(runtime: str) -> None:
    body = {"runtime": runtime, "image": HOSTILE, "options": ["--bind=/a b:/a b", HOSTILE]}
    spec = ContainerSpec.from_json(body)
    assert spec == ContainerSpec(runtime, HOSTILE, ("--bind=/a b:/a b", HOSTILE))
    assert spec.to_json() == body
    slurm_json = {"partition": "gpu", "poll_interval_s": 5.0, "container": body}
    assert json.dumps(SlurmSettings.from_json(slurm_json).to_json()) == json.dumps(slurm_json)
    words = shlex.split(" ".join(spec.agent_args()))  # the remote shell's split of the agent's command line
    args = agent.parser().parse_args(["--server", "http://s", "--backend", "b", *words])
    assert agent.container_settings(args, slurm=False) == spec


@pytest.mark.parametrize("bad", [{"runtime": "podman", "image": "x"}, {"runtime": "docker"}, "docker",
                                 {"runtime": "docker", "image": "x", "options": "--nv"}])
def test_slurm_json_shows_the_container_s_form(bad: object) -> None:
    with pytest.raises(SlurmConfigError) as raised:
        SlurmSettings.from_json({"container": bad})
    assert str(raised.value) == 'container must be {"runtime": "apptainer" or "docker", "image": ...}'


def test_a_worker_runs_through_apptainer_s_documented_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(Path(__file__).with_name("apptainer_standin.py"), bin_dir / "apptainer")
    (bin_dir / "apptainer").chmod(0o755)
    log = tmp_path / "apptainer.log"
    image = tmp_path / "potato-worker.sif"
    image.write_bytes(b"SIF")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("APPTAINER_STANDIN_LOG", str(log))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    shared = tmp_path / "shared"
    job = review_job(shared / "jobs" / "r1", "noop")
    worker = WorkerProcess.start(job, sys.executable, 2, ContainerSpec("apptainer", str(image)), shared)
    ending = Supervisor(worker, lambda events: None, grace_seconds=5).run()
    assert ending.exit_code == 0, (job / "worker.out").read_text()
    assert ending.result is not None and ending.result["status"] == "succeeded"
    args = json.loads(log.read_text().splitlines()[0])
    assert args[:4] == ["exec", "--nv", "--cleanenv", "--env"]
    assert args[args.index("--bind") + 1] == f"{shared}:{shared}"
    assert "CUDA_VISIBLE_DEVICES=0" in args and "OMP_NUM_THREADS=2" in args
    assert not any(a.startswith("POTATO_") for a in args)
