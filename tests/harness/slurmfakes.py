"""SLURM's commands answered in-process from output pasted from the real SLURM, and a clock a test moves
by hand, for SlurmJob's tests without a cluster."""

from __future__ import annotations

from typing import List, Tuple


class FakeSlurm:
    """Answers sbatch/squeue/scontrol/scancel as the real ones did; counts every call."""

    def __init__(self, squeue: List[Tuple[int, str, str]], scontrol: str = "") -> None:
        self.squeue = squeue
        self.scontrol = scontrol
        self.calls: List[List[str]] = []

    def __call__(self, argv: List[str]) -> Tuple[int, str, str]:
        self.calls.append(argv)
        if argv[0] == "sbatch":
            return 0, "4242\n", ""
        if argv[0] == "squeue":
            return self.squeue.pop(0) if len(self.squeue) > 1 else self.squeue[0]
        if argv[0] == "scontrol":
            return (0, self.scontrol, "") if self.scontrol else (1, "", "slurm_load_jobs error: Invalid job id specified")
        return 0, "", ""

    def count(self, name: str) -> int:
        return sum(1 for argv in self.calls if argv[0] == name)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
