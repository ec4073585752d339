"""The test rig's own logic (issue 25): which modules share the rig's worker under pytest-xdist, and
the known_hosts lines the container rig adds and takes out again."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import scope_of

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_that_reaches_the_rig_shares_one_worker_and_the_rest_keep_their_own() -> None:
    for module in ("tests/integration/test_ssh.py", "tests/integration/test_slurm.py",
                   "tests/integration/test_spans_backends.py", "tests/faults/test_token_scan.py",
                   "tests/tutorial/test_tutorial.py"):
        assert scope_of(module) == "the test rig", module
    assert scope_of("tests/integration/test_agent.py") == "tests/integration/test_agent.py"
    assert scope_of("tests/unit/test_cli.py") == "tests/unit/test_cli.py"


def _containers_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("rig_containers", ROOT / "tests" / "rig" / "containers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_rig_adds_its_host_keys_and_takes_out_only_those(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _containers_module()
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir(mode=0o700)
    mine = "[127.0.0.1]:22022 ssh-ed25519 AAAAhostrig\ngpu.example.org ssh-ed25519 AAAAother\n"
    (tmp_path / ".ssh" / "known_hosts").write_text(mine)
    rig.known_hosts({40001: "ssh-ed25519 AAAAone", 40002: "ssh-ed25519 AAAAtwo"}, add=True)
    text = (tmp_path / ".ssh" / "known_hosts").read_text()
    assert text == mine + "[127.0.0.1]:40001 ssh-ed25519 AAAAone\n[127.0.0.1]:40002 ssh-ed25519 AAAAtwo\n"
    assert (tmp_path / ".ssh" / "known_hosts").stat().st_mode & 0o777 == 0o600
    rig.known_hosts({40001: "ssh-ed25519 AAAAnew"}, add=True)  # a port reused by a later rig: its key replaces
    assert (tmp_path / ".ssh" / "known_hosts").read_text().count("[127.0.0.1]:40001 ") == 1
    rig.known_hosts({40001: "", 40002: ""}, add=False)
    assert (tmp_path / ".ssh" / "known_hosts").read_text() == mine


def test_free_ports_are_distinct() -> None:
    ports = _containers_module().free_ports(5)
    assert len(set(ports)) == 5 and all(0 < p < 65536 for p in ports)


def test_a_second_session_on_one_rig_is_refused_naming_the_first(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.harness.sshd import _HELD, hold_rig

    holder = subprocess.Popen([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                               "from pathlib import Path; from tests.harness.sshd import hold_rig; hold_rig(Path(sys.argv[2])); "
                               "print('held', flush=True); sys.stdin.read()", str(ROOT), str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(pytest.fail.Exception) as refused:
            hold_rig(tmp_path)
        assert f"is in use by a test session (pid {holder.pid})" in str(refused.value)
    finally:
        holder.communicate("", timeout=30)
    hold_rig(tmp_path)  # free again once that session ended
    _HELD.pop(str(tmp_path)).close()
