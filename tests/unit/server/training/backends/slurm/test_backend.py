"""The slurm backend's logic on the server (issue 21, R31): the check's reading of its test job on
what that job printed on the test cluster. The same check on the real SLURM:
tests/integration/test_slurm_newcomer.py; the job's own logic: tests/unit/training/test_slurm_*."""

from __future__ import annotations

from potato.server.training.backends.slurm.backend import read_check_job
from potato.training.slurm.settings import SlurmSettings

# What the check's test job printed on the test cluster for prelude ["module load cuda"].
CHECK_PRELUDE_FAILED = """\
potato-check: job 192
potato-check: node vm
/tmp/potato-testcluster/spool/slurmd.vm/job00192/slurm_script: line 7: module: command not found
job.sh: prelude line 1 failed (exit 127): module load cuda
"""


def test_the_check_reads_its_test_job() -> None:
    """What the check's test job printed on the test cluster, and a busy queue it gave up on."""
    settings = SlurmSettings(prelude=("module load cuda",), job_python="/usr/bin/python3")
    failed = read_check_job(CHECK_PRELUDE_FAILED, settings)
    assert failed.ran and not failed.ok and failed.prelude is not None
    assert failed.line == (
        "Test job 192 on vm: prelude line 1 (`module load cuda`) failed with exit 127: module: command not found. "
        "A run would fail the same way before its worker starts. Fix that line in the backend's prelude (try it by "
        "hand on a compute node), remove it, or end it with `|| true` if it may fail.")
    good = read_check_job("potato-check: job 161\npotato-check: node vm\n3.11.2 /usr/bin/python3\n", settings)
    assert good.ok and good.line == ("Test job 161 on vm: job_python /usr/bin/python3 is Python 3.11.2 "
                                     "(/usr/bin/python3), after the prelude")
    busy = read_check_job("potato-check: job 162\npotato-check: still PENDING Priority\n", settings)
    assert not busy.ran and busy.line == (
        "Test job 162 did not start within 30 s (squeue said PENDING: Priority); cancelled it. The prelude and "
        "job_python were tried on the login node only.")
