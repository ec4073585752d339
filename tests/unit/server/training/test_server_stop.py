"""A server that stops during an ssh or SLURM run leaves the run to the restarted server: a step
cut off by the stop does not fail it (DESIGN: "a server restart loses no run").

CI saw the SIGTERM case of the integration test fail once: the stop's signal to the server's
process group ended the ssh client of the step in progress (exit 255), and the stopping server
recorded that as the run's failure, while the agent's session, a group of its own, went on."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from potato.config.schema import SshBackendSettings
from potato.server.serving import stopping
from potato.server.training.dispatcher import Dispatcher
from potato.server.training.backends.ssh.remoterun import RemoteRun
from potato.server.training.runs.store import RunState
from potato.server.training.backends.ssh.command import SshFailed, SshTarget
from potato.server.training.backends.ssh.host import PROBE_STEP, run_ssh

BACKEND = SshBackendSettings(name="gpu", host="gpu.example.org", user="trainer")


def fake_ssh(folder: Path) -> None:
    """An ``ssh`` that runs its command here with sh, as sshd would run it there."""
    ssh = folder / "ssh"
    ssh.write_text('#!/bin/sh\nfor last; do :; done\nexec sh -c "$last"\n')
    ssh.chmod(ssh.stat().st_mode | stat.S_IXUSR)


def test_a_step_s_ssh_client_is_a_process_group_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of reach of a signal to the server's group (Ctrl-C in its terminal, a stop)."""
    fake_ssh(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    out = run_ssh(SshTarget(BACKEND, tmp_path), "cut -d' ' -f5,6 /proc/$$/stat", step=PROBE_STEP)
    group, session = (int(n) for n in out.stdout.split())
    assert group != os.getpgid(0) and session != os.getsid(0)


class FailsAtAStep(RemoteRun):
    """A run whose step fails as a step's ssh does when a signal ends its client."""

    cleaned = False

    def execute(self) -> None:
        raise SshFailed("ssh to gpu.example.org failed: the connection ended while looking at the agent's socket, "
                        "without a message (ssh exited 255)")

    def clean_up(self) -> None:
        self.cleaned = True


def a_running_run(app: Any) -> tuple[Dispatcher, str]:
    dispatcher: Dispatcher = app.extensions["potato.dispatcher"]
    run = dispatcher.store.create("noop", ["sentiment"], "gpu", {})
    dispatcher.store.move(run.id, RunState.PREPARING)
    dispatcher.store.move(run.id, RunState.RUNNING)
    return dispatcher, run.id


def drive(dispatcher: Dispatcher, run_id: str) -> FailsAtAStep:
    run = dispatcher.store.get(run_id)
    assert run is not None
    remote = FailsAtAStep(dispatcher.project, dispatcher.store, run, "", BACKEND, "")
    remote.drive()
    return remote


def test_a_step_that_fails_while_the_server_stops_leaves_the_run_to_the_next_server(
        app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stopping, "requested", threading.Event())
    stopping.requested.set()
    dispatcher, run_id = a_running_run(app)
    remote = drive(dispatcher, run_id)
    run = dispatcher.store.get(run_id)
    assert run is not None and run.state is RunState.RUNNING
    assert not remote.cleaned  # the job folder and the agent's socket belong to the next server now
    log = (dispatcher.store.run_dir(run_id) / "run.log").read_text()
    assert "The server is stopping; it leaves the run to the restarted server (ssh to gpu.example.org failed" in log


def test_the_same_failure_while_the_server_runs_fails_the_run(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stopping, "requested", threading.Event())
    dispatcher, run_id = a_running_run(app)
    remote = drive(dispatcher, run_id)
    run = dispatcher.store.get(run_id)
    assert run is not None and run.state is RunState.FAILED and "exited 255" in (run.message or "")
    assert remote.cleaned
