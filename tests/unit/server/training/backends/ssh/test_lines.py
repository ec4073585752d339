"""The shell lines an ssh run sends, run in a real ``sh`` with hostile values (issue 22: every remote
command line is built by a pure function; R13, R14, R20)."""

from __future__ import annotations

import io
import shlex
import subprocess
import tarfile
from pathlib import Path

from potato.config.schema import Container
from potato.server.training.backends.ssh import lines
from potato.server.training.backends.ssh.command import remote_path, shell

HOSTILE = "a'; touch pwned; echo \"$(id)\" `id` x"


def sh(line: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["sh", "-c", line], cwd=cwd, input=stdin, capture_output=True, check=False)


def tar_of(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_the_code_lands_whole_under_its_digest_in_a_hostile_folder(tmp_path: Path) -> None:
    remote = tmp_path / HOSTILE
    line = lines.push_code(remote_path(str(remote)), "abc123")
    assert sh(line, tmp_path, tar_of({"potato/__init__.py": b"x = 1\n"})).returncode == 0
    assert (remote / "code" / "abc123" / "potato" / "__init__.py").read_text() == "x = 1\n"
    assert not (remote / "code" / "abc123.tmp").exists() and not (tmp_path / "pwned").exists()
    # a broken stream leaves the last good copy and no half one
    assert sh(line, tmp_path, b"not a tar").returncode != 0
    assert (remote / "code" / "abc123" / "potato" / "__init__.py").exists()


def test_the_agent_line_keeps_every_config_value_one_word(tmp_path: Path) -> None:
    """The config refuses such env names and backend names already; the line does not rely on it."""
    line = lines.agent_line(
        remote_path("~/potato x"), "d1g", shlex.quote("/usr/bin/python3"), {"EXAMPLE": HOSTILE}, f"/tmp/{HOSTILE}/s",
        HOSTILE, "run-1", [HOSTILE], lines.container_args(Container("docker", HOSTILE, (HOSTILE,))), host=HOSTILE)
    words = shlex.split(line.split(" && exec env ", 1)[1])
    assert words[0] == f"EXAMPLE={HOSTILE}"
    assert words[words.index("--backend") + 1] == HOSTILE and words[words.index("--run") + 1] == "run-1"
    assert words[words.index("--server") + 1] == f"unix:/tmp/{HOSTILE}/s"
    assert words[words.index("--session") + 1] == HOSTILE  # the host as the server names it, for its messages
    assert f"--pass-env={HOSTILE}" in words and words[words.index("--container-image") + 1] == HOSTILE
    assert f"--container-option={HOSTILE}" in words


def test_clean_up_removes_only_the_run_s_folders(tmp_path: Path) -> None:
    socket_dir, job, other = tmp_path / f"s {HOSTILE}", tmp_path / "jobs" / "r1", tmp_path / "jobs" / "r2"
    for folder in (socket_dir, job, other):
        folder.mkdir(parents=True)
    kept = lines.clean_up(str(socket_dir), None, ["echo before"])
    out = sh(kept, tmp_path)
    assert out.stdout == b"before\n" and not socket_dir.exists() and job.exists()
    socket_dir.mkdir()
    assert sh(lines.clean_up(str(socket_dir), shell([str(job)])), tmp_path).returncode == 0
    assert not socket_dir.exists() and not job.exists() and other.exists()
    assert not (tmp_path / "pwned").exists()


def test_the_venv_line_quotes_the_packages(tmp_path: Path) -> None:
    line = lines.build_venv("~/r", "~/r/venvs/k", "", "/usr/bin/python3", [HOSTILE, "scikit-learn>=1.3"])
    assert shlex.split(line.split(" install --disable-pip-version-check --no-input ", 1)[1])[:2] == [
        HOSTILE, "scikit-learn>=1.3"]
    assert lines.venv_built(remote_path(str(tmp_path / HOSTILE))).startswith("test -f ")
