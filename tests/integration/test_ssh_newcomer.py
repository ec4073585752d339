"""What a newcomer meets setting up an ssh backend (issue 21), against the real sshd: the check
follows the backend's `packages` (R14, R17), its advice for a missing package is a config snippet
that works (Debian's Python refuses `pip install`), ssh failures name the exact command or setting
to fix (E1), and a check after a changed key never rides on the old key's connection.

Tests that leave files on the host get a throwaway account (its own HOME), so the ``trainer``
account the other suites use is never changed; every control master a test's checks open is
closed at its end."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest
import yaml

from potato.config.schema import SshBackendSettings
from potato.server.training.backends.ssh.command import SshTarget
from tests.harness.waiting import wait_until
from tests.harness.runs import TERMINAL, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.sshd import SshHost, start_sshd

pytestmark = [pytest.mark.integration, pytest.mark.rig]


@pytest.fixture(scope="module")
def sshd() -> SshHost:
    """The rig's sshd running; it clears nothing of the trainer's (these tests write on the host only
    in accounts of their own)."""
    return start_sshd(clean=False)


@pytest.fixture
def account(sshd: SshHost) -> Iterator[SshHost]:
    """A new account on the test host that logs in with the rig's key, removed (home and all) afterwards."""
    with sshd.account() as host:
        yield host


def backend_config(host: SshHost, trainer: str | None = None, /, **extra: Any) -> Dict[str, Any]:
    """model_training with one ssh backend, ``gpu`` (``extra`` overrides its keys, ``host`` too)."""
    config: Dict[str, Any] = {"model_training": {
        "enabled": True,
        "grace_seconds": 2,
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.0},
        "backends": {"gpu": host.backend(**extra)},
    }}
    if trainer:
        config["model_training"]["trainer"] = trainer
    return config


@pytest.fixture
def checks(make_project: Callable[..., Path]) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """``potato training check gpu config.yaml`` on a config with the given model_training; the
    control masters the checks opened are ended afterwards."""
    made: list[Path] = []

    def _check(config: Dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
        path = make_project(**config)
        made.append(path)
        return subprocess.run([sys.executable, "-m", "potato", "training", "check", "gpu", str(path), *args],
                              capture_output=True, text=True, timeout=150)

    yield _check
    for path in made[:1]:  # one project folder: one control folder
        end_masters(path)


def control_of(config_path: Path) -> Path:
    from potato.server.training.backends.ssh.host import control_dir

    return control_dir(config_path.parent / "annotation_output" / "training")


def masters(config_path: Path) -> Dict[int, str]:
    """pid -> control socket of the ssh control masters this project's checks and runs opened."""
    control = str(control_of(config_path)) + "/"
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if cmdline.startswith("ssh: " + control) and "[mux]" in cmdline:
            found[int(proc.name)] = cmdline[len("ssh: "):].split(" ")[0]
    return found


def end_masters(config_path: Path) -> None:
    for pid in masters(config_path):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    wait_until(lambda: not masters(config_path), timeout=10, what="the test's ssh connections to close")
    try:
        control_of(config_path).rmdir()
    except OSError:
        pass


# -- 1. the check follows `packages` ------------------------------------------------------------------

def test_the_check_counts_the_backends_packages_then_asks_the_venv_a_run_built(
        account: SshHost, make_server: Callable[..., ServerProcess],
        checks: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """Issue 21 (R14, R17): with `packages: ["scikit-learn"]` the check said "/usr/bin/python3 lacks
    scikit-learn" and exited 1, before and after the run had built the venv that has it."""
    config = backend_config(account, packages=["scikit-learn"])  # the default trainer: sklearn
    before = checks(config)
    assert before.returncode == 0, before.stdout + before.stderr
    assert re.search(r"Packages scikit-learn: not on 127\.0\.0\.1 yet; the first run builds a venv with them "
                     r"\(~/\.cache/potato-training/venvs/[0-9a-f]{16}; ", before.stdout), before.stdout
    assert "Trainer 'sklearn-text-classification' could not be imported" not in before.stdout

    srv = make_server(config)  # a run with the default trainer builds the venv and trains in it
    run = start(srv, trainer="sklearn-text-classification", schemas=["sentiment"], backend="gpu")
    done = wait(srv, run["id"], TERMINAL, timeout=600)
    assert done["state"] == "succeeded", done

    after = checks(config)
    assert after.returncode == 0, after.stdout + after.stderr
    venv = re.search(r"Packages scikit-learn: venv (~/\.cache/potato-training/venvs/[0-9a-f]{16}) on 127\.0\.0\.1 "
                     r"\(built\); a run's worker uses its Python\.", after.stdout)
    assert venv, after.stdout
    assert "Trainer 'sklearn-text-classification' could not be imported" not in after.stdout
    report = json.loads(checks(config, "--json").stdout)
    assert report["ok"] is True and report["packages_venv"] == {"path": venv.group(1), "built": True}

    # It is the venv's Python that answers: without scikit-learn there, the check says so.
    folder = venv.group(1).replace("~", f"/home/{account.user}", 1)
    gone = account.run(f"rm -rf {folder}/lib/python3*/site-packages/sklearn")
    assert gone.returncode == 0, gone.stderr
    broken = checks(config)
    assert broken.returncode == 1
    assert (f"Trainer 'sklearn-text-classification' could not be imported on 127.0.0.1: the packages venv's Python "
            f"({venv.group(1)}/bin/python) lacks scikit-learn (") in broken.stdout


# -- 2. the advice for a missing package -------------------------------------------------------------

def test_a_missing_package_is_fixed_with_the_config_snippet_the_check_gives(
        account: SshHost, checks: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """Issue 21 (E4): the advice was `/usr/bin/python3 -m pip install scikit-learn`, which Debian 12's
    Python refuses (externally managed). Now it is the `packages:` lines to add; with them, the check
    says a run can start."""
    config = backend_config(account, packages=["six"])
    out = checks(config)
    assert out.returncode == 1
    assert "pip install" not in out.stdout
    assert out.stdout.startswith("gpu (ssh to 127.0.0.1): Python 3."), out.stdout
    assert ("Trainer 'sklearn-text-classification' could not be imported on 127.0.0.1: /usr/bin/python3 lacks "
            "scikit-learn (add it to the backend's packages, and a run builds a venv with it; or point `python:` "
            "at the python of a venv on 127.0.0.1 that has it)") in out.stdout
    lines = out.stdout.splitlines()
    at = lines.index("For trainer 'sklearn-text-classification', set in config.yaml:")
    snippet = lines[at + 1:]
    assert snippet == ["  model_training:", "    backends:", "      gpu:", '        packages: ["six", "scikit-learn"]']

    fixed = yaml.safe_load("\n".join(snippet))  # what the user pastes into the config
    config["model_training"]["backends"]["gpu"].update(fixed["model_training"]["backends"]["gpu"])
    again = checks(config)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Packages six, scikit-learn: not on 127.0.0.1 yet" in again.stdout


# -- 3. ssh's failures name the exact command or setting ------------------------------------------------

def test_the_host_key_advice_is_the_ssh_command_that_logs_in(
        sshd: SshHost, checks: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    """Issue 21 (E1): with a port and a user, the advice was "connect once by hand: ssh 127.0.0.1",
    which reaches neither that port nor that account. known_hosts has the rig's key for 127.0.0.1,
    not for the name localhost."""
    out = checks(backend_config(sshd, "noop", host="localhost"))
    assert out.returncode == 1
    command = f"ssh -p {sshd.port} -i {sshd.identity_file} trainer@localhost"
    assert (f"gpu (ssh to localhost): ssh to localhost failed: Host key verification failed. Add the host's key to "
            f"known_hosts of the user that runs the server (connect once by hand: {command}).") in out.stdout
    # The command as given logs in (here accepting the key into a known_hosts of the test's own).
    words = shlex.split(command)
    tried = subprocess.run([words[0], "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
                            "-o", f"UserKnownHostsFile={tmp_path / 'known_hosts'}", *words[1:], "true"],
                           capture_output=True, text=True, timeout=60)
    assert tried.returncode == 0, tried.stderr


def test_a_misspelt_host_or_a_wrong_port_names_the_setting(
        sshd: SshHost, checks: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """Issue 21 (E1): "Could not resolve hostname" came with no fix."""
    out = checks(backend_config(sshd, "noop", host="gpu-servr"))
    assert out.returncode == 1
    assert ("ssh to gpu-servr failed: Could not resolve host 'gpu-servr': check `host` of backend 'gpu' in the "
            "config") in out.stdout
    out = checks(backend_config(sshd, "noop", port=22023))
    assert out.returncode == 1
    assert ("ssh to 127.0.0.1 failed: nothing accepts connections on port 22023 there (Connection refused): check "
            "`port` of backend 'gpu' in the config") in out.stdout


def test_the_command_to_try_by_hand_leaves_out_what_the_backend_does_not_set() -> None:
    """Issue 21: no -p for the default port, no USER@ without a user, -i only with an identity_file."""
    def by_hand(**extra: Any) -> str:
        return SshTarget(SshBackendSettings(name="gpu", host="gpu.example.org", **extra), Path("/c")).by_hand()

    assert by_hand() == "ssh gpu.example.org"
    assert by_hand(port=22, user="alice") == "ssh alice@gpu.example.org"
    assert by_hand(port=2222, identity_file="/keys/id gpu") == "ssh -p 2222 -i '/keys/id gpu' gpu.example.org"


# -- 4. a changed key never rides on the old connection ---------------------------------------------

def test_a_check_after_the_key_changed_logs_in_with_the_new_key(
        sshd: SshHost, checks: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    """Issue 21 (R13): the check kept its ssh connection for keep_connection_s and the next check
    joined it whatever `identity_file` now said, so a wrong key passed right after a good check.
    (keep_connection_s: 600 keeps every connection for the whole test; they are ended after it.)"""
    def kept(**extra: Any) -> Dict[str, Any]:
        return backend_config(sshd, "noop", keep_connection_s=600, **extra)

    good = checks(kept())
    assert good.returncode == 0, good.stdout + good.stderr
    project = tmp_path / "project" / "config.yaml"
    first = masters(project)
    assert len(first) == 1, first
    assert all(len(path) + 17 < 104 for path in first.values()), first  # ssh binds <path>.<16 chars> first

    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    wrong = checks(kept(identity_file=str(stranger)))
    assert wrong.returncode == 1, wrong.stdout
    assert ("gpu (ssh to 127.0.0.1): ssh to 127.0.0.1 failed: Permission denied. Potato runs ssh with "
            "BatchMode=yes") in wrong.stdout
    assert f"try `ssh -o BatchMode=yes -p {sshd.port} -i {stranger} trainer@127.0.0.1 true`" in wrong.stdout

    missing = checks(kept(identity_file=str(tmp_path / "no-such-key")))
    assert missing.returncode == 1, missing.stdout
    assert (f"Permission denied. The identity_file {tmp_path / 'no-such-key'} cannot be read (No such file or "
            "directory): set `identity_file` of backend 'gpu' in the config to the private key's path.") in missing.stdout

    # The key replaced in place by one the host does not know is another login too.
    replaced = tmp_path / "replaced"
    shutil.copyfile(sshd.identity_file, replaced)
    replaced.chmod(0o600)
    assert checks(kept(identity_file=str(replaced))).returncode == 0
    shutil.copyfile(stranger, replaced)
    again = checks(kept(identity_file=str(replaced)))
    assert again.returncode == 1 and "Permission denied" in again.stdout, again.stdout

    assert checks(kept()).returncode == 0  # the good key still logs in
    assert set(first) <= set(masters(project))  # on the connection it opened first
