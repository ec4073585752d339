"""Copy-back's receiving end with real streams from a real process (no ssh needed): a stall is E7,
a hostile name or a short stream keeps nothing, and the host script's own stream round-trips."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from potato.server.training.backends.ssh.copyback import SEND_ARTIFACTS, CopyFailed, receive
from tests.faults.matrix import fault


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


def test_what_the_login_shell_prints_before_the_stream_is_skipped(tmp_path: Path) -> None:
    """A ~/.bashrc greeting (even without a line end) comes before the start line; the files after it."""
    from potato.server.training.backends.ssh.command import framed

    src = tmp_path / "artifacts"
    src.mkdir()
    (src / "weights.bin").write_bytes(b"\x00\x01" * 5000)
    line = framed(f"exec {sys.executable} -c {shlex.quote(SEND_ARTIFACTS)} {src} 1000000", "feedbeef")
    copied = receive(["bash", "-c", f"printf 'Welcome to the GPU box'; echo hi >&2; bash -c {shlex.quote(line)}"],
                     tmp_path / "out", "gpu", lambda g, t: None, nonce="feedbeef")
    assert (tmp_path / "out" / "weights.bin").read_bytes() == b"\x00\x01" * 5000
    assert copied.received == 10000 and copied.preamble == "Welcome to the GPU box hi"


def test_a_stream_without_its_start_line_keeps_nothing(tmp_path: Path) -> None:
    with pytest.raises(CopyFailed, match="ended before the copy began"):
        receive(sh("printf 'Welcome\\n1 \"w.bin\"\\nxend\\n'"), tmp_path / "out", "gpu", lambda g, t: None,
                nonce="feedbeef")
    assert not (tmp_path / "out").exists()


def test_files_over_the_total_cap_all_stay_on_the_host(tmp_path: Path) -> None:
    """80 files of 1 KiB, each under the per-file cap, 80 KiB in all over a total cap of 40 KiB: the
    host sends none (nothing partial) and says where they are."""
    src = tmp_path / "artifacts"
    src.mkdir()
    for i in range(80):
        (src / f"shard-{i:02d}.bin").write_bytes(b"x" * 1024)
    copied = receive([sys.executable, "-c", SEND_ARTIFACTS, str(src), "2048", str(40 * 1024)], tmp_path / "out",
                     "gpu", lambda g, t: None, max_file_bytes=2048, max_total_bytes=40 * 1024)
    assert copied.over_total == (80 * 1024, 80, str(src)) and copied.received == 0
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.part").exists()
    under = receive([sys.executable, "-c", SEND_ARTIFACTS, str(src), "2048", str(80 * 1024)], tmp_path / "out",
                    "gpu", lambda g, t: None, max_total_bytes=80 * 1024)
    assert under.over_total is None and len(list((tmp_path / "out").iterdir())) == 80


def test_a_host_that_sends_more_than_the_total_cap_keeps_nothing_here(tmp_path: Path) -> None:
    with pytest.raises(CopyFailed, match="more than max_artifacts_total_mb"):
        receive(sh("for i in 1 2 3; do printf '1000 \"w%s.bin\"\\n' $i; head -c 1000 /dev/zero; done; printf 'end\\n'"),
                tmp_path / "out", "gpu", lambda g, t: None, max_total_bytes=2500)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.part").exists()


@fault("The disk",
       "The model files coming back would take the disk space kept for annotators",
       "The copy stops before that file and keeps nothing of it; the run fails, the files stay on the host",
       "A message naming disk_reserve_mb; the predictions are already saved",
       lost="no model file is copied (they stay on the host)")
def test_a_copy_that_would_take_the_annotators_disk_reserve_keeps_nothing(tmp_path: Path) -> None:
    """Model files may not take the free space kept for annotators' labels (disk_reserve_mb): the
    copy stops before the file that would, and nothing of it is kept (issue 20)."""
    from potato.server.training.runs.quota import MB, free_bytes

    reserve_mb = free_bytes(tmp_path) // MB - 1  # 1 MB of room left for training
    with pytest.raises(CopyFailed, match=r"disk_reserve_mb \(\d+ MB\)") as failed:
        receive(sh("printf '1000 \"a.bin\"\\n'; head -c 1000 /dev/zero; printf '64000000 \"b.bin\"\\n'; "
                   "head -c 64000000 /dev/zero; printf 'end\\n'"), tmp_path / "out", "gpu", lambda g, t: None,
                reserve_mb=reserve_mb)
    assert "kept for annotators' labels" in str(failed.value)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.part").exists()
