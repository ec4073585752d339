"""Another machine, as far as what runs there can tell: a fresh venv of some Python with a HOME of its
own and no path to this checkout, where commands run the way a user types them into a shell.

Commands go to bash on its standard input, never as ``bash -c`` arguments: the lines a user pastes
(``export POTATO_TRAINING_TOKEN=...``) hold a token, which must not appear on any command line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import requests

PYENV = Path("/root/.pyenv/versions")
PYTHON38 = sorted(PYENV.glob("3.8.*/bin/python3.8"))
"""The training machine's oldest supported interpreter, where pyenv has it."""

KEEP = ("PATH", "LANG", "LC_ALL", "TMPDIR", "PIP_CERT", "PIP_FIND_LINKS", "PIP_DEFAULT_TIMEOUT",
        "PIP_DISABLE_PIP_VERSION_CHECK", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE")
"""What a login there shares with this one: the path to system tools and how pip reaches its index."""


@dataclass
class Machine:
    root: Path
    env: dict[str, str]

    @classmethod
    def make(cls, root: Path, python: Path) -> Machine:
        (root / "home").mkdir(parents=True)
        venv = root / "venv"
        subprocess.run([str(python), "-m", "venv", str(venv)], check=True, timeout=120)
        env = {k: v for k, v in os.environ.items() if k in KEEP}
        env.update(HOME=str(root / "home"), PATH=f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
                   VIRTUAL_ENV=str(venv))
        return cls(root, env)

    def sh(self, script: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """Run ``script`` (lines as typed) to its end."""
        return subprocess.run(["bash", "-s"], input=script, cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def start(self, script: str, log: Path) -> subprocess.Popen[bytes]:
        """Start ``script`` in its own process group (its last line usually ``exec``s a long-running
        command), output to ``log``."""
        with log.open("wb") as out:
            proc = subprocess.Popen(["bash", "-s"], stdin=subprocess.PIPE, cwd=self.root, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        assert proc.stdin is not None
        proc.stdin.write(script.encode())
        proc.stdin.close()
        return proc


def stop(proc: Optional[subprocess.Popen[bytes]], grace_s: float = 30) -> None:
    """SIGTERM to the process group, SIGKILL if it is still there after ``grace_s``."""
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def answers(url: str, timeout: float = 30.0, ok: Callable[[requests.Response], bool] = lambda r: r.ok) -> None:
    """Wait until ``url`` answers (a server just started); AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ok(requests.get(url, timeout=1)):
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer within {timeout:g} s")
