"""One run on a SLURM cluster behind a login node; the backend and its check are
in :mod:`potato.server.training.backends.slurm.backend`, the steps it shares with ssh in
:mod:`potato.server.training.backends.ssh.remoterun`.

The same path as ssh up to the agent: connect to the login node, check its Python, push
Potato's code to ``remote_dir/code/<hash>`` (shared storage, so the compute nodes import the
same copy), start the agent over a reverse-forwarded socket. The difference is the agent's
``--slurm-config``: it submits the worker with sbatch and follows it through the shared job
dir, instead of starting it. The model comes back and the job dir goes as for ssh.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from potato.config.schema import SlurmBackendSettings
from potato.defaults import SSH_STEP_TIMEOUT_S
from potato.server.training.backends.ssh.remoterun import RemoteRun
from potato.server.training.backends.ssh.host import HostFacts, run_ssh
from potato.server.training.backends.ssh.command import SshFailed, SshTarget, SshStep
from potato.training.slurm.settings import SETTINGS_FILE, SlurmSettings
from potato.training.slurm.job import JOB_ID_FILE

REQUIRED_COMMANDS = ("sbatch", "squeue", "scancel")
"""What the login node must have on PATH; ``scontrol`` is used where it exists."""

SLURM_FIX = ("SLURM's commands wait for slurmctld (`Unable to contact slurm controller` after a while): run "
             "`sinfo` on the login node by hand, and ask the cluster's admins if it hangs there too")
COMMANDS_STEP = SshStep("looking for SLURM's commands", SSH_STEP_TIMEOUT_S)
SETTINGS_STEP = SshStep("writing the job's slurm.json", SSH_STEP_TIMEOUT_S)


def settings_for(backend: SlurmBackendSettings) -> SlurmSettings:
    """The backend's slurm settings as the agent takes them (slurm.json)."""
    return SlurmSettings(
        partition=backend.partition, account=backend.account, qos=backend.qos, gres=backend.gres,
        time=backend.time, mem=backend.mem, cpus_per_task=backend.cpus_per_task, constraint=backend.constraint,
        extra_sbatch_args=tuple(backend.extra_sbatch_args), job_python=backend.job_python or backend.python,
        prelude=tuple(backend.prelude), poll_interval_s=backend.poll_interval_s, num_threads=backend.num_threads,
        container=backend.container,
    )


@dataclass(frozen=True)
class LoginNode:
    """Which of SLURM's commands the login node has, with sbatch's version line."""

    commands: dict[str, str]
    version: str

    def missing(self) -> list[str]:
        return [name for name in REQUIRED_COMMANDS if name not in self.commands]


def probe_slurm(target: SshTarget) -> LoginNode:
    """Where sbatch, squeue, scancel and scontrol are on the login node (with the backend's env)."""
    env = target.env_prefix()
    names = " ".join((*REQUIRED_COMMANDS, "scontrol", "sinfo"))
    script = f'for c in {names}; do printf "%s=" "$c"; command -v "$c" || echo; done; sbatch --version 2>/dev/null'
    out = run_ssh(target, f"{env}sh -c {shlex.quote(script)}", step=COMMANDS_STEP)
    commands: dict[str, str] = {}
    version = ""
    for line in out.stdout.decode("utf-8", "replace").splitlines():
        name, eq, path = line.partition("=")
        if eq and name in (*REQUIRED_COMMANDS, "scontrol", "sinfo"):
            if path.strip():
                commands[name] = path.strip()
        elif line.strip():
            version = line.strip()
    return LoginNode(commands, version)


def missing_command_error(host: str, name: str) -> SshFailed:
    """No sbatch on PATH, and the same form for squeue and scancel."""
    what = {"sbatch": "submit jobs", "squeue": "follow its jobs", "scancel": "cancel its jobs"}[name]
    return SshFailed(f"{host} has no {name} on PATH, so it cannot {what}. Log in there and run `command -v {name}`; "
                     "if SLURM's commands are in a module or an unusual folder, set the backend's env, e.g. "
                     'env: {PATH: "/opt/slurm/bin:/usr/bin:/bin"}.')


class SlurmRun(RemoteRun[SlurmBackendSettings]):
    """One run on a slurm backend: the agent on the login node submits the worker to SLURM."""

    def reads_gpus(self) -> bool:
        return False  # the job's node has the GPUs, not the login node

    def python_line(self, facts: HostFacts) -> str:
        return f"Python {facts.python_version} on {self.backend.host} ({facts.python_path}) runs the agent"

    def before_code(self, facts: HostFacts) -> None:
        """SLURM's commands on the login node and what the job will run."""
        b = self.backend
        login = probe_slurm(self.target)
        for name in login.missing():
            raise missing_command_error(b.host, name)
        self.say(f"SLURM on {b.host}: {login.version or 'sbatch'} ({login.commands['sbatch']})")
        settings = settings_for(b)
        self.say(f"The job runs the worker with {settings.job_python}"
                 + (f" after the prelude: {'; '.join(settings.prelude)}" if settings.prelude else ""))
        self.store.update(self.run.id, device=f"gres {b.gres}" if b.gres else "no GPU (no gres requested)")

    def agent_setup(self) -> tuple[dict[str, str], list[str]]:
        """The job's settings in ``jobs/<run>/slurm.json``, for the agent's ``--slurm-config``."""
        path = f"{self.job_dir}/{SETTINGS_FILE}"
        out = self.ssh(f"mkdir -p {self.job_dir} && cat > {path}",
                       stdin=json.dumps(settings_for(self.backend).to_json(), indent=1).encode(),
                       step=SETTINGS_STEP)
        if out.returncode != 0:
            raise SshFailed(f"Could not write {path} on {self.backend.host}: "
                            f"{out.stderr.decode('utf-8', 'replace').strip()}")
        return {}, ["--slurm-config", path]

    def left_behind_commands(self) -> list[str]:
        """A job still queued or running after its run ended: its agent was killed (``kill -9``, the
        login node's OOM killer) before it could cancel it, and nobody else would; it would hold its
        GPU until its time limit. Cancelled here, by the id the agent wrote when it submitted."""
        id_file = f"{self.job_dir}/{JOB_ID_FILE}"
        script = (f'id=$(cat {id_file} 2>/dev/null); '
                  'if [ -n "$id" ] && [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null)" ]; then '
                  'scancel "$id" && echo "scancelled $id"; fi')
        return [f"{self.target.env_prefix()}sh -c {shlex.quote(script)}"]

    def said_left_behind(self, output: str) -> None:
        for line in output.splitlines():
            if line.startswith("scancelled "):
                job = line.split()[1]
                self.say(f"SLURM job {job} was still in the queue after its agent ended; cancelled it "
                         f"(scancel {job}), so it holds no GPU.")
