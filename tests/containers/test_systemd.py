"""helm-less-manifests/systemd/potato-server.service under a real systemd (D4, DESIGN: "a server
restart loses no run").

test_systemd_units.py runs the unit's commands without systemd; what only systemd itself shows is
what `systemctl restart` does to the processes a run has beside the server (the local agent and its
worker, an ssh run's client). Here the unit is installed as its header says, in the server image with
systemd as PID 1 (tests/containers/systemd/Dockerfile), and a local run is started before a restart.
Deselected unless scripts/containers built the images (``POTATO_IMAGES``).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any, Iterator

import pytest

from tests.harness.images import DOCKER, ROOT, TAG, docker
from tests.harness.example_project import copy_example
from tests.faults.matrix import fault
from tests.harness.waiting import wait_until

pytestmark = [pytest.mark.containers,
              pytest.mark.skipif(not TAG, reason="run by scripts/containers, which builds the images first")]
UNITS = ROOT / "helm-less-manifests" / "systemd"
BACKEND = "lab-workstation"
"""The agent unit's backend as written: the project is given a backend of that name."""
API = """
import json, sys, urllib.error, urllib.request
method, path, body = json.loads(REQUEST)
request = urllib.request.Request("http://127.0.0.1:8000" + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"X-API-Key": "change-me", "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=10) as answer:
        print(json.dumps([answer.status, answer.read().decode()]))
except urllib.error.HTTPError as exc:
    print(json.dumps([exc.code, exc.read().decode()]))
except OSError as exc:
    print(json.dumps([0, str(exc)]))
"""
"""Asks the server inside the container (its network is its own: no port on this machine). The
script, with the example project's admin key, goes in on stdin, not on a command line."""


SYSTEMD_OPTIONS = ["--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined", "--security-opt",
                   "apparmor=unconfined", "--cgroupns", "host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
                   "--tmpfs", "/run", "--tmpfs", "/run/lock"]
"""What systemd as PID 1 needs of a container: mounts (the unit's ProtectSystem= makes some) and a
cgroup tree to put services in. Not --privileged, which asks for every capability: CI's machine,
itself a container, lacks one (CAP_SYS_RESOURCE) and runc refuses."""


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A booted systemd with the server unit enabled as its header says, serving the example project."""
    image = f"potato-systemd-test:{TAG}"
    docker("build", "-q", "--network", "host", "--build-arg", f"SERVER_IMAGE=potato-server:{TAG}", "-t", image,
           str(ROOT / "tests" / "containers" / "systemd"), timeout=900)
    name = f"potato-systemd-{os.getpid()}"
    docker("run", "-d", "--name", name, "--network", "none", *SYSTEMD_OPTIONS, image)
    try:
        wait_until(lambda: inside(name, "systemctl", "is-system-running", check=False).stdout.strip()
                   in ("running", "degraded"), timeout=60, what="systemd to boot")
        docker("cp", f"{copy_example(tmp_path_factory.mktemp('project'))}/.", f"{name}:/srv/potato")
        inside(name, "sed", "-i", f"s/^  enabled: true$/  enabled: true\\n  backends:\\n    {BACKEND}: {{type: agent}}/",
               "/srv/potato/config.yaml")
        docker("cp", str(UNITS / "potato-server.service"), f"{name}:/etc/systemd/system/potato-server.service")
        inside(name, "sh", "-c", "chown -R potato:potato /srv/potato && systemctl daemon-reload "
                                 "&& systemctl enable --now potato-server")
        wait_until(lambda: api(name, "GET", "/healthz")[0] == 200, timeout=60, what="the server under systemd")
        yield name
    except BaseException:
        print(inside(name, "journalctl", "--no-pager", "-n", "200", check=False).stdout)
        raise
    finally:
        docker("rm", "-f", name, check=False)


def inside(name: str, *argv: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([DOCKER, "exec", "-i", name, *argv], input=stdin, capture_output=True, text=True,
                         timeout=120)
    if check and out.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


def api(name: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    script = f"REQUEST = {json.dumps(json.dumps([method, path, body]))}\n{API}"
    out = inside(name, "/opt/potato/bin/python", "-", stdin=script, check=False)
    status, text = json.loads(out.stdout or "[0, \"\"]")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def run_state(name: str, run_id: str) -> dict[str, Any]:
    status, run = api(name, "GET", f"/admin/training/api/runs/{run_id}")
    return run if status == 200 else {"state": f"unknown (HTTP {status})"}


def label_some(name: str) -> None:
    items = json.loads((ROOT / "examples" / "reviews" / "data" / "reviews.json").read_text())[:20]
    labels = [{"id": item["id"], "schema": "sentiment", "label": ("positive", "negative")[i % 2]}
              for i, item in enumerate(items)]
    assert api(name, "POST", "/admin/api/labels", {"user": "gold", "labels": labels})[0] == 200


def start_run(name: str, **body: Any) -> str:
    status, run = api(name, "POST", "/admin/training/api/runs", {"trainer": "noop", "schemas": ["sentiment"], **body})
    assert status == 201, run
    return str(run["id"])


def ended(name: str, run_id: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (run := run_state(name, run_id))["state"] not in ("succeeded", "failed", "cancelled"):
        assert time.monotonic() < deadline, run
        time.sleep(0.5)
    return run


def unit_property(name: str, unit: str, prop: str) -> str:
    return inside(name, "systemctl", "show", "-p", prop, "--value", unit).stdout.strip()


@fault("Runs and their processes", "systemctl restart of the server's unit during a local run",
       "systemd stops only the server (KillMode=process): the run's agent and worker go on and report to the "
       "restarted server", "The run succeeds")
def test_systemctl_restart_during_a_local_run_leaves_the_run_training(machine: str) -> None:
    """The unit stops only the server's own processes: the run's agent and worker go on, report to
    the restarted server, and the run succeeds (KillMode=mixed SIGKILLed them once gunicorn exited)."""
    label_some(machine)
    run = {"id": start_run(machine, params={"sleep_s": 12})}
    wait_until(lambda: "step: training on " in api(machine, "GET", f"/admin/training/api/runs/{run['id']}/log")[1],
               timeout=60, what="the worker to train")
    before = unit_property(machine, "potato-server", "MainPID")
    inside(machine, "systemctl", "restart", "potato-server")
    assert unit_property(machine, "potato-server", "MainPID") != before
    assert unit_property(machine, "potato-server", "ActiveState") == "active"
    done = ended(machine, run["id"])
    journal = inside(machine, "journalctl", "--no-pager", "-u", "potato-server", check=False).stdout
    assert done["state"] == "succeeded", f"{done}\n{journal[-3000:]}"
    assert done["metrics"]["n_train"] == 16  # 20 labels, 4 of them held out
    log = api(machine, "GET", f"/admin/training/api/runs/{run['id']}/log")[1]
    assert log.count("step: training on ") == 1, log  # the same worker went on; nothing started it again


@fault("Runs and their processes", "systemctl stop of the agent's unit during a run",
       "SIGTERM reaches the agent alone (KillMode=mixed): it stops its worker and reports the run cancelled; "
       "a stop signal that reaches the worker first still counts as that stop",
       "The run is cancelled; the unit ends inactive, not failed")
def test_the_agent_unit_installed_as_its_header_says_trains_stops_warm_and_stays_down_on_a_bad_token(
        machine: str) -> None:
    """The token from `potato training register` into /etc/potato/agent-token (a credential only root
    reads), --server and --backend edited, `systemctl enable --now`: a run on its backend succeeds;
    `systemctl stop` during a run is the agent's warm stop (the run is cancelled, the unit is not
    failed); a token the server does not know ends the agent with exit 3, which the unit does not
    restart, and an empty one with a message that names the unit's credential."""
    label_some(machine)
    said = inside(machine, "runuser", "-u", "potato", "--", "/opt/potato/bin/potato", "training", "register",
                  BACKEND, "/srv/potato/config.yaml", "--server-url", "http://127.0.0.1:8000").stdout
    token = next(line.strip() for line in said.splitlines()[1:] if line.strip())
    inside(machine, "sh", "-c", "mkdir -p /etc/potato && install -m 600 /dev/stdin /etc/potato/agent-token",
           stdin=token + "\n")
    docker("cp", str(UNITS / "potato-agent.service"), f"{machine}:/etc/systemd/system/potato-agent.service")
    inside(machine, "sed", "-i", "s|https://annotate.example.org|http://127.0.0.1:8000|",
           "/etc/systemd/system/potato-agent.service")
    inside(machine, "sh", "-c", "systemctl daemon-reload && systemctl enable --now potato-agent")
    try:
        first = ended(machine, start_run(machine, backend=BACKEND))
        assert first["state"] == "succeeded", first

        second = start_run(machine, backend=BACKEND, params={"sleep_s": 120})
        wait_until(lambda: run_state(machine, second)["state"] == "running", timeout=60, what="the agent's run")
        inside(machine, "systemctl", "stop", "potato-agent")
        stopped = ended(machine, second, timeout=30)
        journal = inside(machine, "journalctl", "--no-pager", "-u", "potato-agent", check=False).stdout
        assert stopped["state"] == "cancelled", f"{stopped['reason']}: {stopped['message']}\n{journal[-3000:]}"
        assert (unit_property(machine, "potato-agent", "ActiveState"),
                unit_property(machine, "potato-agent", "Result")) == ("inactive", "success")

        inside(machine, "sh", "-c", "install -m 600 /dev/stdin /etc/potato/agent-token", stdin="not-the-token\n")
        inside(machine, "systemctl", "start", "potato-agent")
        wait_until(lambda: unit_property(machine, "potato-agent", "ActiveState") == "failed", timeout=60,
                   what="the agent to stop on the rejected token")
        assert unit_property(machine, "potato-agent", "ExecMainStatus") == "3"
        time.sleep(12)  # past RestartSec=10: Restart=always would have started it again by now
        assert unit_property(machine, "potato-agent", "ActiveState") == "failed"
        assert unit_property(machine, "potato-agent", "NRestarts") == "0"
        journal = inside(machine, "journalctl", "--no-pager", "-u", "potato-agent", check=False).stdout
        assert "not-the-token" not in journal and token not in journal

        # An empty credential: the agent says how a service gets its token (no shell to export in).
        inside(machine, "sh", "-c", "install -m 600 /dev/null /etc/potato/agent-token")
        inside(machine, "sh", "-c", "systemctl reset-failed potato-agent && systemctl start potato-agent")
        wait_until(lambda: unit_property(machine, "potato-agent", "ActiveState") == "failed", timeout=60,
                   what="the agent to stop on the empty token")
        journal = inside(machine, "journalctl", "--no-pager", "-u", "potato-agent", check=False).stdout
        assert "hand it to the service as a credential: `LoadCredential=token:/etc/potato/agent-token`" in journal
        assert "export POTATO_TRAINING_TOKEN" not in journal and "docker run" not in journal
    finally:
        inside(machine, "systemctl", "stop", "potato-agent", check=False)


LABELER = """
import http.cookiejar, json, threading, time, urllib.error, urllib.request
base = "http://127.0.0.1:8000"
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
acknowledged, failed, signed_in, i = [], 0, False, 0
end = time.monotonic() + SECONDS

def poll():
    while time.monotonic() < end:
        body = json.dumps({"backend": BACKEND, "wait_s": 25, "agent": {"id": "poller"}}).encode()
        request = urllib.request.Request(base + "/training/agent/v1/jobs/next", data=body, method="POST",
                                         headers={"Authorization": "Bearer " + TOKEN,
                                                  "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=35).read()
        except OSError:
            time.sleep(0.5)

threading.Thread(target=poll, daemon=True).start()
while time.monotonic() < end:
    try:
        if not signed_in:
            opener.open(urllib.request.Request(base + "/login", data=b"name=sysann", method="POST"), timeout=5).read()
            signed_in = True
        body = json.dumps({"id": ITEMS[i % len(ITEMS)], "labels": {"sentiment": "negative"}}).encode()
        request = urllib.request.Request(base + "/api/label", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with opener.open(request, timeout=5) as answer:
            answer.read()
            acknowledged.append(ITEMS[i % len(ITEMS)])
            i += 1
    except urllib.error.HTTPError as exc:
        failed += 1
        signed_in = signed_in and exc.code not in (401, 403)
        time.sleep(0.05)
    except OSError:
        failed += 1
        time.sleep(0.05)
print(json.dumps({"acknowledged": sorted(set(acknowledged)), "saves": len(acknowledged), "failed": failed}))
"""
"""An annotator inside the container: signs in and labels item after item for SECONDS, sending a save
again when it fails, and prints the items whose save was answered 200 (each once: the pipe is read at the
end). Beside it an agent's long poll waits for work, as a connected agent's does (it held an orphaned
worker, and with it the port, for its 25 s)."""


@fault("Annotators and the server", "kill -9 of gunicorn's master under the server's systemd unit while an annotator labels "
       "and an agent's long poll waits",
       "The orphaned workers free the port at once and answer what they have in flight; systemd restarts the unit "
       "(Restart=on-failure, RestartSec=3) and the new server listens",
       "A save cut off fails and is sent again; the server answers again within seconds")
def test_kill_9_of_the_master_under_the_unit_is_followed_by_a_working_server(machine: str) -> None:
    """issue 33 item 3: the orphaned workers held the port for 25 s, and systemd's restarts failed
    with "Port 8000 is in use" until its start limit gave up, leaving the server down."""
    items = [item["id"] for item in json.loads((ROOT / "examples" / "reviews" / "data" / "reviews.json").read_text())]
    before = unit_property(machine, "potato-server", "MainPID")
    restarts = int(unit_property(machine, "potato-server", "NRestarts"))
    said = inside(machine, "runuser", "-u", "potato", "--", "/opt/potato/bin/potato", "training", "register",
                  BACKEND, "/srv/potato/config.yaml", "--server-url", "http://127.0.0.1:8000").stdout
    token = next(line.strip() for line in said.splitlines()[1:] if line.strip())
    script = (f"ITEMS = {json.dumps(items[100:300])}\nSECONDS = 25\nBACKEND = {BACKEND!r}\nTOKEN = {token!r}\n"
              f"{LABELER}")
    labeler = subprocess.Popen([DOCKER, "exec", "-i", machine, "/opt/potato/bin/python", "-"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert labeler.stdin is not None
        labeler.stdin.write(script)
        labeler.stdin.close()
        time.sleep(4)  # labelling is under way
        inside(machine, "sh", "-c", f"kill -9 {before}")  # the master alone, as a crash would end it
        killed_at = time.monotonic()
        wait_until(lambda: unit_property(machine, "potato-server", "MainPID") not in ("0", before)
                   and api(machine, "GET", "/healthz")[0] == 200, timeout=30,
                   what="systemd to restart the server and the new one to answer")
        back_s = time.monotonic() - killed_at
        assert labeler.wait(60) is not None and labeler.stdout is not None and labeler.stderr is not None
        out, err = labeler.stdout.read(), labeler.stderr.read()
    finally:
        if labeler.poll() is None:
            labeler.kill()
            labeler.wait()
        for pipe in (labeler.stdout, labeler.stderr):
            if pipe is not None:
                pipe.close()
    journal = inside(machine, "journalctl", "--no-pager", "-u", "potato-server", check=False).stdout
    assert labeler.returncode == 0, f"{out}\n{err}"
    assert int(unit_property(machine, "potato-server", "NRestarts")) == restarts + 1, journal[-3000:]
    assert unit_property(machine, "potato-server", "ActiveState") == "active"
    assert "is in use" not in journal, journal[-3000:]
    print(f"the server answered again {back_s:.1f} s after its master's kill -9")
    result = json.loads(out)
    assert result["saves"] > 20, out  # labelled before the kill and after the restart
    acknowledged = result["acknowledged"]
    status, stored = api(machine, "GET", "/admin/api/labels?user=sysann")
    assert status == 200, stored
    assert set(acknowledged) <= {row["id"] for row in stored["labels"]}, journal[-3000:]
