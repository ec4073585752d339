"""ssh command lines, remote quoting and GPU choice: pure (R13, R15, E1-E3)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from potato.config.schema import SshBackendSettings
from potato.server.training.backends.ssh.command import (
    SshTarget,
    client_env,
    connect_error,
    framed,
    preamble_notice,
    preamble_text,
    remote_path,
    shell,
    unframe,
)
from potato.training.gpus.nvidia import Gpu, NoGpuFree, choose_gpus

HOSTILE = "a'; echo foo"


def test_flags_follow_the_backend_and_the_host_cannot_be_an_option() -> None:
    b = SshBackendSettings(name="gpu", host="-oProxyCommand=touch /tmp/x", user="alice", port=2222,
                   identity_file="~/.ssh/id_ed25519")
    argv = SshTarget(b, Path("/c")).argv("true")
    assert argv[:3] == ["ssh", "-o", "BatchMode=yes"]
    assert argv[argv.index("-l") + 1] == "alice" and argv[argv.index("-p") + 1] == "2222"
    assert argv[argv.index("-i") + 1] == str(Path("~/.ssh/id_ed25519").expanduser())
    assert argv[-3:] == ["--", "-oProxyCommand=touch /tmp/x", "true"]  # after --: a host, never an option
    path = next(a for a in argv if a.startswith("ControlPath="))
    assert path.startswith("ControlPath=/c/") and path.endswith("-%C")  # issue 21: the login's hash, then %C



def test_the_connection_outlives_a_run_for_keep_connection_s() -> None:
    """One control master per backend; keep_connection_s: 0 still gives a run's commands one
    connection (the run closes it at its end)."""
    kept = SshTarget(SshBackendSettings(name="gpu", host="h"), Path("/c")).argv("true")
    assert "ControlMaster=auto" in kept and "ControlPersist=60" in kept
    closing = SshTarget(SshBackendSettings(name="gpu", host="h", keep_connection_s=0), Path("/c"))
    assert "ControlPersist=10" in closing.argv("true")
    assert closing.stop_master()[-4:] == ["-O", "stop", "--", "h"]  # a run's end spares what else is on it
    assert closing.cancel_forward("/tmp/x/agent.sock:127.0.0.1:8000")[-6:] == [
        "-O", "cancel", "-R", "/tmp/x/agent.sock:127.0.0.1:8000", "--", "h"]


def test_hostile_paths_stay_one_word_on_the_remote_shell(tmp_path: Path) -> None:
    """What the remote login shell does with our command line, checked with a real sh."""
    target = tmp_path / HOSTILE
    line = f"mkdir -p {remote_path(str(target))} && printf %s {shell([HOSTILE])}"
    out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True)
    assert out.stdout == HOSTILE and target.is_dir()
    assert not (tmp_path / "a").exists()


def test_a_tilde_path_means_the_remote_home(tmp_path: Path) -> None:
    line = f"printf %s {remote_path('~/.cache/x y')}"
    out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True, env={"HOME": "/home/t"})
    assert out.stdout == "/home/t/.cache/x y"


def test_ssh_failures_read_as_the_tutorial_says() -> None:
    denied = connect_error("gpu.example.org", "trainer@127.0.0.1: Permission denied (publickey).\n")
    assert str(denied).startswith("ssh to gpu.example.org failed: Permission denied")
    other = connect_error("gpu.example.org", "ssh: Could not resolve hostname gpu.example.org: Name or service not known\n")
    assert str(other) == "ssh to gpu.example.org failed: ssh: Could not resolve hostname gpu.example.org: Name or service not known"


GPUS = [Gpu(0, "A100", 81920, 1200, 99), Gpu(1, "A100", 81920, 70000, 5), Gpu(2, "A100", 81920, 70000, 80)]


def test_auto_takes_the_most_free_memory_not_the_least_busy() -> None:
    choice = choose_gpus(GPUS, "auto", 2000)
    assert choice.cuda_visible_devices == "1" and "70000 MB free" in choice.text


def test_auto_refuses_when_no_gpu_has_enough_free() -> None:
    with pytest.raises(NoGpuFree, match="^No GPU has 80000 MB free"):
        choose_gpus(GPUS, "auto", 80000)


def test_pins_none_and_a_host_without_gpus() -> None:
    assert choose_gpus(GPUS, "0,2", 2000).cuda_visible_devices == "0,2"
    assert choose_gpus(GPUS, "none", 2000).cuda_visible_devices == ""
    assert choose_gpus([], "auto", 2000).text == "the CPU (no GPU on this host)"
    with pytest.raises(NoGpuFree, match="GPU 7 is not on this host"):
        choose_gpus(GPUS, "7", 2000)


CU121 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
"""torch.cuda.get_arch_list() of a torch 2.x CUDA 12.1 wheel."""


@pytest.mark.parametrize("capability, expected", [
    ((8, 9), True),    # RTX 4090: the sm_86 binary runs on 8.9
    ((9, 0), True),    # H100
    ((3, 7), False),   # K80: too old for this build
    ((10, 0), False),  # a newer generation without a binary or PTX for it
])
def test_kernels_for_a_gpu_generation(capability: tuple, expected: bool) -> None:
    from potato.training.gpus.nvidia import has_kernels

    assert has_kernels(CU121, capability) is expected
    assert has_kernels(CU121 + ["compute_90"], (10, 0)) is True  # PTX: compiled for it at load time


def test_auto_skips_gpus_without_kernels_and_says_so_when_none_is_left() -> None:
    from potato.training.gpus.nvidia import gpus_without_kernels

    probe = {"arch": CU121, "capabilities": [[8, 0], [3, 7], [3, 7]]}
    assert gpus_without_kernels(probe) == [1, 2]
    assert gpus_without_kernels({}) == []  # no torch there: nothing to say
    choice = choose_gpus(GPUS, "auto", 1000, no_kernels=[1, 2])
    assert choice.cuda_visible_devices == "0"  # GPUs 1 and 2 have more free memory, but no kernels
    with pytest.raises(NoGpuFree, match="^This host's torch has no kernels for any of its GPUs"):
        choose_gpus(GPUS, "auto", 2000, no_kernels=[0, 1, 2])


LOGIN_SHELLS = [
    "",                                                  # a quiet one
    'echo "Welcome to the GPU box"; ',                   # ~/.bashrc's greeting, on stdout
    "printf 'no newline'; echo on stderr >&2; ",         # text without a line end, and on stderr
    "set -v; ",                                          # echoes every command it reads (to stderr)
]


@pytest.mark.parametrize("login", LOGIN_SHELLS)
def test_a_framed_command_s_output_is_its_own_whatever_the_login_shell_prints(login: str) -> None:
    """Run through real shells the way sshd runs them (``bash -c``), after what a ~/.bashrc does."""
    line = framed("printf 'payload\\n'; printf 'err\\n' >&2; exit 3", "0123abcd")
    out = subprocess.run(["bash", "-c", f"{login}bash -c {shlex.quote(line)}"], capture_output=True)
    head, tail = unframe(out.stdout, "0123abcd"), unframe(out.stderr, "0123abcd")
    assert out.returncode == 3 and head.found and tail.found
    assert head.payload == b"payload\n" and tail.payload == b"err\n"
    assert head.pid == tail.pid and head.pid is not None and head.pid > 1
    if "Welcome" in login:
        assert preamble_text(head.preamble, tail.preamble) == "Welcome to the GPU box"


def test_output_without_the_start_line_was_never_the_command_s() -> None:
    frame = unframe(b"Welcome\nbash: exit 1\n", "0123abcd")
    assert not frame.found and frame.payload == b"" and frame.preamble.startswith(b"Welcome")
    assert not unframe(b"potato-ffff-start 12\nx", "0123abcd").found  # another command's nonce


def test_the_login_shell_s_text_is_named_in_one_line() -> None:
    text = preamble_text(b"Welcome to the GPU box\n" + b"x" * 100, b"")
    assert text == "Welcome to the GPU box " + "x" * 57 + "..."
    assert preamble_notice("gpu", "Hi") == ("The login shell on gpu printed text before the command's output (from "
                                            "~/.bashrc or similar); it is ignored: 'Hi'")


def test_the_ssh_client_sees_what_ssh_needs_and_no_server_secret() -> None:
    server = {"PATH": "/usr/bin", "HOME": "/srv/potato", "USER": "potato", "LOGNAME": "potato", "LANG": "C.UTF-8",
              "LC_ALL": "C.UTF-8", "SSH_AUTH_SOCK": "/run/agent.sock", "SSH_AGENT_PID": "12", "KRB5CCNAME": "FILE:/t",
              "HF_TOKEN": "hf_x", "AWS_SECRET_ACCESS_KEY": "a", "AWS_ACCESS_KEY_ID": "b", "POTATO_ADMIN_KEY": "k",
              "DISPLAY": ":0", "PYTHONPATH": "/x", "LD_PRELOAD": "/evil.so"}
    assert client_env(server) == {k: v for k, v in server.items() if k in (
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "KRB5CCNAME")}
