"""Issue 33 item 4: run folders took their parent's modes. Under an output folder made beforehand as 0755
and a umask of 022, a run's folder was 0755 and its bundle (every item, every label with its annotator's
name), logs and model files 0644: readable by every account on the machine. Whatever the parent and the
umask, everything under training/ is now folders 0700 and files 0600. (A real local run under gunicorn:
tests/integration/test_run_folder_modes.py.)"""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.config import load_config
from potato.server.training.backends.ssh.copyback import SEND_ARTIFACTS, receive
from potato.training.job.private import atomic_file, make_private, open_private, private_dir, write_atomic
from potato.server.training.runs.recorder import RunRecorder, prepare_bundle
from potato.server.training.runs.store import RunState
from potato.server.training.backends.ssh.session import SessionRecord


def loose(root: Path) -> dict[str, str]:
    """Every folder and file under ``root`` (itself included) that another account could open."""
    paths = [root, *root.rglob("*")]
    return {str(p.relative_to(root.parent)): oct(stat.S_IMODE(p.lstat().st_mode)) for p in paths
            if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) & 0o077}


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def open_app(make_project: Callable[..., Path], umask_022: None) -> Iterator[Any]:
    """The app of a project whose output folder was made beforehand, 0755 (a volume, a ``mkdir``)."""
    from potato.server import close_app, create_app

    config_path = make_project(model_training={"enabled": True})
    output = config_path.parent / "annotation_output"
    output.mkdir()
    output.chmod(0o755)
    application = create_app(load_config(config_path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    yield application
    close_app(application)


def test_a_runs_folder_and_files_are_the_servers_alone_whatever_the_parent(open_app: Any) -> None:
    project, store = open_app.extensions["potato"], open_app.extensions["potato.runs"]
    output = project.config.output_annotation_dir
    assert stat.S_IMODE(output.stat().st_mode) == 0o755  # the admin's folder stays as it is (validate warns)
    run = store.create("noop", ["sentiment"], "local", {})
    store.move(run.id, RunState.PREPARING)
    recorder = RunRecorder(project, store, store.get(run.id))
    prepare_bundle(project, store, run, recorder.log, local=True)
    store.move(run.id, RunState.RUNNING)
    recorder.report(0, [{"type": "step", "text": "training"}, {"type": "log", "text": "epoch 1"}], ["agent line"],
                    time.time())
    recorder.agent_log(["the agent's last words"])
    artifacts = project.config.training_dir / "from-a-trainer"
    (artifacts / "tokenizer").mkdir(parents=True)
    (artifacts / "tokenizer" / "vocab.txt").write_text("a\nb\n")  # copied from a cache: 0644 in a 0755 folder
    (artifacts / "model.bin").write_bytes(b"\x00" * 10)
    os.symlink("/etc/hostname", artifacts / "a-link")
    assert recorder.finish(0, {"status": "succeeded", "metrics": {}}, None, None, artifacts) is RunState.SUCCEEDED
    run_dir = store.run_dir(run.id)
    names = {p.name for p in run_dir.rglob("*")}
    assert {"bundle.tar.gz", "run.log", "events.jsonl", "agent.log", "artifacts", "vocab.txt", "model.bin"} <= names
    assert loose(project.config.training_dir) == {}
    assert stat.S_IMODE(os.stat("/etc/hostname").st_mode) & 0o044  # a link's target is left alone


def test_files_an_older_version_left_open_are_narrowed_when_next_written(open_app: Any) -> None:
    project, store = open_app.extensions["potato"], open_app.extensions["potato.runs"]
    training = project.config.training_dir
    (training / "runs").mkdir(parents=True)
    for folder in (training, training / "runs"):
        folder.chmod(0o755)
    run = store.create("noop", ["sentiment"], "local", {})
    log = store.run_dir(run.id) / "run.log"
    log.write_text("written by an older version\n")
    log.chmod(0o644)
    RunRecorder(project, store, run).log.write("and now")
    text = log.read_text()
    assert text.startswith("written by an older version\n") and text.endswith(" and now\n")
    assert loose(training) == {}


def test_model_files_copied_back_from_a_host_and_the_ssh_session_are_the_servers_alone(tmp_path: Path, umask_022: None) -> None:
    src = tmp_path / "on-the-host"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "weights.bin").write_bytes(b"\x00" * 100)
    (src / "config.json").write_text("{}")
    out = tmp_path / "run" / "artifacts"
    private_dir(out.parent)
    receive([sys.executable, "-c", SEND_ARTIFACTS, str(src), "4096"], out, "host", lambda got, total: None)
    assert (out / "sub" / "weights.bin").stat().st_size == 100
    SessionRecord("/tmp/potato-1/x", "python3", 123).write(out.parent)  # an ssh run's session, beside them
    assert (out.parent / "ssh-session.json").exists()
    assert loose(out.parent) == {}


def test_the_helpers_set_modes_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        deep = private_dir(tmp_path / "a" / "b" / "c")
        with open_private(deep / "f", "a", encoding="utf-8") as fh:
            fh.write("x")
        with open_private(deep / "g", "a+") as fh:
            fh.write("y")
            fh.seek(0)
            assert fh.read() == "y"
        other = tmp_path / "other"
        (other / "in").mkdir(parents=True)
        (other / "in" / "f").write_text("z")
        make_private(other)
    finally:
        os.umask(old)
    assert loose(tmp_path / "a") == {} and loose(other) == {}
    assert stat.S_IMODE((deep / "f").stat().st_mode) == 0o600


def test_a_file_is_replaced_whole_or_not_at_all(tmp_path: Path) -> None:
    """Issue 43 (item 5): one writer replaces every file that must never be read half-written (a
    worker's result, the session key, a push's state, the upstream exports): 0600 whatever the umask,
    and a write that fails half-way leaves the old file and no temporary one."""
    path = tmp_path / "result.json"
    write_atomic(path, '{"ok": true}\n')
    assert path.read_text() == '{"ok": true}\n' and stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(RuntimeError):
        with atomic_file(path) as fh:
            fh.write('{"half": ')
            raise RuntimeError("the disk filled up")
    assert path.read_text() == '{"ok": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
    write_atomic(path, b"\x00bytes")
    assert path.read_bytes() == b"\x00bytes"
