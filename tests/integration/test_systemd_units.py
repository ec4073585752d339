"""helm-less-manifests/systemd as written (D4): systemd's own checker reads each unit, then the
units' commands run with what systemd gives them (the credential in ``$CREDENTIALS_DIRECTORY``, the
working and state directories, SIGTERM to stop). Only the install paths and the example host are
swapped for this checkout's venv, a test project and a test server; no systemd runs as PID 1 here
(tests/containers/test_systemd.py installs both units under a real one)."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List

import pytest
import requests

from tests.harness.agents import register
from tests.harness.waiting import wait_until
from tests.harness.runs import TERMINAL, label_all, start, wait
from tests.harness.servers import ServerProcess, free_port

pytestmark = pytest.mark.integration
UNITS = Path(__file__).resolve().parents[2] / "helm-less-manifests" / "systemd"
VENV_BIN = Path(sys.executable).parent


def service(unit: str) -> Dict[str, List[str]]:
    """The [Service] section: key -> values in order (continued lines joined)."""
    section, found = "", {}
    for line in (UNITS / unit).read_text().replace("\\\n", " ").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


def as_installed(text: str) -> str:
    return text.replace("/opt/potato/bin/", f"{VENV_BIN}/")


def test_systemd_reads_both_units_without_a_complaint(tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    for unit in ("potato-server.service", "potato-agent.service"):
        (tmp_path / unit).write_text(as_installed((UNITS / unit).read_text()))
    out = subprocess.run(["systemd-analyze", "verify", *(str(p) for p in sorted(tmp_path.iterdir()))],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr.strip() == "", out.stderr  # it warns on stderr, exit 0


def test_the_server_unit_validates_serves_and_stops_on_sigterm(make_project: Callable[..., Path]) -> None:
    config = make_project()
    unit = service("potato-server.service")
    assert unit["WorkingDirectory"] == ["/srv/potato"]

    def command(line: str) -> List[str]:
        argv = shlex.split(as_installed(line).replace("/srv/potato", str(config.parent)))
        return [port if a == "8000" else a for a in argv]

    port = str(free_port())
    for pre in unit["ExecStartPre"]:
        done = subprocess.run(command(pre), cwd=config.parent, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
    log = (config.parent / "server.out").open("wb")
    proc = subprocess.Popen(command(unit["ExecStart"][0]), cwd=config.parent, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        def healthy() -> bool:
            try:
                return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
            except requests.RequestException:
                return proc.poll() is not None
        wait_until(healthy, timeout=30, what="the server's healthcheck")
        assert proc.poll() is None, (config.parent / "server.out").read_text()
        os.kill(proc.pid, signal.SIGTERM)  # KillMode=process: SIGTERM to the main process only
        assert proc.wait(int(unit["TimeoutStopSec"][0])) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_the_agent_unit_trains_with_its_credential_and_stops_on_sigterm(
        make_project: Callable[..., Path], tmp_path: Path) -> None:
    unit = service("potato-agent.service")
    argv = shlex.split(as_installed(unit["ExecStart"][0]))
    backend = argv[argv.index("--backend") + 1]
    config = make_project(model_training={"enabled": True, "backends": {backend: {"type": "agent"}}})
    _, token = register(config, backend)
    srv = ServerProcess(config).start()
    credentials, state = tmp_path / "credentials", tmp_path / "state"
    credentials.mkdir(mode=0o700)
    state.mkdir()
    name, _, source = unit["LoadCredential"][0].partition(":")
    assert source == "/etc/potato/agent-token"
    (credentials / name).write_text(token + "\n")
    (credentials / name).chmod(0o600)
    # systemd expands ${CREDENTIALS_DIRECTORY} in ExecStart itself; StateDirectory= is /var/lib/<name>.
    argv = [a.replace("${CREDENTIALS_DIRECTORY}", str(credentials))
             .replace("https://annotate.example.org", srv.url)
             .replace(f"/var/lib/{unit['StateDirectory'][0]}", str(state)) for a in argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith("POTATO_")}
    env["CREDENTIALS_DIRECTORY"] = str(credentials)
    log = (tmp_path / "agent.out").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        label_all(srv, 20)
        run = start(srv, trainer="noop", schemas=["sentiment"], backend=backend)
        done = wait(srv, run["id"], TERMINAL, timeout=60)
        assert done["state"] == "succeeded", (done, (tmp_path / "agent.out").read_text())
        assert list(state.glob("**/*")), "the agent works in its StateDirectory"
        os.kill(proc.pid, signal.SIGTERM)  # systemctl stop: a clean stop, not a failed unit
        assert str(proc.wait(int(unit["TimeoutStopSec"][0]))) in ["0", *unit["SuccessExitStatus"][0].split()]
        # A token the server does not know: exit 3, which the unit does not restart.
        (credentials / name).write_text("not-the-token\n")
        rejected = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert rejected.returncode == 3 and unit["RestartPreventExitStatus"] == ["3"], rejected.stdout
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        srv.stop()
