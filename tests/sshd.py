"""The real OpenSSH server the ssh backend's tests train through (``scripts/test-infra start ssh``).

Loopback only, port 22022, a ``trainer`` account that logs in with a key; root's known_hosts
trusts its host key, as a user's would after the first connect. The trainer's Python is Debian's
``/usr/bin/python3`` with the standard library only, like a fresh GPU host: tests use the ``noop``
trainer there.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
TC_DIR = Path("/tmp/potato-testcluster")


@dataclass(frozen=True)
class SshHost:
    host: str = "127.0.0.1"
    port: int = 22022
    user: str = "trainer"
    identity_file: str = str(TC_DIR / "ssh" / "id_ed25519")
    python: str = "/usr/bin/python3"

    def backend(self, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"type": "ssh", "host": self.host, "port": self.port, "user": self.user,
                                "identity_file": self.identity_file, "python": self.python}
        body.update(extra)
        return body

    def argv(self, command: str) -> list[str]:
        """ssh running ``command`` on the host as the trainer."""
        return ["ssh", "-o", "BatchMode=yes", "-p", str(self.port), "-i", self.identity_file, "-l", self.user,
                self.host, command]

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        """A command on the host as the trainer (for assertions about what the backend left there)."""
        return subprocess.run(self.argv(command), capture_output=True, text=True, timeout=60)


def start_sshd() -> SshHost:
    if os.geteuid() != 0 or not Path("/usr/sbin/sshd").exists() or shutil.which("ssh") is None:
        pytest.fail("The ssh backend's tests need a real sshd: as root, `apt-get install openssh-server` "
                    "(.ci/run does), then they start it with scripts/test-infra start ssh.")
    out = subprocess.run([str(ROOT / "scripts" / "test-infra"), "start", "ssh"], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        pytest.fail(f"scripts/test-infra start ssh failed:\n{out.stdout}\n{out.stderr}")
    host = SshHost()
    host.run("rm -rf ~/.cache/potato-training /tmp/potato-2*")  # each test session starts on a clean host
    return host


@contextlib.contextmanager
def throwaway_account() -> Iterator[SshHost]:
    """A new account on the test host that logs in with the rig's key, removed (home and all) afterwards:
    for tests that change what a login sees (a ~/.bashrc, a known_hosts), which the shared trainer
    account must not."""
    name = f"potato-{secrets.token_hex(3)}"
    keys = TC_DIR / "ssh" / "authorized_keys"
    subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], check=True, capture_output=True)
    try:
        subprocess.run(["usermod", "-p", "*", name], check=True, capture_output=True)  # unlocked for key login
        shutil.copyfile(keys / "trainer", keys / name)
        yield SshHost(user=name)
    finally:
        (keys / name).unlink(missing_ok=True)
        subprocess.run(["userdel", "-r", "-f", name], capture_output=True)
