"""Copy-back's receiving end with real streams from a real process (no ssh needed): a stall is E7,
a hostile name or a short stream keeps nothing, and the host script's own stream round-trips."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from potato.server.training.copyback import SEND_ARTIFACTS, CopyFailed, receive


def sh(script: str) -> list[str]:
    return ["sh", "-c", script]


def test_the_host_script_round_trips_files_and_names_what_stays(tmp_path: Path) -> None:
    src = tmp_path / "artifacts"
    (src / "sub dir").mkdir(parents=True)
    (src / "labels.json").write_text("{}")
    (src / "sub dir" / "weights one.bin").write_bytes(b"\x00" * 3000)
    (src / "big.bin").write_bytes(b"x" * 5000)
    seen: list[tuple[int, int]] = []
    copied = receive([sys.executable, "-c", SEND_ARTIFACTS, str(src), "4096"], tmp_path / "out", "host",
                     lambda got, total: seen.append((got, total)))
    assert (tmp_path / "out" / "labels.json").read_text() == "{}"
    assert (tmp_path / "out" / "sub dir" / "weights one.bin").stat().st_size == 3000
    assert not (tmp_path / "out" / "big.bin").exists()
    assert copied.received == 3002 and copied.left_behind == [("big.bin", 5000)]
    assert not (tmp_path / "out.part").exists()


def test_a_stream_that_stalls_is_given_up_and_keeps_nothing(tmp_path: Path) -> None:
    with pytest.raises(CopyFailed, match="^The copy from gpu sent nothing for 1 s$"):
        receive(sh("printf '10 \"w.bin\"\\n12345'; sleep 30"), tmp_path / "out", "gpu", lambda g, t: None, stall_s=1)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.part").exists()


@pytest.mark.parametrize("name", ["../escape.bin", "/etc/passwd", "a/../../x", ""])
def test_a_name_outside_the_folder_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(CopyFailed, match="not a plain file inside the artifacts folder"):
        receive(sh(f"printf '1 \"{name}\"\\nx'; printf 'end\\n'"), tmp_path / "out", "gpu", lambda g, t: None)
    assert not (tmp_path / "escape.bin").exists() and not (tmp_path / "out").exists()


def test_a_stream_that_ends_early_keeps_nothing(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.bin").write_text("the earlier copy")
    with pytest.raises(CopyFailed, match="broke off"):
        receive(sh("printf '100 \"w.bin\"\\nshort'"), tmp_path / "out", "gpu", lambda g, t: None)
    assert (tmp_path / "out" / "old.bin").read_text() == "the earlier copy"


def test_the_host_script_runs_on_the_hosts_python_alone(tmp_path: Path) -> None:
    """It is sent as `python -c`: it must need nothing but the standard library."""
    (tmp_path / "a").mkdir()
    out = subprocess.run([sys.executable, "-I", "-c", SEND_ARTIFACTS, str(tmp_path / "a"), "10"],
                         capture_output=True, timeout=30)
    assert out.returncode == 0 and out.stdout == b"end\n" and b"total 0" in out.stderr


def test_a_host_that_sends_more_than_max_artifact_mb_keeps_nothing_here(tmp_path: Path) -> None:
    """The host is asked to keep files over the cap; one that sends one anyway cannot fill this disk."""
    with pytest.raises(CopyFailed, match="over max_artifact_mb"):
        receive(sh("printf '5000000 \"w.bin\"\\n'; head -c 5000000 /dev/zero; printf 'end\\n'"), tmp_path / "out",
                "gpu", lambda g, t: None, max_file_bytes=1024 * 1024)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.part").exists()


def test_a_name_sent_twice_fails_the_copy(tmp_path: Path) -> None:
    with pytest.raises(CopyFailed):
        receive(sh("printf '1 \"w.bin\"\\nx1 \"w.bin\"\\nyend\\n'"), tmp_path / "out", "gpu", lambda g, t: None)
    assert not (tmp_path / "out").exists()
