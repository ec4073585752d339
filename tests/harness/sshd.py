"""The real OpenSSH server the ssh backend's tests train through: the rig's training host.

Two rigs, one entry (:func:`start_sshd`), so no test knows which it runs against:

* the host rig (default): this machine's own sshd on loopback port 22022 (``scripts/test-infra start
  ssh``), a ``trainer`` account of this machine;
* the container rig (``POTATO_TEST_RIG`` names the rig.json that ``scripts/test-infra start
  --containers`` printed): a container's sshd on a free loopback port, its own ``trainer``, and a
  Python 3.8 beside Debian's.

Either way root's known_hosts trusts the host key, as a user's would after the first connect, and the
trainer's Python is Debian's ``/usr/bin/python3`` with the standard library only, like a fresh GPU
host: tests use the ``noop`` trainer there. The host's processes show in this machine's /proc (the
rig's containers share its PID namespace), so tests may look at a run's remote processes there.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import fcntl
import functools
import json
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

import pytest

from tests.harness.servers import ServerProcess
from tests.harness.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
TC_DIR = Path("/tmp/potato-testcluster")


@dataclass(frozen=True)
class SshHost:
    host: str = "127.0.0.1"
    port: int = 22022
    user: str = "trainer"
    identity_file: str = str(TC_DIR / "ssh" / "id_ed25519")
    python: str = "/usr/bin/python3"
    python38: str = ""
    """A Python 3.8 on the host ("" where the rig has none the trainer may run)."""
    container: str = ""
    """The container that is this host (container rig), or "" for this machine."""

    def backend(self, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"type": "ssh", "host": self.host, "port": self.port, "user": self.user,
                                "identity_file": self.identity_file, "python": self.python}
        body.update(extra)
        return body

    @property
    def fs(self) -> Path:
        """The host's filesystem as this machine reaches it, for tests that read what a run left there:
        / for this machine; for a container, its root through /proc (the rig's containers share this
        machine's PID namespace)."""
        if not self.container:
            return Path("/")
        pid = subprocess.run([docker_cli(), "inspect", "-f", "{{.State.Pid}}", self.container], capture_output=True,
                             text=True, timeout=60, env=docker_env(), check=True).stdout.strip()
        return Path(f"/proc/{pid}/root")

    def argv(self, command: str) -> list[str]:
        """ssh running ``command`` on the host as the trainer."""
        return ["ssh", "-o", "BatchMode=yes", "-p", str(self.port), "-i", self.identity_file, "-l", self.user,
                self.host, command]

    def run(self, command: str, input: Optional[str] = None) -> subprocess.CompletedProcess[str]:
        """A command on the host as the trainer (for assertions about what the backend left there)."""
        return subprocess.run(self.argv(command), input=input, capture_output=True, text=True, timeout=60)

    def as_root(self, command: str) -> subprocess.CompletedProcess[str]:
        """A command as root on the host: this machine's shell, or the container's."""
        argv = ["bash", "-c", command]
        if self.container:
            argv = [docker_cli(), "exec", self.container, *argv]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=docker_env())

    @contextlib.contextmanager
    def account(self) -> Iterator[SshHost]:
        """A new account on this host that logs in with the rig's key, removed (home and all)
        afterwards: for tests that change what a login sees (a ~/.bashrc, a known_hosts), which the
        shared trainer account must not."""
        name = f"potato-{secrets.token_hex(3)}"
        keys = "/etc/ssh/authorized_keys" if self.container else str(TC_DIR / "ssh" / "authorized_keys")
        made = self.as_root(f"useradd -m -s /bin/bash {name} && usermod -p '*' {name} && "
                            f"cp {keys}/{self.user} {keys}/{name}")  # unlocked for key login
        assert made.returncode == 0, made.stderr
        try:
            yield dataclasses.replace(self, user=name)
        finally:
            self.as_root(f"rm -f {keys}/{name}; userdel -r -f {name}")


@functools.lru_cache(maxsize=None)
def container_rig() -> Optional[Dict[str, Any]]:
    """The container rig's description (rig.json), when ``POTATO_TEST_RIG`` names one."""
    path = os.environ.get("POTATO_TEST_RIG")
    if not path:
        return None
    try:
        rig: Dict[str, Any] = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        pytest.fail(f"POTATO_TEST_RIG={path} cannot be read ({exc}): start the rig with "
                    "`scripts/test-infra start --containers` and use the path it prints")
    return rig


def docker_cli() -> str:
    return "/usr/bin/docker" if Path("/usr/bin/docker").exists() else "docker"


def docker_env() -> Dict[str, str]:
    """This environment with the container rig's engine, if it named one."""
    rig = container_rig()
    env = dict(os.environ)
    if rig and rig.get("docker_host"):
        env["DOCKER_HOST"] = rig["docker_host"]
    return env


def rig_host(machine: Dict[str, Any]) -> SshHost:
    """A host of the container rig, after checking that its container runs."""
    rig = container_rig()
    assert rig is not None
    up = subprocess.run([docker_cli(), "inspect", "-f", "{{.State.Running}}", machine["container"]],
                        capture_output=True, text=True, timeout=60, env=docker_env())
    if up.stdout.strip() != "true":
        pytest.fail(f"The container rig's {machine['container']} is not running: `scripts/test-infra start "
                    f"--containers` (then run the tests with the POTATO_TEST_RIG it prints)")
    return SshHost(host=machine["host"], port=machine["port"], user=machine["user"],
                   identity_file=rig["identity_file"], python=machine["python"],
                   python38=machine.get("python38", ""), container=machine["container"])


_HELD: Dict[str, Any] = {}


def hold_rig(folder: Path) -> None:
    """Claim the rig for this test session, or fail naming the other one: two sessions on one rig share
    its ``trainer``, and one's clean-up would cancel the other's jobs. Held until this process ends."""
    if str(folder) in _HELD:
        return
    folder.mkdir(parents=True, exist_ok=True)
    lock = (folder / "session.lock").open("a+")
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.seek(0)
        other = lock.read().strip() or "another process"
        lock.close()
        pytest.fail(f"The test rig in {folder} is in use by a test session ({other}): wait for it, or start a "
                    "rig of your own (scripts/test-infra start --containers --name NAME) for this one")
    lock.seek(0)
    lock.truncate()
    lock.write(f"pid {os.getpid()}\n")
    lock.flush()
    _HELD[str(folder)] = lock
    atexit.register(lock.close)  # closing it frees the rig; at exit, so Python does not warn of an open file


def start_sshd(clean: bool = True) -> SshHost:
    """The rig's training host, running; with ``clean``, the trainer's runs of earlier sessions are
    cleared (tests that write on the host only in accounts of their own pass False)."""
    rig = container_rig()
    if rig is not None:
        hold_rig(Path(rig["identity_file"]).parent)
        host = rig_host(rig["ssh"])
        if clean:
            host.run("rm -rf ~/.cache/potato-training /tmp/potato-2*")
        return host
    if os.geteuid() != 0 or not Path("/usr/sbin/sshd").exists() or shutil.which("ssh") is None:
        pytest.fail("The ssh backend's tests need a real sshd: as root, `apt-get install openssh-server` "
                    "(.ci/run does), then they start it with scripts/test-infra start ssh.")
    out = subprocess.run([str(ROOT / "scripts" / "test-infra"), "start", "ssh"], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        pytest.fail(f"scripts/test-infra start ssh failed:\n{out.stdout}\n{out.stderr}")
    hold_rig(TC_DIR)
    host = SshHost()
    if clean:
        host.run("rm -rf ~/.cache/potato-training /tmp/potato-2*")  # each test session starts on a clean host
    return host


@pytest.fixture(scope="module")
def sshd() -> SshHost:
    return start_sshd()


def ssh_config(host: SshHost, **gpu: Any) -> Dict[str, Any]:
    return {"model_training": {
        "enabled": True,
        "grace_seconds": 2,
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
        "backends": {"gpu": host.backend(**gpu)},
    }}


def cleaned_up(host: SshHost, listing: str, expected: str = "") -> None:
    """The run's clean-up on the host comes after its end state is recorded: wait until ``listing``
    (a shell command) prints ``expected``, as an admin who looked too soon would look again."""
    wait_until(lambda: host.run(listing).stdout.strip() == expected, timeout=60,
               what=f"the host's clean-up ({listing!r} to print {expected!r})")


def _session_pid(srv: ServerProcess, run_id: str) -> int:
    """The ssh client process that carries the run's agent session."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0] == b"ssh" and any(run_id.encode() in arg and b"-R" != arg for arg in cmdline) \
                and b"-R" in cmdline:
            return int(proc.name)
    raise AssertionError("no ssh session process for the run")


def _remote_agent_pid(run_id: str) -> int:
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"potato.training.agent" in cmdline and run_id.encode() in cmdline and b"--session" in cmdline:
            return int(proc.name)
    raise AssertionError("no remote agent for the run")
