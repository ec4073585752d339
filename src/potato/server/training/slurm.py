"""The slurm backend: one run on a SLURM cluster behind a login node (R24-R30, E8, E9).

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
from typing import Any

from potato.config._backends import node_local_dir
from potato.config.schema import Config, SlurmBackend
from potato.defaults import SSH_STEP_TIMEOUT_S
from potato.server.training.checks import CheckReport
from potato.server.training.codepush import code_hash
from potato.server.training.ssh import SshRun
from potato.server.training.sshhost import control_dir, probe_host, run_ssh
from potato.server.training.sshcmd import SshFailed, SshTarget, Step, preamble_notice, remote_path, shell
from potato.training.slurm import SETTINGS_FILE, SlurmSettings, never_runs, parse_sinfo, sbatch_flags
from potato.training.slurmjob import JOB_ID_FILE, last_line

REQUIRED_COMMANDS = ("sbatch", "squeue", "scancel")
"""What the login node must have on PATH (R25); ``scontrol`` is used where it exists."""

SLURM_FIX = ("SLURM's commands wait for slurmctld (`Unable to contact slurm controller` after a while): run "
             "`sinfo` on the login node by hand, and ask the cluster's admins if it hangs there too")
COMMANDS_STEP = Step("looking for SLURM's commands", SSH_STEP_TIMEOUT_S)
SETTINGS_STEP = Step("writing the job's slurm.json", SSH_STEP_TIMEOUT_S)
REMOTE_DIR_STEP = Step("making remote_dir", SSH_STEP_TIMEOUT_S,
                       "remote_dir is on shared storage: check that it answers there (`ls <remote_dir>`)")
JOB_PYTHON_STEP = Step("running job_python after the prelude", SSH_STEP_TIMEOUT_S,
                       "run the prelude and job_python by hand on the login node; a module load or an environment "
                       "on slow shared storage can take long")
SINFO_STEP = Step("asking sinfo about the partitions", SSH_STEP_TIMEOUT_S, SLURM_FIX)
TEST_ONLY_STEP = Step("asking sbatch --test-only about the flags", SSH_STEP_TIMEOUT_S, SLURM_FIX)


def settings_for(backend: SlurmBackend) -> SlurmSettings:
    """The backend's slurm settings as the agent takes them (slurm.json, R31)."""
    box = backend.container
    return SlurmSettings(
        partition=backend.partition, account=backend.account, qos=backend.qos, gres=backend.gres,
        time=backend.time, mem=backend.mem, cpus_per_task=backend.cpus_per_task, constraint=backend.constraint,
        extra_sbatch_args=tuple(backend.extra_sbatch_args), job_python=backend.job_python or backend.python,
        prelude=tuple(backend.prelude), poll_interval_s=backend.poll_interval_s, num_threads=backend.num_threads,
        container={"runtime": box.runtime, "image": box.image, "options": list(box.options)} if box else None,
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
    """E8 for sbatch, and the same form for squeue and scancel."""
    what = {"sbatch": "submit jobs", "squeue": "follow its jobs", "scancel": "cancel its jobs"}[name]
    return SshFailed(f"{host} has no {name} on PATH, so it cannot {what}. Log in there and run `command -v {name}`; "
                     "if SLURM's commands are in a module or an unusual folder, set the backend's env, e.g. "
                     'env: {PATH: "/opt/slurm/bin:/usr/bin:/bin"}.')


class SlurmRun(SshRun):
    """One run on a slurm backend: :class:`SshRun` with the agent submitting to SLURM."""

    @property
    def slurm_backend(self) -> SlurmBackend:
        assert isinstance(self.backend, SlurmBackend)
        return self.backend

    def execute(self) -> None:
        b = self.slurm_backend
        host = b.host
        self.target = SshTarget(b, control_dir(self.project.config.training_dir))
        self.no_agent_yet()
        self.step(f"connecting to {host}")
        digest = code_hash()
        facts = probe_host(self.target, read_gpus=False, prepare=self.preparation(digest))
        self.said_preamble(facts.preamble)
        self.say(f"Python {facts.python_version} on {host} ({facts.python_path}) runs the agent")
        self.said_stale(facts)
        login = probe_slurm(self.target)
        for name in login.missing():
            raise missing_command_error(host, name)
        self.say(f"SLURM on {host}: {login.version or 'sbatch'} ({login.commands['sbatch']})")
        settings = settings_for(b)
        self.say(f"The job runs the worker with {settings.job_python}"
                 + (f" after the prelude: {'; '.join(settings.prelude)}" if settings.prelude else ""))
        self.store.update(self.run_.id, device=f"gres {b.gres}" if b.gres else "no GPU (no gres requested)")
        self.push_code(digest, facts.code_present)
        path = f"{self.job_dir}/{SETTINGS_FILE}"
        out = self.ssh(f"mkdir -p {self.job_dir} && cat > {path}",
                       stdin=json.dumps(settings.to_json(), indent=1).encode(), step=SETTINGS_STEP)
        if out.returncode != 0:
            raise SshFailed(f"Could not write {path} on {host}: {out.stderr.decode('utf-8', 'replace').strip()}")
        self.start_agent(digest, f"{self.socket_dir}/agent.sock", {}, "--slurm-config", path)
        self.follow_and_fetch()


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


JOB_PYTHON_PROBE = "import sys; print(sys.version.split()[0], sys.executable)"


def check_cluster(config: Config, backend: SlurmBackend) -> CheckReport:
    """The report behind ``potato training check <slurm backend>`` and the page's Check button."""
    head = backend.describe()
    lines: list[str] = []
    details: dict[str, Any] = {}
    try:
        target = SshTarget(backend, control_dir(config.training_dir))
        facts = probe_host(target, read_gpus=False)
        lines.append(f"{head}: Python {facts.python_version} on the login node ({facts.python_path})")
        if facts.preamble:
            lines.append(preamble_notice(backend.host, facts.preamble))
        details.update(python=facts.python_version, python_path=facts.python_path)
        login = probe_slurm(target)
        details["commands"] = login.commands
        missing = login.missing()
        for name in missing:
            lines.append(str(missing_command_error(backend.host, name)))
        if missing:
            return CheckReport(backend.name, "slurm", False, lines, {**details, "error": lines[-1]})
        lines.append(f"SLURM: {login.version or 'sbatch'}; sbatch, squeue, scancel"
                     + (", scontrol" if "scontrol" in login.commands else " (no scontrol: reasons come from slurm.out)")
                     + " on PATH")
        ok = True
        env = target.env_prefix()
        where = run_ssh(target, f"mkdir -p {remote_path(backend.remote_dir)} && cd {remote_path(backend.remote_dir)} "
                                "&& pwd -P", step=REMOTE_DIR_STEP)
        real = where.stdout.decode("utf-8", "replace").strip()
        if where.returncode != 0 or not real:
            ok = False
            lines.append(f"remote_dir {backend.remote_dir} cannot be created on {backend.host}: "
                         f"{where.stderr.decode('utf-8', 'replace').strip()}")
        else:
            local = node_local_dir(real)
            details["remote_dir"] = real
            if local is not None:
                ok = False
                lines.append(f"remote_dir {backend.remote_dir} is {real}, under {local}, which each node has its own "
                             "copy of; use storage the login and compute nodes share")
            else:
                lines.append(f"remote_dir: {real}")
        settings = settings_for(backend)
        prelude = "".join(f"{line}\n" for line in settings.prelude)
        probe = run_ssh(target, f"{env}bash -c {shlex.quote(prelude + shlex.quote(str(settings.job_python)) + ' -c ' + shlex.quote(JOB_PYTHON_PROBE))}",
                        step=JOB_PYTHON_STEP)
        found = probe.stdout.decode("utf-8", "replace").strip().splitlines()
        if probe.returncode == 0 and found:
            version, _, where_python = found[-1].partition(" ")
            lines.append(f"job_python: {settings.job_python} is Python {version} ({where_python}) on the login node"
                         + (", after the prelude" if settings.prelude else ""))
            details["job_python"] = version
        else:
            lines.append(f"job_python: {settings.job_python} does not run on the login node; the job runs it on a "
                         "compute node, so make sure it exists there (with the prelude)")
            details["job_python"] = None
        if "sinfo" in login.commands:
            sinfo = run_ssh(target, f"{env}sinfo -h -o '%P|%c|%m|%G|%a'", step=SINFO_STEP)
            problems = never_runs(settings, parse_sinfo(sinfo.stdout.decode("utf-8", "replace")))
            for problem in problems:
                lines.append(f"This request can never run: {problem}.")
            ok = ok and not problems
            details["never_runs"] = problems
        test = run_ssh(target, f"{env}{shell(['sbatch', '--test-only', '--job-name=potato-check', *sbatch_flags(settings), '--wrap=true'])}",
                       step=TEST_ONLY_STEP)
        said = last_line(test.stderr.decode("utf-8", "replace")) or last_line(test.stdout.decode("utf-8", "replace"))
        details["test_only"] = said
        if test.returncode == 0:
            lines.append(f"sbatch --test-only accepts the flags: {said.removeprefix('sbatch: ')}")
        else:
            ok = False
            lines.append(f"sbatch --test-only rejects the flags {' '.join(sbatch_flags(settings)) or '(none)'}: {said}")
    except SshFailed as exc:
        lines.append(f"{head}: {exc}")
        return CheckReport(backend.name, "slurm", False, lines, {**details, "error": str(exc)})
    return CheckReport(backend.name, "slurm", ok, lines, details)
