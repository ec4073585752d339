"""The doorbell that starts a queued run at once, across processes (R4's start latency), and where it
lives: outside the project, so that a copy of the project folder works (issue 33 item 15)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from potato.db import Database
from potato.server.training.runs.store import RunState, RunStore
from potato.server.training.runs.wakeup import Wakeup, bell_base


def test_a_ring_from_another_process_wakes_the_listener(tmp_path: Path) -> None:
    bell = Wakeup(tmp_path / "dispatcher.wake")
    bell.ring()  # nobody listens yet: nothing happens, nothing fails
    assert bell.listen()
    assert stat.S_IMODE(os.stat(bell.path).st_mode) == 0o600
    assert not bell.wait(0.01)
    code = f"from potato.server.training.runs.wakeup import Wakeup; from pathlib import Path; Wakeup(Path({str(bell.path)!r})).ring()"
    for _ in range(3):  # several rings before the listener looks: one wake-up takes them all
        subprocess.run([sys.executable, "-c", code], check=True)
    assert bell.wait(5)
    assert not bell.wait(0.01)
    bell.close()
    bell.ring()  # the listener gone: still nothing fails


def test_a_file_in_the_bells_place_is_replaced_not_written(tmp_path: Path) -> None:
    path = tmp_path / "dispatcher.wake"
    path.write_text("not a fifo")
    Wakeup(path).ring()
    assert path.read_text() == "not a fifo"
    bell = Wakeup(path)
    assert bell.listen() and stat.S_ISFIFO(os.lstat(path).st_mode)
    bell.close()


# -- where the bell is: never in the project (issue 33 item 15) -----------------------------------

def test_the_bell_is_outside_the_project_in_a_folder_only_this_user_enters(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("RUNTIME_DIRECTORY", raising=False)
    (tmp_path / "run").mkdir(mode=0o755)
    training = tmp_path / "project" / "annotation_output" / "training"
    bell = Wakeup.of(training)
    assert bell.path is not None and bell.path.parent == tmp_path / "run" / f"potato-bell-{os.getuid()}"
    assert bell.listen()
    assert stat.S_IMODE(os.stat(bell.path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(bell.path).st_mode) == 0o600
    assert not (tmp_path / "project").exists()
    Wakeup.of(training).ring()  # any other process of the server finds the same one
    assert bell.wait(5)
    other = Wakeup.of(tmp_path / "second" / "annotation_output" / "training")
    assert other.path != bell.path  # a second server on the machine has a bell of its own
    bell.close()


def test_a_bell_folder_another_user_could_enter_is_tightened(tmp_path: Path) -> None:
    folder = tmp_path / f"potato-bell-{os.getuid()}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    bell = Wakeup(folder / "x.wake")
    assert bell.listen() and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    bell.close()


@pytest.mark.parametrize(("environ", "tempdir", "cwd", "base"), [
    ({"RUNTIME_DIRECTORY": "/run/potato"}, "/tmp", "/srv/potato", "/run/potato"),  # the systemd unit's
    ({"RUNTIME_DIRECTORY": "/run/potato:/run/other"}, "/tmp", "/", "/run/potato"),
    ({"XDG_RUNTIME_DIR": "/run/user/1000"}, "/tmp", "/home/me", "/run/user/1000"),
    ({}, "/tmp", "/tmp", "/tmp"),
    ({"TMPDIR": "/scratch"}, "/scratch", "/scratch", "/scratch"),
    ({}, "/srv/potato", "/srv/potato", None),  # no temporary folder writable: never the project's folder
])
def test_where_the_bells_go(environ: dict, tempdir: str, cwd: str, base: str | None) -> None:
    assert bell_base(environ, tempdir, cwd) == base


def test_a_bell_removed_by_a_clean_up_is_made_again(tmp_path: Path) -> None:
    bell = Wakeup(tmp_path / "b" / "x.wake")
    assert bell.listen()
    assert bell.path is not None
    bell.path.unlink()
    bell.heal()
    Wakeup(bell.path).ring()
    assert bell.wait(5)
    bell.close()


def test_a_run_s_bell_rings_when_another_process_moves_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43 (item 3): the ssh backend's copy-back starts when the agent's report moves the run to
    copying, told by the run's bell (the report lands in any of gunicorn's workers), not by a poll."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    store = RunStore(Database(tmp_path / "db.sqlite3"), tmp_path / "training" / "runs")
    run = store.create("noop", ["sentiment"], "gpu", {})
    assert store.move(run.id, RunState.PREPARING) and store.move(run.id, RunState.RUNNING)
    bell = Wakeup.of(store.runs_dir.parent, run.id)
    assert bell.listen() and bell.path != Wakeup.of(store.runs_dir.parent).path  # the run's own
    assert not bell.wait(0.01)
    code = ("import sys; from pathlib import Path; from potato.db import Database; "
            "from potato.server.training.runs.store import RunState, RunStore; "
            "RunStore(Database(Path(sys.argv[1])), Path(sys.argv[2])).move(sys.argv[3], RunState.COPYING)")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "db.sqlite3"), str(store.runs_dir), run.id],
                   check=True, env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run")})
    assert bell.wait(5) and store.get(run.id).state is RunState.COPYING
    path = bell.path
    bell.remove()
    assert path is not None and not path.exists()  # nobody follows the run: its FIFO is gone
