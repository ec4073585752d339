"""What the server asks an ssh host (or a slurm login node) before a run or for a check: one
command each, over the backend's control master.

A run needs the interpreter, the GPUs, whether its code is there already, and a fresh socket folder
with stale ones gone: :func:`probe_host` asks all of it in one remote Python, because every command,
even over an open connection, is a round trip before the agent can start.

Every command goes through :func:`run_ssh`: framed (what the login shell prints is set aside), with
the ssh client's allow-list environment, and with a deadline per :class:`SshStep`; a step that runs
out of time is named, and what it started on the host is stopped by its process group.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from potato.defaults import NVIDIA_SMI_TIMEOUT_S, SSH_STEP_TIMEOUT_S
from potato.server.training.backends.ssh.command import (
    SshFailed,
    SshTarget,
    SshStep,
    client_env,
    connect_error,
    framed,
    new_nonce,
    preamble_text,
    python_missing,
    shell,
    stop_command,
    timed_out,
    unframe,
)
from potato.training.gpus.nvidia import (
    NVIDIA_SMI_ARGS,
    TORCH_PROBE,
    Gpu,
    gpus_without_kernels,
    nvrtc_problem,
    parse_nvidia_smi,
)
from potato.training.launch.codefiles import PRESENT_MARK

log = logging.getLogger(__name__)

PROBE_STEP = SshStep("logging in and looking at the host (its Python, nvidia-smi, Potato's code there)",
                  SSH_STEP_TIMEOUT_S)
TORCH_STEP = SshStep("importing the host's torch to check its GPU kernels", SSH_STEP_TIMEOUT_S,
                  "run `python -c 'import torch'` there by hand: a torch on a slow network file system can take "
                  "minutes to import the first time")
MODULES_STEP = SshStep("looking for the trainers' packages", SSH_STEP_TIMEOUT_S)
STOP_STEP = SshStep("stopping what a timed-out command started", 30)
MASTER_TIMEOUT_S = 30
"""Deadline of a control-master command (``-O cancel``, ``-O stop``): answered by the local master at once."""

PROBE = r"""
import os, sys
print("python " + sys.version.split()[0])
print("executable " + sys.executable)
if sys.version_info < (3, 8):
    sys.exit(3)
import glob, shutil, socket, subprocess
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
if "--smi" in args:
    try:
        smi = subprocess.Popen(["nvidia-smi"] + %(smi)r, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        print("smi-rc 127")
    else:
        try:
            said = smi.communicate(timeout=float(args["--smi"]))[0]
        except subprocess.TimeoutExpired:
            try:
                os.killpg(smi.pid, 9)
            except OSError:
                pass
            print("smi-rc timeout")
        else:
            print("smi-rc %%d" %% smi.returncode)
            for line in said.decode("utf-8", "replace").splitlines():
                print("smi " + line)
    sys.stdout.flush()
if "--code" in args:
    print("code " + ("yes" if os.path.isfile(os.path.join(args["--code"], *%(mark)r)) else "no"))
if "--socket-dir" in args:
    for folder in glob.glob("/tmp/potato-2*-*"):
        path = os.path.join(folder, "agent.sock")
        try:
            if os.lstat(folder).st_uid != os.getuid() or not os.path.exists(path):
                continue
            probe = socket.socket(socket.AF_UNIX)
            probe.settimeout(2)
            probe.connect(path)
            probe.close()
        except (ConnectionRefusedError, FileNotFoundError):
            shutil.rmtree(folder, ignore_errors=True)
            print("stale " + folder)
        except OSError:
            pass
    try:
        os.mkdir(args["--socket-dir"], 0o700)
        os.chmod(args["--socket-dir"], 0o700)
        print("socket-dir ok")
    except OSError as exc:
        print("socket-dir " + str(exc))
""" % {"smi": list(NVIDIA_SMI_ARGS), "mark": list(PRESENT_MARK)}
"""Runs on the host. Parses on any Python so that an old one still reports its version. nvidia-smi
gets ``--smi`` seconds (a hung driver hangs it): then it is killed, with what it started, and the
GPUs are unknown. The socket sweep removes this user's agent socket folders whose socket no one
listens on (a live forward accepts the connection, so another run's socket, even another server's,
is never touched)."""


@dataclass(frozen=True)
class Answer:
    """What one remote command printed (the login shell's text taken out) and how it exited."""

    returncode: int
    stdout: bytes
    stderr: bytes
    preamble: str = ""
    """What the login shell printed before the command (``~/.bashrc``), ignored; empty when nothing."""


def run_ssh(target: SshTarget, command: str, stdin: bytes | None = None, step: SshStep = PROBE_STEP) -> Answer:
    """One command on the host within ``step``'s deadline; ssh's own failure (rc 255) becomes the
    tutorial's message, a deadline passed says which step and stops what it started there. The ssh
    client is a process group of its own, as the agent's session is: a signal to the server's group
    (Ctrl-C in its terminal, a stop) does not cut a run's step off and fail a run that the
    restarted server would take over."""
    nonce = new_nonce()
    try:
        out = subprocess.run(target.argv(framed(command, nonce)), input=stdin, capture_output=True,
                             timeout=step.timeout_s, stdin=None if stdin is not None else subprocess.DEVNULL,
                             env=client_env(os.environ), start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        started = unframe(exc.stdout or b"", nonce).pid  # type: ignore[arg-type]
        raise timed_out(target.host, step, started is not None and stop_remote(target, started)) from None
    head, tail = unframe(out.stdout, nonce), unframe(out.stderr, nonce)
    if out.returncode == 255:  # ssh's own words: before the start line when it never ran, else after it
        raise connect_error(target.host, (tail.payload if tail.found else out.stderr).decode("utf-8", "replace"), step,
                            target)
    if not head.found:
        said = (out.stderr.decode("utf-8", "replace").strip() or out.stdout.decode("utf-8", "replace").strip())
        raise SshFailed(f"The login shell on {target.host} did not run Potato's command while {step.what} "
                        f"(exit {out.returncode}): {said[-300:] or 'no message'}. Potato needs a POSIX login shell "
                        "(sh, bash, zsh) whose start-up files (~/.bashrc) do not exit.")
    return Answer(out.returncode, head.payload, tail.payload if tail.found else out.stderr,
                  preamble_text(head.preamble, tail.preamble if tail.found else b""))


def stop_remote(target: SshTarget, pid: int) -> bool:
    """End the process group ``pid`` leads on the host (a timed-out command's); True when asked."""
    try:
        out = subprocess.run(target.argv(stop_command(pid)), capture_output=True, timeout=STOP_STEP.timeout_s,
                             stdin=subprocess.DEVNULL, env=client_env(os.environ), start_new_session=True)
    except subprocess.TimeoutExpired:
        log.warning("%s: stopping process group %s there took longer than %s s", target.host, pid, STOP_STEP.timeout_s)
        return False
    if out.returncode != 0:
        log.warning("%s: stopping process group %s there failed (exit %s): %s", target.host, pid, out.returncode,
                    out.stderr.decode("utf-8", "replace").strip()[-300:])
    return out.returncode == 0


@dataclass(frozen=True)
class Preparation:
    """What a run asks the probe to look at and get ready: shell words for the host's paths."""

    code_dir: str
    """``remote_dir/code/<hash>``: is this version of Potato there?"""
    socket_dir: str
    """The run's own socket folder in the host's /tmp, made 0700 (after the stale ones are gone)."""


@dataclass(frozen=True)
class HostFacts:
    """What a run (and the check) needs to know about the host before anything is copied there."""

    python_version: str
    python_path: str
    gpus: list[Gpu]
    no_kernels: list[int] = field(default_factory=list)
    """GPUs the host's torch has no kernels for (auto skips them)."""
    nvrtc_error: str | None = None
    """The host's torch could not compile a kernel with NVRTC (a run on a GPU would fail)."""
    code_present: bool = False
    """With a :class:`Preparation`: this version of Potato's code is on the host."""
    stale_socket_dirs: list[str] = field(default_factory=list)
    """With a :class:`Preparation`: socket folders of crashed runs, removed."""
    gpus_unknown: str | None = None
    """Why the GPUs are not listed though the host may have some (nvidia-smi did not answer)."""
    preamble: str = ""
    """What the host's login shell prints before every command (ignored; the run log names it once)."""


def probe_host(target: SshTarget, read_gpus: bool = True, prepare: Preparation | None = None) -> HostFacts:
    """Log in, check the interpreter (>= 3.8), read nvidia-smi (none: no GPU) and, for a run,
    do its :class:`Preparation`, all in one command. A SLURM login node's own GPUs do not matter
    (``read_gpus=False``): its jobs get theirs from gres."""
    host, python = target.host, target.backend.python
    env = target.env_prefix()
    args = ["--smi", str(NVIDIA_SMI_TIMEOUT_S)] if read_gpus else []
    if prepare is not None:
        args += ["--code", prepare.code_dir, "--socket-dir", prepare.socket_dir]
    probe = run_ssh(target, f"{env}{shlex.quote(python)} -c {shlex.quote(PROBE)} " + " ".join(
        word if i % 2 else shlex.quote(word) for i, word in enumerate(args)))  # the paths: already shell words
    said: dict[str, list[str]] = {}
    for line in probe.stdout.decode("utf-8", "replace").splitlines():
        tag, _, value = line.partition(" ")
        said.setdefault(tag, []).append(value)
    version, path = (said.get("python") or [""])[0], (said.get("executable") or [""])[0]
    if probe.returncode == 127 or not version:
        raise python_missing(python, host)
    if probe.returncode == 3:
        raise SshFailed(f"{python} on {host} is Python {version}; Potato needs 3.8 or newer. Set `python` "
                        "in the backend to a newer interpreter.")
    if probe.returncode != 0:
        raise SshFailed(f"Looking at {host} with {python} failed (exit {probe.returncode}): "
                        f"{probe.stderr.decode('utf-8', 'replace').strip()[-500:] or 'no message'}")
    if prepare is not None and said.get("socket-dir") != ["ok"]:
        raise SshFailed(f"Could not create {prepare.socket_dir} on {host}: {(said.get('socket-dir') or ['no answer'])[0]}")
    present, stale = said.get("code") == ["yes"], said.get("stale", [])
    gpus = parse_nvidia_smi("\n".join(said.get("smi", []))) if said.get("smi-rc") == ["0"] else []
    unknown = (f"nvidia-smi on {host} did not answer within {NVIDIA_SMI_TIMEOUT_S} s; the GPUs are not listed"
               if said.get("smi-rc") == ["timeout"] else None)
    if gpus:  # only a host with GPUs can lack kernels for them; importing torch takes seconds
        torch = run_ssh(target, f"{env}{shlex.quote(python)} -c {shlex.quote(TORCH_PROBE)}", step=TORCH_STEP)
        try:
            report = json.loads(torch.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        except (ValueError, IndexError):
            report = {}
        report = report if isinstance(report, dict) else {}
        return HostFacts(version, path, gpus, gpus_without_kernels(report), nvrtc_problem(report), present, stale,
                         preamble=probe.preamble)
    return HostFacts(version, path, gpus, code_present=present, stale_socket_dirs=stale, gpus_unknown=unknown,
                     preamble=probe.preamble)


def master_command(target: SshTarget, argv: list[str], what: str) -> str | None:
    """Run a control-master command (``-O cancel``, ``-O stop``); None when done, else what went wrong."""
    try:
        out = subprocess.run(argv, capture_output=True, timeout=MASTER_TIMEOUT_S, stdin=subprocess.DEVNULL,
                             env=client_env(os.environ))
    except subprocess.TimeoutExpired:
        return f"{what} on the connection to {target.host} took longer than {MASTER_TIMEOUT_S} s"
    if out.returncode != 0:
        said = out.stderr.decode("utf-8", "replace").strip()
        if "No such file" in said or "Connection refused" in said:
            return None  # no master (it closed already): nothing to cancel or stop
        return f"{what} on the connection to {target.host} failed: {said[-300:] or f'exit {out.returncode}'}"
    return None


def close_connection(target: SshTarget) -> str | None:
    """Retire the backend's control master without cutting off what else runs on it (``-O stop``)."""
    return master_command(target, target.stop_master(), "closing")


FIND_MODULES = ("import importlib.util, sys; "
                "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))")


def missing_modules(target: SshTarget, modules: list[str], python: str | None = None) -> list[str]:
    """Which of ``modules`` the host's interpreter cannot import (found, not imported: no torch load);
    ``python`` is another interpreter there as a shell word (the packages venv's), else the backend's."""
    if not modules:
        return []
    interpreter = python if python is not None else shlex.quote(target.backend.python)
    out = run_ssh(target, f"{target.env_prefix()}{interpreter} -c "
                          f"{shlex.quote(FIND_MODULES)} {shell(modules)}", step=MODULES_STEP)
    return out.stdout.decode("utf-8", "replace").split() if out.returncode == 0 else list(modules)


def control_dir(training_dir: Path) -> Path:
    """Where this server's ssh control masters live: a short path (a Unix socket path has at most
    103 bytes on macOS, 107 on Linux, and ssh adds :func:`~potato.server.training.backends.ssh.command.control_name`,
    51, plus 17 while it binds), 0700 and this user's own."""
    digest = hashlib.sha256(str(training_dir.resolve()).encode()).hexdigest()[:10]
    folder = Path(tempfile.gettempdir()) / f"potato-ssh-{os.getuid()}-{digest}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.getuid() or stat.S_ISLNK(info.st_mode) or info.st_mode & 0o077:
        raise SshFailed(f"{folder} (ssh's control sockets) belongs to another user or is open to others; "
                        "remove it and start the run again.")
    return folder


def gpus_unknown_error(why: str, gpus: str) -> str:
    """A run that needs the GPU list (``gpus: auto`` or a pinned GPU) when nvidia-smi did not answer."""
    return (f"{why}, so gpus: {gpus} cannot choose one. Run nvidia-smi on the host: a hung driver needs its "
            "admin (nvidia-smi -r or a reboot); meanwhile gpus: none trains on the CPU.")


def venv_key(python_path: str, packages: Sequence[str]) -> str:
    """The packages venv's folder name under ``remote_dir/venvs``: one per interpreter (its real path
    on the host) and package list; the check looks for the same one a run builds."""
    return hashlib.sha256("\0".join([python_path, *sorted(packages)]).encode()).hexdigest()[:16]
