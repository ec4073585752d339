"""The run token is nowhere it could be read, on either side of an ssh or a SLURM run (issue 20's
matrix): not in a command line or an environment of the run's processes while it trains, nor in a log,
a run folder, the shipped code or the job folder on the host afterwards.

The test never sees the token: the server hands it to the agent on stdin and keeps only its SHA-256.
So every string shaped like a token (43 URL-safe characters) found anywhere is hashed and compared
with the run's stored hash: a match is the token, wherever it turned up.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable

import pytest

from tests.harness import procs
from tests.faults.matrix import fault
from tests.harness.runs import make_server  # noqa: F401 - the fixture
from tests.harness.slurmcluster import cluster  # noqa: F401 - the fixture
from tests.harness.sshd import sshd  # noqa: F401 - the fixture
from tests.harness.runs import TERMINAL, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.slurmcluster import Cluster, slurm_config
from tests.harness.sshd import SshHost, ssh_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TOKEN_SHAPE = re.compile(rb"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")


def leaks(data: bytes, hashes: set[str]) -> bool:
    return any(hashlib.sha256(c).hexdigest() in hashes for c in TOKEN_SHAPE.findall(data))


def files_under(*roots: Path) -> Iterable[Path]:
    for root in roots:
        if root.is_file():
            yield root
        elif root.is_dir():
            yield from (p for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def token_hashes(srv: ServerProcess) -> set[str]:
    db = srv.config_path.parent / "annotation_output" / "potato.sqlite3"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT token_hash FROM runs WHERE token_hash IS NOT NULL").fetchall()
    finally:
        conn.close()
    return {r[0] for r in rows}


@fault("Tokens and secrets", "Someone reads every command line, environment, log and file of an ssh and a SLURM run, on the server and on the host, during the run and after it",
       "Finds no run token: it reaches the agent on stdin; only its hash is stored",
       "Nothing to see")
@pytest.mark.rig
@pytest.mark.parametrize("kind", ["ssh", "slurm"])
def test_no_run_token_in_any_process_log_or_file_on_either_side(
        kind: str, make_server: Callable[..., ServerProcess],  # noqa: F811
        request: pytest.FixtureRequest) -> None:
    if kind == "ssh":
        host: SshHost = request.getfixturevalue("sshd")
        config: Dict[str, Any] = ssh_config(host, keep_remote=True)
        backend, remote_dir = "gpu", "~/.cache/potato-training"
    else:
        the_cluster: Cluster = request.getfixturevalue("cluster")
        host = the_cluster.login
        config = slurm_config(the_cluster, keep_remote=True)
        backend, remote_dir = "cluster", the_cluster.remote_dir
    srv = make_server(config)
    run = start(srv, trainer="noop", schemas=["sentiment"], backend=backend, params={"sleep_s": 4})
    home = host.fs / host.run("cd && pwd -P").stdout.strip().lstrip("/")
    remote = home / remote_dir.removeprefix("~/")
    assert srv.proc is not None
    scanned = 0
    hashes: set[str] = set()
    while True:
        hashes |= token_hashes(srv)
        # This run's processes: the server's (its ssh clients) and those on the host naming the run.
        own = set(procs.descendants(srv.proc.pid)) | {
            p for p in procs.descendants(1) if any(run["id"].encode() in a for a in procs.cmdline(p))}
        for pid in own:
            seen = b"\0".join(procs.cmdline(pid)) + b"\0" + procs.environ(pid)
            assert not leaks(seen, hashes), f"the run token is in the command line or environment of {pid}"
            scanned += 1
        state = wait(srv, run["id"], TERMINAL | {"running", "copying", "preparing", "queued"}, timeout=30)["state"]
        if state in TERMINAL:
            break
        time.sleep(0.3)
    assert state == "succeeded" and hashes and scanned
    try:
        server_files = list(files_under(srv.config_path.parent))
        host_files = list(files_under(remote / "jobs" / run["id"], remote / "code",
                                      *(host.fs / "tmp").glob(f"potato-{run['id']}*")))
        assert any(p.name == "run.log" for p in server_files) and any(p.name == "events.jsonl" for p in host_files)
        for path in server_files + host_files:
            assert not leaks(path.read_bytes(), hashes), f"the run token is in {path}"
    finally:
        shutil.rmtree(remote / "jobs" / run["id"], ignore_errors=True)  # kept for this scan (keep_remote)


def test_the_scan_finds_a_token_wherever_it_is() -> None:
    """The check above is not empty: a token among other text, quoted or at a line's end, is found."""
    token = secrets.token_urlsafe(32).encode()
    hashes = {hashlib.sha256(token).hexdigest()}
    for text in (b"--token " + token, b'{"run_token": "' + token + b'"}\n', b"TOKEN=" + token + b"\0PATH=/bin"):
        assert leaks(text, hashes)
    assert not leaks(b"sha256 " + hashlib.sha256(token).hexdigest().encode(), hashes)
