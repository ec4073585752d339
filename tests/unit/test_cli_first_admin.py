"""Issue 33, what a first-time admin tripped over in the CLI: an output folder others can open (item 4), a
misspelt top-level section that only warned (item 9), `training check`'s config warnings (item 14), and the
port-in-use message that suggested a port it had not checked and cut the holder's command line (item 14)."""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest
import yaml
from click.testing import CliRunner

from potato.cli import cli


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="potato")
    return result.exit_code, result.output


def refusal(*args: str) -> str:
    """What `potato ARGS` stops with (main() prints it as "Error: ...")."""
    result = CliRunner().invoke(cli, list(args), prog_name="potato")
    assert result.exit_code == 1 and result.exception is not None, result.output
    return str(result.exception)


def test_validate_warns_about_an_output_folder_others_can_open(make_project: Callable[..., Path]) -> None:
    config_path = make_project()
    output = config_path.parent / "annotation_output"
    output.mkdir()
    output.chmod(0o755)
    code, out = run("validate", str(config_path))
    assert code == 0
    assert out.splitlines()[0] == (f"warning: output_annotation_dir: other accounts on this machine can open {output} "
                                   f"(mode 0755); make it yours alone: chmod 700 {output}")
    output.chmod(0o700)
    assert run("validate", str(config_path)) == (0, f"{config_path} is valid.\n")


def test_validate_refuses_a_misspelt_section(make_project: Callable[..., Path]) -> None:
    """Issue 33 item 9: `model_trainng:` warned, the config "was valid" and the server started with training off."""
    config_path = make_project(model_trainng={"enabled": True})
    code, out = run("validate", str(config_path))
    assert code == 1
    assert out.splitlines() == [
        "error: model_trainng: not a known key; did you mean 'model_training'? As written, it is ignored: correct "
        "the spelling",
        f"{config_path} has 1 error(s).",
    ]


def test_training_check_says_the_config_warnings_once_before_its_result(make_project: Callable[..., Path]) -> None:
    """Issue 33 item 14: the admin-key warnings came again after the result. Both streams into one pipe, as a
    terminal shows them."""
    config_path = make_project(admin_api_key="changeme")
    config_path.chmod(0o644)
    proc = subprocess.run([sys.executable, "-m", "potato", "training", "check", "local", str(config_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    warnings = [line for line in lines if line.startswith("warning: admin_api_key")]
    assert proc.returncode == 0 and len(warnings) == 2 and len(set(warnings)) == 2
    assert lines[:2] == warnings and lines[2].startswith("local: this machine, ")
    assert len(lines) == 3


@pytest.fixture
def held_port() -> Iterator[tuple[int, list[str]]]:
    """A port held by a process with a long command line (the old message cut it at 80 characters), and the
    port after it held too, so the next port is not the free one."""
    next_one = socket.socket()
    while True:  # a port whose next one is free too
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        try:
            next_one.bind(("127.0.0.1", port + 1))
            break
        except OSError:
            continue
    next_one.listen()
    argv = [sys.executable, "-c", "import socket, sys, time; s = socket.socket(); "
            "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); print('held', flush=True); time.sleep(120)",
            str(port), "--label", "a holder with a long command line that the message used to cut"]
    holder = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield port, argv
    finally:
        next_one.close()
        holder.kill()
        holder.communicate()


def test_start_on_a_taken_port_gives_a_free_port_and_the_whole_command(
        make_project: Callable[..., Path], held_port: tuple[int, list[str]]) -> None:
    port, argv = held_port
    config_path = make_project()
    moved = config_path.parent.rename(config_path.parent.parent / "my project")
    config_path = moved / "config.yaml"
    message = refusal("start", str(config_path), "--host", "127.0.0.1", "--workers", "2", "-p", str(port))
    head, command = message.split("\n")
    holder = f"pid {port_holder_pid(port)} ({shlex.join(argv)})"
    free = int(command.rsplit(" ", 1)[1])
    assert head == f"Port {port} is in use by {holder}. Stop it, or start on port {free}, which is free now:"
    assert command == f"  potato start '{config_path}' --host 127.0.0.1 --workers 2 -p {free}"
    assert free > port + 1
    with socket.socket() as sock:  # it is free: it was checked by binding it
        sock.bind(("127.0.0.1", free))


def port_holder_pid(port: int) -> int:
    from potato.server.serving.ports import port_holder

    holder = port_holder(port)
    assert holder is not None
    return int(holder.split()[1])


def test_a_taken_port_is_said_in_the_configs_own_terms(make_project: Callable[..., Path],
                                                       held_port: tuple[int, list[str]]) -> None:
    """No port on the command line (the config's): the command given is the user's, with -p added."""
    port, _ = held_port
    config_path = make_project(port=port)
    assert yaml.safe_load(config_path.read_text())["port"] == port
    command = refusal("start", str(config_path), "--host", "127.0.0.1").splitlines()[-1]
    assert command.startswith(f"  potato start {config_path} --host 127.0.0.1 -p ")
