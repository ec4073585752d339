"""The one command a run starts with on an ssh host (E2, R15, R21): run for real under the
interpreters a host may have. An old Python must still say its version, so the script parses on
2.7 and 3.6; on 3.8 it reads nvidia-smi, looks for the code, clears stale socket folders and makes
the run's own."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from potato.server.training.backends.ssh.host import PROBE
from potato.training.launch.codefiles import PRESENT_MARK

PYENV = Path.home() / ".pyenv" / "versions"


def interpreter(prefix: str) -> Path:
    found = sorted(PYENV.glob(f"{prefix}.*/bin/python")) if PYENV.is_dir() else []
    if not found:
        pytest.skip(f"no Python {prefix} here (pyenv)")
    return found[0]


@pytest.mark.parametrize("version", ["2.7", "3.6", "3.7"])
def test_an_old_python_still_says_its_version(version: str) -> None:
    out = subprocess.run([str(interpreter(version)), "-c", PROBE, "--smi", "1"], capture_output=True, text=True)
    assert out.returncode == 3, out.stderr
    assert out.stdout.startswith(f"python {version}.")


def test_the_probe_prepares_a_run(tmp_path: Path) -> None:
    python = str(interpreter("3.8")) if PYENV.is_dir() and list(PYENV.glob("3.8.*")) else sys.executable
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho '0, NVIDIA A100-SXM4-80GB, 81920, 80000, 3'\n")
    (fake / "nvidia-smi").chmod(0o755)
    code = tmp_path / "code" / "abc"
    code.joinpath(*PRESENT_MARK).parent.mkdir(parents=True)
    code.joinpath(*PRESENT_MARK).write_text("")  # a whole copy of the code
    stale = Path(f"/tmp/potato-20200101-000000-test-{os.getpid()}")
    stale.mkdir(mode=0o700)
    bound = socket.socket(socket.AF_UNIX)
    bound.bind(str(stale / "agent.sock"))
    bound.close()  # bound, then nobody listens: a crashed run's
    mine = Path(f"/tmp/potato-20991231-000000-mine-{os.getpid()}")
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    try:
        out = subprocess.run([python, "-c", PROBE, "--smi", "1", "--code", str(code), "--socket-dir", str(mine)],
                             capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert "smi-rc 0" in lines and "smi 0, NVIDIA A100-SXM4-80GB, 81920, 80000, 3" in lines
        assert "code yes" in lines and f"stale {stale}" in lines and "socket-dir ok" in lines
        assert not stale.exists() and stat.S_IMODE(mine.stat().st_mode) == 0o700
        again = subprocess.run([python, "-c", PROBE, "--socket-dir", str(mine), "--code", str(tmp_path)],
                               capture_output=True, text=True, env=env)
        assert "code no" in again.stdout and "socket-dir [Errno 17] File exists" in again.stdout
    finally:
        for folder in (stale, mine):
            if folder.exists():
                for f in folder.iterdir():
                    f.unlink()
                folder.rmdir()


def test_a_hung_nvidia_smi_is_killed_and_the_probe_goes_on(tmp_path: Path) -> None:
    """A hung driver hangs nvidia-smi: after ``--smi`` seconds it is killed, with what it started,
    and the probe says so and still does the rest."""
    python = str(interpreter("3.8")) if PYENV.is_dir() and list(PYENV.glob("3.8.*")) else sys.executable
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text(f"#!/bin/sh\nsleep 600 &\necho $! > {tmp_path}/child\nwait\n")
    (fake / "nvidia-smi").chmod(0o755)
    code = tmp_path / "code"
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    out = subprocess.run([python, "-c", PROBE, "--smi", "1", "--code", str(code)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "smi-rc timeout" in out.stdout.splitlines() and "code no" in out.stdout.splitlines()
    child = (tmp_path / "child").read_text().strip()

    def dead() -> bool:
        try:
            return Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            return True

    for _ in range(50):  # SIGKILL lands at once; the kernel may take a moment to show it
        if dead():
            break
        time.sleep(0.1)
    assert dead()  # nvidia-smi's own child too: the whole group was killed
