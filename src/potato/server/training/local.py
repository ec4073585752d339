"""The local backend: the agent as a subprocess of the server, for one run (R1, R11).

The agent is started in a session of its own, so it outlives a server restart: the worker goes
on, the agent retries its reports until the server is back, and the run finishes (the local run
and a remote one behave alike). The run's token reaches it on stdin, never on its command line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from potato.training.codefiles import code_root
from potato.training.supervise import allowed_env

AGENT_OUT = "agent.out"


def agent_env(pass_env: Sequence[str] = (), base: dict[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: the worker's allow-list of the server's (``supervise.allowed_env``) plus the
    ``pass_env`` names, which the agent hands on to its worker; our source first on PYTHONPATH. The rest
    (cloud keys, HF_TOKEN, the admin key) stays with the server: the agent needs none of it."""
    return allowed_env(os.environ if base is None else base, pass_env, extra_paths=[code_root()])


def start_agent(server_url: str, run_id: str, token: str, workdir: Path, run_dir: Path,
                python: str = sys.executable, pass_env: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """The agent for one local run. It and its worker see an allow-list of the server's environment plus
    ``model_training.pass_env``."""
    workdir.mkdir(mode=0o700, parents=True, exist_ok=True)  # the agent makes jobs/<run> 0700 inside
    cmd = [python, "-m", "potato.training.agent", "--server", server_url, "--backend", "local",
           "--run", run_id, "--token-stdin", "--workdir", str(workdir), *(f"--pass-env={n}" for n in pass_env)]
    with (run_dir / AGENT_OUT).open("ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, cwd=str(workdir),
                                env=agent_env(pass_env), start_new_session=True)
    stdin = proc.stdin
    if stdin is not None:  # always, with stdin=PIPE
        stdin.write(token.encode("ascii") + b"\n")
        stdin.close()
    return proc


def agent_alive(pid: int | None, run_id: str) -> bool | None:
    """Whether the local agent for ``run_id`` still runs; None when no pid is known.

    The command line is checked, so a recycled pid never counts as our agent.
    """
    if not pid:
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"potato.training.agent" in cmdline and run_id.encode() in cmdline
