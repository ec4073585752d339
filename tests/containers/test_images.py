"""The three images, built by scripts/containers, run for real on a private dockerd (D1-D4).

Deselected unless ``POTATO_IMAGES`` names the tag the images were built with (scripts/containers
sets it and ``DOCKER_HOST``): the server image serves the example project and passes its healthcheck;
the agent image, given only the token and the server's address, completes a real run; the worker image
trains a bundle with scikit-learn. Everything runs on the host network (the engine has no bridge).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from tests.harness.agents import register, token_in
from tests.harness.images import DOCKER, ROOT, TAG, agent_container, docker, project_copy
from tests.harness.waiting import wait_until
from tests.harness.runs import H, TERMINAL, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.jobdirs import review_job

pytestmark = [pytest.mark.containers,
              pytest.mark.skipif(not TAG, reason="run by scripts/containers, which builds the images first")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def containers() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        docker("rm", "-f", name, check=False)


def project_from_the_image(tmp_path: Path) -> Path:
    """The example project as one who pulled the image (and has no checkout) makes it, as
    docs/containers.md says: an empty folder for the images' user, and `potato init` in the image."""
    project = tmp_path / "project"
    project.mkdir()
    os.chown(project, 10001, 10001)
    made = docker("run", "--rm", "--network", "none", "--entrypoint", "potato", "-v", f"{project}:/project",
                  f"potato-server:{TAG}", "init", "/project")
    assert "Start it:  potato start /project/config.yaml" in made.stdout
    assert (project / "config.yaml").stat().st_mode & 0o777 == 0o600 and (project / "data" / "reviews.json").is_file()
    return project


def test_the_server_image_serves_a_project_as_a_non_root_user_and_is_healthy(
        tmp_path: Path, containers: list[str]) -> None:
    project = project_from_the_image(tmp_path)
    port = free_port()
    name = f"potato-server-test-{port}"
    containers.append(name)
    docker("run", "-d", "--name", name, "--network", "host", "-v", f"{project}:/project", "-e", f"POTATO_PORT={port}",
           "--health-interval", "1s", "--health-start-period", "30s", f"potato-server:{TAG}")
    wait_until(lambda: _get(f"http://127.0.0.1:{port}/healthz") == 200, timeout=60, what="the server in the image")
    wait_until(lambda: docker("inspect", "-f", "{{.State.Health.Status}}", name).stdout.strip() == "healthy",
               timeout=30, what="docker to call the container healthy")
    assert requests.get(f"http://127.0.0.1:{port}/healthz").json()["ok"] is True
    page = requests.get(f"http://127.0.0.1:{port}/")
    assert page.status_code == 200 and "Review Sentiment" in page.text  # the annotators' sign-in
    top = docker("top", name, "-o", "pid,uid,args").stdout
    assert "gunicorn" in top or "potato" in top
    assert all(line.split()[1] == "10001" for line in top.splitlines()[1:]), top
    assert (project / "annotation_output").is_dir()  # it wrote its database into the mounted project
    inspect = json.loads(docker("inspect", f"potato-server:{TAG}").stdout)[0]["Config"]
    assert inspect["User"] == "10001" and inspect["Healthcheck"]["Test"][0] == "CMD"
    assert inspect["Labels"]["org.opencontainers.image.version"]


def test_the_server_image_refuses_a_bad_config_at_start(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    config = project / "config.yaml"
    config.write_text(config.read_text() + "\nmodel_training:\n  enabled: true\n  backend: nowhere\n")
    out = docker("run", "--rm", "--network", "host", "-v", f"{project}:/project", f"potato-server:{TAG}",
                 "--port", str(free_port()), "/project/config.yaml", check=False, timeout=120)
    assert out.returncode != 0
    assert "model_training.backend" in out.stdout + out.stderr


def _get(url: str) -> int:
    try:
        return requests.get(url, timeout=2).status_code
    except requests.RequestException:
        return 0


def test_the_agent_image_completes_a_run_with_only_the_token_and_the_address(
        make_project: Callable[..., Path], containers: list[str]) -> None:
    srv = ServerProcess(make_project(model_training={
        "enabled": True, "grace_seconds": 2,
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
        "backends": {"lab": {"type": "agent"}}})).start()
    try:
        from tests.harness.runs import label_all

        label_all(srv, 20)
        _, token = register(srv.config_path, "lab")
        name = f"potato-agent-test-{srv.port}"
        containers.append(name)
        agent_container(name, f"potato-agent:{TAG}", srv.url, token, "--network", "host")
        run = start(srv, trainer="noop", schemas=["sentiment"], backend="lab")
        done = wait(srv, run["id"], TERMINAL, timeout=90)
        logs = docker("logs", name).stdout
        assert done["state"] == "succeeded", (done, logs)
        export = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
        assert export["count"] == 40
        config = json.loads(docker("inspect", name).stdout)[0]
        assert token not in json.dumps(config["Args"]) + json.dumps(config["Config"]["Cmd"])
        assert token not in logs
    finally:
        srv.stop()


def test_a_gpu_trainer_on_the_slim_agent_image_names_the_image_that_has_it(
        make_project: Callable[..., Path], containers: list[str]) -> None:
    """The agent image trains the CPU trainers; a run of hf-text-classification there fails saying
    which image to use, never advising a pip install inside the container (issue 19)."""
    srv = ServerProcess(make_project(model_training={
        "enabled": True, "grace_seconds": 2, "backends": {"lab": {"type": "agent"}}})).start()
    try:
        from tests.harness.runs import label_all

        label_all(srv, 20)
        _, token = register(srv.config_path, "lab")
        name = f"potato-agent-hf-{srv.port}"
        containers.append(name)
        agent_container(name, f"potato-agent:{TAG}", srv.url, token, "--network", "host")
        run = start(srv, trainer="hf-text-classification", schemas=["sentiment"], backend="lab")
        done = wait(srv, run["id"], TERMINAL, timeout=90)
        assert (done["state"], done["reason"]) == ("failed", "import"), done
        assert done["message"] == (
            "Trainer 'hf-text-classification' could not be imported: no module named 'torch'; the image potato-agent "
            "has the CPU trainers only; run the agent on the GPU image instead (potato-agent built with "
            "--build-arg BASE_IMAGE=potato-worker-cuda, see docs/containers.md)")
    finally:
        srv.stop()


def test_the_gpu_agent_built_on_the_worker_image_trains_hf_text_classification(
        make_project: Callable[..., Path], containers: list[str], tmp_path: Path) -> None:
    """The GPU variant, built as docs/containers.md says (the agent's Dockerfile on the worker image):
    hf-text-classification trains in it (CI's worker image has the CPU torch; a small BERT made here
    stands in for a model on the machine, mounted read-only)."""
    from tests.harness.runs import label_all
    from tests.unit.training.tinybert import build_tiny_bert

    srv = ServerProcess(make_project(model_training={
        "enabled": True, "grace_seconds": 2, "backends": {"lab": {"type": "agent"}}})).start()
    try:
        label_all(srv, 40)
        texts = [item["text"] for item in json.loads((srv.config_path.parent / "data" / "reviews.json").read_text())]
        bert = build_tiny_bert(tmp_path / "bert", texts)
        for path in [bert, *bert.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        _, token = register(srv.config_path, "lab")
        name = f"potato-agent-gpu-{srv.port}"
        containers.append(name)
        agent_container(name, f"potato-agent-gpu:{TAG}", srv.url, token, "--network", "host",
                        "-v", f"{bert}:/models/bert:ro")
        run = start(srv, trainer="hf-text-classification", schemas=["sentiment"], backend="lab",
                    params={"base_model": "/models/bert", "epochs": 1, "batch_size": 16, "max_length": 32})
        done = wait(srv, run["id"], TERMINAL, timeout=300)
        assert done["state"] == "succeeded", (done, docker("logs", name, check=False).stdout)
        assert "holdout_accuracy" in done["metrics"]
    finally:
        srv.stop()


def test_the_worker_image_trains_a_bundle(tmp_path: Path) -> None:
    job = review_job(tmp_path / "job", "sklearn-text-classification")
    for path in [job, *job.rglob("*")]:
        os.chown(path, 10001, 10001)
    out = docker("run", "--rm", "--network", "none", "-v", f"{job}:{job}", f"potato-worker:{TAG}",
                 "python3", "-m", "potato.training.worker", str(job), check=False, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (job / "exit_code").read_text().strip() == "0"
    result: Any = json.loads((job / "result.json").read_text())
    rows = (job / "predictions.jsonl").read_text().splitlines()
    assert result["status"] == "succeeded" and result["predictions"] == len(rows) == 80  # 40 items x 2 schemas
    versions = docker("run", "--rm", f"potato-worker:{TAG}", "python3", "-c",
                      "import torch, transformers, peft, sklearn; print(torch.__version__)").stdout
    assert versions.strip().startswith("2.1")


def test_the_check_runs_inside_the_worker_image(tmp_path: Path) -> None:
    """`potato training check` in the image: the device a run gets there, and (on a GPU) no E11."""
    project = project_copy(tmp_path)
    out = docker("run", "--rm", "--network", "none", "-v", f"{project}:/project", f"potato-worker:{TAG}",
                 "potato", "training", "check", "local", "/project/config.yaml", "--json", check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] is True and report["nvrtc_error"] is None
    assert report["device"] == "cpu" or report["device"].startswith("cuda")


def _ssh_docker_server(make_project: Callable[..., Path]) -> ServerProcess:
    from tests.harness.runs import label_all
    from tests.harness.sshd import start_sshd

    host = start_sshd()
    socket_path = os.environ["DOCKER_HOST"].removeprefix("unix://")
    os.chmod(socket_path, 0o666)  # the test host's trainer may use this private engine (test only)
    backend = host.backend(env={"DOCKER_HOST": os.environ["DOCKER_HOST"]},
                           container={"runtime": "docker", "image": f"potato-worker:{TAG}", "options": ["--network=none"]})
    srv = ServerProcess(make_project(model_training={
        "enabled": True, "grace_seconds": 2,
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
        "backends": {"gpu": backend}})).start()
    label_all(srv, 20)
    return srv


def test_an_ssh_backend_with_container_docker_trains_in_the_worker_image(
        make_project: Callable[..., Path]) -> None:
    from tests.harness.runs import log_of

    srv = _ssh_docker_server(make_project)
    try:
        run = start(srv, trainer="sklearn-text-classification", schemas=["sentiment"], backend="gpu")
        done = wait(srv, run["id"], TERMINAL, timeout=180)
        log = log_of(srv, run["id"])
        assert done["state"] == "succeeded", (done, log)
        assert f"The worker runs in docker image potato-worker:{TAG} on 127.0.0.1" in log
        assert done["metrics"].get("holdout_accuracy") is not None  # scikit-learn: only the image has it
        export = requests.get(f"{srv.url}/admin/training/api/runs/{run['id']}/suggestions", headers=H).json()
        assert export["count"] == 40
        assert not docker("ps", "-aq", "--filter", f"name=potato-worker-{run['id']}").stdout.strip()  # --rm
    finally:
        srv.stop()


def test_cancel_reaches_the_worker_in_docker_and_the_cold_stop_kills_the_container(
        make_project: Callable[..., Path]) -> None:
    from tests.harness.runs import log_of

    srv = _ssh_docker_server(make_project)
    try:
        run = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu",
                    params={"sleep_s": 120, "ignore_term": True})
        name = f"potato-worker-{run['id']}"
        wait_until(lambda: "noop: ignoring SIGTERM" in log_of(srv, run["id"]), timeout=90, what="the worker in docker")
        assert docker("ps", "-q", "--filter", f"name={name}").stdout.strip()
        requests.post(f"{srv.url}/admin/training/api/runs/{run['id']}/cancel", headers=H)
        done = wait(srv, run["id"], TERMINAL, timeout=60)
        assert done["state"] == "cancelled", (done, log_of(srv, run["id"]))
        assert "sending SIGKILL" in log_of(srv, run["id"])
        wait_until(lambda: not docker("ps", "-aq", "--filter", f"name={name}").stdout.strip(), timeout=30,
                   what="docker kill to remove the container")
    finally:
        srv.stop()


def compose_command() -> list[str]:
    """``docker compose`` (the plugin) or Debian's ``docker-compose`` (1.29): both read the file."""
    if subprocess.run([DOCKER, "compose", "version"], capture_output=True).returncode == 0:
        return [DOCKER, "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.skip("neither docker compose nor docker-compose is installed")


def test_the_compose_file_runs_the_server_and_then_an_agent_that_trains(tmp_path: Path) -> None:
    """helm-less-manifests/compose.yaml as its header says: `up -d` serves the project on port 8000;
    register a backend in the server's container, then `--profile agent up -d agent` with the token
    in the environment trains there. Its images: the ones scripts/containers built, by the names the
    file gives them."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 8000)) == 0:
            pytest.skip("port 8000 is taken here; the compose file publishes the server there")
    for image in ("potato-server", "potato-agent"):
        docker("tag", f"{image}:{TAG}", f"{image}:latest")
    shutil.copy(ROOT / "helm-less-manifests" / "compose.yaml", tmp_path / "compose.yaml")
    project = project_copy(tmp_path)
    config = (project / "config.yaml").read_text()
    (project / "config.yaml").write_text(config.replace("model_training:\n  enabled: true\n",
                                                        "model_training:\n  enabled: true\n  backends:\n"
                                                        "    lab: {type: agent}\n"))
    os.chown(project / "config.yaml", 10001, 10001)
    compose = [*compose_command(), "-p", f"potato-compose-{os.getpid()}", "-f", str(tmp_path / "compose.yaml")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("POTATO_")}

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        out = subprocess.run([*compose, *args], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                             env={**env, **extra})
        assert out.returncode == 0, f"{' '.join(args)}:\n{out.stdout}\n{out.stderr}"
        return out

    try:
        run("up", "-d")
        url = "http://127.0.0.1:8000"
        wait_until(lambda: _get(f"{url}/healthz") == 200, timeout=60, what="the server from compose")
        headers = {"X-API-Key": "change-me"}  # the example project's key
        items = json.loads((project / "data" / "reviews.json").read_text())[:12]
        labels = [{"id": item["id"], "schema": "sentiment", "label": ("positive", "negative")[i % 2]}
                  for i, item in enumerate(items)]
        assert requests.post(f"{url}/admin/api/labels", headers=headers,
                             json={"user": "gold", "labels": labels}).status_code == 200
        registered = run("exec", "-T", "server", "potato", "training", "register", "lab", "/project/config.yaml")
        token = token_in(registered.stdout)
        run("--profile", "agent", "up", "-d", "agent", POTATO_TRAINING_TOKEN=token)
        made = requests.post(f"{url}/admin/training/api/runs", headers=headers,
                             json={"trainer": "noop", "schemas": ["sentiment"], "backend": "lab"})
        assert made.status_code == 201, made.text
        run_id = made.json()["id"]

        def ended() -> bool:
            return requests.get(f"{url}/admin/training/api/runs/{run_id}", headers=headers).json()["state"] in TERMINAL
        wait_until(ended, timeout=120, what="the run on the compose agent")
        done = requests.get(f"{url}/admin/training/api/runs/{run_id}", headers=headers).json()
        assert done["state"] == "succeeded", (done, run("logs", "--no-color").stdout[-3000:])
    finally:
        subprocess.run([*compose, "--profile", "agent", "down", "-v"], capture_output=True, timeout=300, cwd=tmp_path,
                       env=env)
