"""The tutorial, run as a user would follow it (issue 19).

tests/tutorial/tutorial.de.txt is the tutorial (German) that the spec restates, kept in the repository
(and compared with ../shared/seed/ where that exists, so a new version of it fails here until it is
taken over). Each command block and each quoted output is taken from that text, not retyped: a command
or a message of ours that drifts from it fails this test. They run in the tutorial's order, against
the real test rig: the loopback sshd as the GPU server, the single-node SLURM behind it as the
cluster, a fresh Python 3.8 venv set up by the printed commands as the machine behind NAT.

What is substituted, and why (nothing else is):
- the hosts: gpu.example.org and login.cluster.example.org are the rig's sshd (127.0.0.1 with its
  port, user and key, which the tutorial says pass as -p, -l and -i);
- the interpreters and folders that exist there (the tutorial's /opt/conda and /shared do not; the
  ssh backend gets a remote_dir of its own, so its first run copies the code as the tutorial's does),
  and no `gres: gpu:1` or `module load` on a cluster without GPUs or environment modules;
- the admin key: the example's `change-me` makes `--strict` fail on purpose (anyone would try it);
- http://localhost:8000: the server runs on a free port.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.conftest import ADMIN_KEY
from tests.harness.example_project import copy_example
from tests.harness.runs import TERMINAL, start, wait
from tests.harness.machines import PYTHON38, Machine, stop
from tests.harness.servers import ServerProcess
from tests.harness.slurmcluster import Cluster, start_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.rig]

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = Path(__file__).with_name("tutorial.de.txt")
SEED = ROOT.parent / "shared" / "seed" / "000_6cb040b156f523d8.txt"
TEXT = TUTORIAL.read_text(encoding="utf-8")
LINES = TEXT.splitlines()


def block(first: str, last: str, after: str = "") -> str:
    """The tutorial's lines from the one equal to ``first`` to the next equal to ``last`` (after the
    line ``after``, when the text holds such a block more than once)."""
    begin = LINES.index(after) if after else 0
    start_at = LINES.index(first, begin)
    end_at = LINES.index(last, start_at)
    return "\n".join(LINES[start_at:end_at + 1]) + "\n"


def line(text: str) -> str:
    """A command the tutorial gives on a line of its own (it must be there, exactly)."""
    assert text in LINES, f"the tutorial has no line {text!r}"
    return text


def quoted(text: str) -> str:
    """A message the tutorial quotes in its prose (it must be there, exactly)."""
    assert text in TEXT, f"the tutorial does not quote {text!r}"
    return text


def sh(command: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def potato_env(tmp_path: Path) -> dict[str, str]:
    """The study admin's shell on the server: this checkout's `potato` first on PATH."""
    bindir = tmp_path / "admin-bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "potato").write_text(f"#!/bin/sh\nexec {sys.executable} -m potato \"$@\"\n")
    (bindir / "potato").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POTATO_")}
    env["PATH"] = f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def rig_config(raw: dict[str, Any], cluster: Cluster, key: str) -> dict[str, Any]:
    """The tutorial's config with the rig's hosts, interpreters and folders (see the module docstring)."""
    login = cluster.login
    raw["admin_api_key"] = key
    backends = raw["model_training"]["backends"]
    gpu = backends["gpu-server"]
    assert (gpu["host"], gpu["python"], gpu.get("remote_dir")) == ("gpu.example.org", "/opt/conda/bin/python3", None)
    gpu.update(host=login.host, port=login.port, user=login.user, identity_file=login.identity_file,
               python=login.python, remote_dir="~/potato-tutorial-ssh")
    slurm = backends["cluster"]
    assert (slurm["host"], slurm["job_python"], slurm["gres"], slurm["prelude"]) == (
        "login.cluster.example.org", "/shared/envs/train/bin/python", "gpu:1", ["module load cuda/12.4"])
    slurm.update(host=login.host, port=login.port, user=login.user, identity_file=login.identity_file,
                 python=login.python, job_python=login.python, remote_dir="~/potato-tutorial",
                 env={"SLURM_CONF": cluster.slurm_conf}, poll_interval_s=1)
    del slurm["gres"], slurm["prelude"]
    return raw


def test_the_copy_here_is_the_tutorial() -> None:
    if not SEED.exists():
        pytest.skip(f"{SEED} is not beside this checkout")
    assert TUTORIAL.read_bytes() == SEED.read_bytes(), "the tutorial changed: take it over into tests/tutorial"


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return start_cluster()


def test_the_tutorial_from_the_config_to_a_run_on_every_backend(
        tmp_path: Path, cluster: Cluster) -> None:
    project = tmp_path / "reviews"
    copy_example(project, config=False)  # its data; the tutorial writes the config
    key = ADMIN_KEY  # a real key in place of the example's change-me
    env = potato_env(tmp_path)
    cluster.run("rm -rf ~/potato-tutorial ~/potato-tutorial-ssh")

    # -- "Die Projektkonfiguration": the config, as the tutorial writes it ------------------------
    config_text = block('annotation_task_name: "Review Sentiment"', "      queue_timeout_s: 3600")
    raw = rig_config(yaml.safe_load(config_text), cluster, key)
    config = project / "config.yaml"
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    config.chmod(0o600)

    validated = sh(line("potato validate config.yaml --strict"), project, env)
    assert validated.returncode == 0, validated.stdout + validated.stderr

    # A slurm time over 6 hours warns, in the tutorial's words; --strict fails until acknowledged.
    long = json.loads(json.dumps(raw))
    long["model_training"]["backends"]["cluster"]["time"] = "12:00:00"
    config.write_text(yaml.safe_dump(long, sort_keys=False))
    warned = sh("potato validate config.yaml --strict", project, env)
    message = quoted("model_training.backends.cluster.time is 12:00:00. A job that holds a GPU for more than 6 hours "
                     "is long on a shared cluster; check its policy")
    assert warned.returncode == 1 and message in warned.stdout, warned.stdout
    acknowledged = block("validation:", '    - "model_training.backends.cluster.time is"')
    config.write_text(yaml.safe_dump(long, sort_keys=False) + acknowledged)
    assert sh("potato validate config.yaml --strict", project, env).returncode == 0
    config.write_text(yaml.safe_dump(raw, sort_keys=False))

    srv = ServerProcess(config).start()
    machine_agent: subprocess.Popen[bytes] | None = None
    try:
        label_all_reviews(srv, key, project)

        # -- "Das Menü Runs on und die API": the curl line, with $KEY ----------------------------
        curl = block('curl -X POST -H "X-API-Key: $KEY" -H "Content-Type: application/json" \\',
                     """  -d '{"trainer": "hf-text-classification", "schemas": ["sentiment"], "backend": "cluster"}'""")
        curl = curl.replace("http://localhost:8000", srv.url)
        answered = sh(curl, project, dict(env, KEY=key))
        run = json.loads(answered.stdout)
        assert (run["trainer"], run["backend"], run["schemas"]) == ("hf-text-classification", "cluster", ["sentiment"])
        unknown = sh(curl.rstrip().replace('"backend": "cluster"', '"backend": "nowhere"') + " -o /dev/null -w '%{http_code}'",
                     project, dict(env, KEY=key))
        assert unknown.stdout == "409"  # "Ein Backend-Name, der nicht in der Konfiguration steht ... 409"
        # The cluster's compute node has no torch: the run fails with the tutorial's E4 text.
        ended = wait(srv, run["id"], TERMINAL, timeout=240)
        assert ended["state"] == "failed", ended
        assert ended["message"].startswith(quoted("Trainer 'hf-text-classification' could not be imported")), ended

        # -- "Auf diesem Rechner trainieren" --------------------------------------------------------
        local = sh(line("potato training check local config.yaml"), project, env)
        assert local.returncode == 0 and local.stdout.startswith("local: this machine, "), local.stdout
        assert quoted("local: this machine, Apple Metal (mps)")  # the tutorial's Mac; this rig has no Metal

        # -- "Der Check-Befehl für ein ssh-Backend" ------------------------------------------------
        # The rig's host is a fresh one: Python and no training packages, so the report names what it
        # lacks, with the tutorial's E4 text, and exits 1 ("sonst mit 1"); --json says the same.
        ssh_check = sh(line("potato training check gpu-server config.yaml"), project, env, timeout=120)
        report = ssh_check.stdout
        assert report.startswith(f"gpu-server (ssh to {cluster.login.host}): Python 3."), report
        assert "A run would get the CPU (no GPU on this host)." in report
        assert quoted("Trainer 'hf-text-classification' could not be imported") + f" on {cluster.login.host}" in report
        assert ssh_check.returncode == 1
        as_json = sh("potato training check gpu-server config.yaml --json", project, env, timeout=120)
        assert json.loads(as_json.stdout)["ok"] is False and as_json.returncode == 1

        # -- "Schritte eines ssh-Laufs": the step lines and the log's Python, on a run the host can train
        # (noop needs the standard library only, which is all this host has).
        host = cluster.login.host
        on_ssh = start(srv, trainer="noop", schemas=["sentiment"], backend="gpu-server")
        assert wait(srv, on_ssh["id"], TERMINAL, timeout=240)["state"] == "succeeded"
        ssh_log = run_log(srv, on_ssh["id"])
        for step in (quoted("copying Potato's code to gpu.example.org"), quoted("waiting for the agent on gpu.example.org")):
            assert step.replace("gpu.example.org", host) in ssh_log, ssh_log
        assert "Python 3." in ssh_log and f" on {host} (" in ssh_log  # "nennt das Python des Hosts"

        # -- "Schritte eines SLURM-Laufs": submitted with sbatch, each queue state in the log ---------
        on_slurm = start(srv, trainer="noop", schemas=["sentiment"], backend="cluster", params={"sleep_s": 4})
        assert wait(srv, on_slurm["id"], TERMINAL, timeout=240)["state"] == "succeeded"
        slurm_log = run_log(srv, on_slurm["id"])
        submitted = re.search(r"Submitted SLURM job (\d+)", slurm_log)
        assert submitted and quoted("Submitted SLURM job"), slurm_log
        example = quoted("SLURM job 4242: PENDING (Priority)")
        assert example.split(":")[0].replace("4242", submitted.group(1)) + ": RUNNING on " in slurm_log, slurm_log
        assert quoted("RUNNING on node07")

        # -- "Der Check-Befehl für ein SLURM-Backend" ----------------------------------------------
        slurm_check = sh(line("potato training check cluster config.yaml"), project, env, timeout=120)
        assert slurm_check.returncode == 0, slurm_check.stdout + slurm_check.stderr
        assert "sbatch" in slurm_check.stdout

        # -- "Den Agent registrieren und starten" --------------------------------------------------
        before = sh(quoted("potato training check lab-workstation config.yaml"), project, env)
        assert quoted("no token issued yet") in before.stdout and before.returncode == 1
        assert "potato training register lab-workstation config.yaml" in before.stdout
        registered = sh(line("potato training register lab-workstation config.yaml"), project, env)
        assert registered.returncode == 0, registered.stderr
        printed = registered.stdout.splitlines()
        token = printed[2].strip()
        expected = block("Token for backend 'lab-workstation' (shown once; registering again replaces it):",
                         "  potato training agent --server http://<this-server>:8000 --backend lab-workstation")
        expected = expected.replace("<token>", token).replace("http://<this-server>:8000", srv.url)
        # The tutorial's layout line by line, blank lines and indents included (issue 21); ours adds one
        # line, the install command, right before export.
        wanted = [text.rstrip() for text in expected.splitlines()]
        got = [text.rstrip() for text in printed]
        assert got[:6] + got[7:len(wanted) + 1] == wanted, (wanted, printed)
        assert got[6].startswith('  pip install "potato-annotation[train-sklearn] @ '), printed
        install = got[6].strip()

        # The machine behind NAT: Python 3.8, nothing of ours; the printed lines, as printed.
        if not PYTHON38:
            pytest.skip("no Python 3.8 for the training machine")
        machine = Machine.make(tmp_path / "workstation", PYTHON38[-1])
        done = machine.sh(install, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        export = line("export POTATO_TRAINING_TOKEN=<the token>").replace("<the token>", token)
        agent_line = line("potato training agent --server https://annotate.example.org --backend lab-workstation")
        agent_line = agent_line.replace("https://annotate.example.org", srv.url)
        machine_agent = machine.start(f"{export}\nexec {agent_line} --workdir {machine.root / 'w'}\n",
                                      machine.root / "agent.out")
        run = start(srv, schemas=["sentiment"], backend="lab-workstation")
        finished = wait(srv, run["id"], TERMINAL, timeout=240)
        assert finished["state"] == "succeeded", (finished, (machine.root / "agent.out").read_text(errors="replace"))
        after = sh(quoted("potato training check lab-workstation config.yaml"), project, env)
        assert after.returncode == 0 and "last_seen: " in after.stdout and "never" not in after.stdout, after.stdout
        assert token not in after.stdout + (machine.root / "agent.out").read_text(errors="replace")
    finally:
        stop(machine_agent)
        srv.stop()
        cluster.run("scancel -u trainer; rm -rf ~/potato-tutorial ~/potato-tutorial-ssh")


def label_all_reviews(srv: ServerProcess, key: str, project: Path) -> None:
    """30 labels from a gold annotator, as an admin importing earlier work would (the example's own
    labels come from the words in each review)."""
    items = json.loads((project / "data" / "reviews.json").read_text())[:30]
    happy = re.compile(r"\b(premium|recommend|great|love|excellent|perfect|works)\b", re.I)
    labels = [{"id": item["id"], "schema": "sentiment", "label": "positive" if happy.search(item["text"]) else "negative"}
              for item in items]
    assert {lab["label"] for lab in labels} == {"positive", "negative"}
    r = requests.post(srv.url + "/admin/api/labels", json={"user": "gold", "labels": labels},
                      headers={"X-API-Key": key}, timeout=30)
    assert r.status_code == 200, r.text


def run_log(srv: ServerProcess, run_id: str) -> str:
    answer = requests.get(f"{srv.url}/admin/training/api/runs/{run_id}/log", headers={"X-API-Key": ADMIN_KEY},
                          timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.text
