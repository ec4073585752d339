"""The slurm backend: a SLURM cluster behind a login node.

A run goes as on an ssh backend (:class:`~potato.server.training.backends.slurm.run.SlurmRun`), except that
the agent on the login node submits the worker with sbatch. The check is SLURM's own: the login
node's commands, where ``remote_dir`` really is, the prelude and ``job_python`` on the login node
and in a one-minute test job, and whether the request can ever run (sinfo, ``sbatch --test-only``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from potato.training.slurm.settings import node_local_dir
from potato.config.schema import Config, SlurmBackendSettings
from potato.defaults import SSH_STEP_TIMEOUT_S
from potato.server.training.backends.base import CheckReport
from potato.server.training.backends.ssh.backend import RemoteBackend
from potato.server.training.backends.slurm.run import SLURM_FIX, SlurmRun, missing_command_error, probe_slurm, settings_for
from potato.server.training.backends.ssh.command import (SshFailed, SshStep, SshTarget, preamble_notice, remote_path,
                                                         shell)
from potato.server.training.backends.ssh.host import control_dir, probe_host, run_ssh
from potato.training.slurm.script import PRELUDE_FIX, PreludeFailure, prelude_block, prelude_failure, sbatch_flags
from potato.training.slurm.settings import SlurmSettings
from potato.training.slurm.state import gpus_line, never_runs, parse_sinfo
from potato.training.slurm.job import last_output_line

REMOTE_DIR_STEP = SshStep("making remote_dir", SSH_STEP_TIMEOUT_S,
                       "remote_dir is on shared storage: check that it answers there (`ls <remote_dir>`)")
JOB_PYTHON_STEP = SshStep("running job_python after the prelude", SSH_STEP_TIMEOUT_S,
                       "run the prelude and job_python by hand on the login node; a module load or an environment "
                       "on slow shared storage can take long")
SINFO_STEP = SshStep("asking sinfo about the partitions", SSH_STEP_TIMEOUT_S, SLURM_FIX)
TEST_ONLY_STEP = SshStep("asking sbatch --test-only about the flags", SSH_STEP_TIMEOUT_S, SLURM_FIX)
CHECK_JOB_WAIT_S = 30
"""How long the check waits for its test job (the prelude and job_python on a compute node) to start
and end; a busy queue makes it give up and cancel the job, and say so."""
CHECK_JOB_STEP = SshStep("running a test job with the prelude and job_python", CHECK_JOB_WAIT_S + SSH_STEP_TIMEOUT_S,
                     SLURM_FIX)


class Slurm(RemoteBackend[SlurmBackendSettings]):
    """The login node is driven as an ssh host; the agent there submits the worker as a job."""

    type = "slurm"
    session_kind = SlurmRun

    def check(self, config: Config) -> CheckReport:
        return check_cluster(config, self.remote)


JOB_PYTHON_PROBE = "import sys; print(sys.version.split()[0], sys.executable)"
JOB_PYTHON_ANSWER = re.compile(r"^(\d+\.\d+\S*) (/.*)$")
""":data:`JOB_PYTHON_PROBE`'s answer: ``3.11.2 /usr/bin/python3``."""


def prelude_and_python(settings: SlurmSettings) -> str:
    """A bash script that runs the prelude as job.sh does (a failing line names itself and stops
    there), then job_python's version probe: the check's question, on the login node or in a job."""
    block = prelude_block(settings.prelude, ['  exit "$1"']) if settings.prelude else []
    return "\n".join([*block, f"{shlex.quote(str(settings.job_python))} -c {shlex.quote(JOB_PYTHON_PROBE)}", ""])


@dataclass(frozen=True)
class CheckJob:
    """What the check's test job showed: whether it ran at all, its id and node, a failed prelude
    line, job_python's version there; ``line`` is the check's line for it."""

    ran: bool
    job_id: str
    node: str
    prelude: PreludeFailure | None
    python: str | None
    line: str

    @property
    def ok(self) -> bool:
        return self.ran and self.prelude is None and self.python is not None

    def to_json(self) -> dict[str, Any]:
        return {"ran": self.ran, "job_id": self.job_id, "node": self.node, "python": self.python}


CHECK_JOB_MARK = "potato-check:"


def check_job_command(settings: SlurmSettings, folder: str) -> str:
    """The shell line that submits the check's test job from ``folder`` (shared storage, so its
    output comes back), waits at most :data:`CHECK_JOB_WAIT_S` for it, cancels it if it is still
    queued, prints what it wrote and removes its folder. One minute of time limit: it runs for a
    second, and a short job starts sooner on a busy cluster."""
    script = "#!/bin/bash\n" + f'echo "{CHECK_JOB_MARK} node ${{SLURMD_NODENAME:-$(hostname -s)}}"\n' \
        + prelude_and_python(settings)
    submit = shell(["sbatch", "--parsable", "--job-name=potato-check", *sbatch_flags(settings), "--time=1"])
    m = CHECK_JOB_MARK
    return "\n".join([
        f"d=$(mktemp -d {shlex.quote(folder)}/check.XXXXXX) || exit 1",
        f'printf %s {shlex.quote(script)} > "$d/job.sh"',
        f'id=$({submit} --output="$d/out" --chdir="$d" "$d/job.sh" 2>&1) || '
        f'{{ echo "{m} sbatch refused the test job: $id"; rm -rf "$d"; exit 0; }}',
        'id=${id%%;*}',
        f'echo "{m} job $id"',
        "i=0",
        f'while state=$(squeue -h -j "$id" -o "%T %r" 2>/dev/null) && [ -n "$state" ] '
        f'&& [ $i -lt {CHECK_JOB_WAIT_S} ]; do sleep 1; i=$((i+1)); done',
        f'if [ -n "$state" ]; then scancel "$id"; echo "{m} still $state"; fi',
        'j=0; while [ ! -s "$d/out" ] && [ $j -lt 5 ]; do sleep 1; j=$((j+1)); done',  # shared storage can lag
        'cat "$d/out" 2>/dev/null',
        'rm -rf "$d"',
    ])


def read_check_job(output: str, settings: SlurmSettings) -> CheckJob:
    """The check's line from what :func:`check_job_command` printed."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    marked = {line[len(CHECK_JOB_MARK):].strip().split(" ", 1)[0]: line[len(CHECK_JOB_MARK):].strip()
              for line in lines if line.startswith(CHECK_JOB_MARK)}
    if "sbatch" in marked:
        return CheckJob(False, "", "", None, None, f"Test job: {marked['sbatch']}")
    job_id = marked.get("job", "job ?").split(" ", 1)[-1]
    waiting = marked.get("still", "").split()[1:]  # squeue's state and reason when the check gave up
    started = marked.get("node")  # the job's own first line: it ran, and where
    only_login = "The prelude and job_python were tried on the login node only."
    if started is None:
        if waiting:
            why = f"{waiting[0]}: {waiting[1]}" if len(waiting) > 1 and waiting[1] != "None" else waiting[0]
            line = (f"Test job {job_id} did not start within {CHECK_JOB_WAIT_S} s (squeue said {why}); cancelled it. "
                    f"{only_login}")
        else:
            line = (f"Test job {job_id} left no output in remote_dir; check that the compute nodes see remote_dir. "
                    f"{only_login}")
        return CheckJob(False, job_id, "", None, None, line)
    node = started.split(" ", 1)[-1]
    there = f"Test job {job_id} on {node}"
    failed = prelude_failure(output)
    if failed is not None:
        line = f"{there}: {failed.describe()}. A run would fail the same way before its worker starts. {PRELUDE_FIX}"
        return CheckJob(True, job_id, node, failed, None, line)
    said = [line for line in lines if not line.startswith(("job.sh:", CHECK_JOB_MARK))]
    # the probe's own line, wherever it falls: the job's output also holds what a shell startup file
    # printed (sbatch passes on SSH_CLIENT, so bash may read ~/.bashrc in the job too)
    probe = next((m for m in map(JOB_PYTHON_ANSWER.match, reversed(said)) if m), None)
    if probe is not None:
        line = (f"{there}: job_python {settings.job_python} is Python {probe.group(1)} ({probe.group(2)})"
                + (", after the prelude" if settings.prelude else ""))
        return CheckJob(True, job_id, node, None, probe.group(1), line)
    if waiting:
        line = (f"{there} still ran after {CHECK_JOB_WAIT_S} s (a slow prelude or job_python start); cancelled it. "
                f"{only_login}")
        return CheckJob(False, job_id, node, None, None, line)
    line = (f"{there}: job_python {settings.job_python} does not run there: {(said or ['no output'])[-1][:300]}. Set "
            "job_python to an interpreter the compute nodes have (with the prelude that makes it available).")
    return CheckJob(True, job_id, node, None, None, line)


def run_check_job(target: SshTarget, settings: SlurmSettings, remote_dir: str | None) -> CheckJob | None:
    """The prelude and job_python in a real job: a compute node may lack what the login node
    has. Only where remote_dir is known to be shared storage, which brings the output back."""
    if not remote_dir:
        return None
    out = run_ssh(target, f"{target.env_prefix()}bash -c {shlex.quote(check_job_command(settings, remote_dir))}",
                  step=CHECK_JOB_STEP)
    return read_check_job(out.stdout.decode("utf-8", "replace") + out.stderr.decode("utf-8", "replace"), settings)


def check_cluster(config: Config, backend: SlurmBackendSettings) -> CheckReport:
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
        probe = run_ssh(target, f"{env}bash -c {shlex.quote(prelude_and_python(settings))} 2>&1", step=JOB_PYTHON_STEP)
        said_there = probe.stdout.decode("utf-8", "replace")
        found = said_there.strip().splitlines()
        login_prelude = prelude_failure(said_there)
        if login_prelude is not None:
            lines.append(f"The prelude fails on the login node: {login_prelude.describe()}.")
            details["prelude_failed"] = {"where": "login node", "line": login_prelude.line,
                                         "status": login_prelude.status, "said": login_prelude.said}
            details["job_python"] = None
        elif probe.returncode == 0 and found:
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
        said = (last_output_line(test.stderr.decode("utf-8", "replace"))
                or last_output_line(test.stdout.decode("utf-8", "replace")))
        details["test_only"] = said
        if test.returncode == 0:
            lines.append(f"sbatch --test-only accepts the flags: {said.removeprefix('sbatch: ')}")
            several = gpus_line(settings.gres)
            if several:
                lines.append(several)
        else:
            ok = False
            lines.append(f"sbatch --test-only rejects the flags {' '.join(sbatch_flags(settings)) or '(none)'}: {said}")
        job = run_check_job(target, settings, details.get("remote_dir")) if ok else None
        if job is not None:
            lines.append(job.line)
            details["test_job"] = job.to_json()
            if job.prelude is not None:
                details["prelude_failed"] = {"where": f"test job {job.job_id}", "line": job.prelude.line,
                                             "status": job.prelude.status, "said": job.prelude.said}
        if job is not None and job.ran and not job.ok:
            ok = False
        elif login_prelude is not None and not (job is not None and job.ran):  # no compute node said otherwise
            lines.append(f"A run would fail the same way before its worker starts. {PRELUDE_FIX}")
            ok = False
    except SshFailed as exc:
        lines.append(f"{head}: {exc}")
        return CheckReport(backend.name, "slurm", False, lines, {**details, "error": str(exc)})
    return CheckReport(backend.name, "slurm", ok, lines, details)
