"""The launcher side of a data-parallel run: how many ranks a run gets, starting them under
torchrun, and making their ends the run's one result.

Remote-safe: standard library only, Python 3.8 (torch runs in the ranks, never here). Apart from
:mod:`potato.training.gpus.dataparallel`, which holds what launcher and ranks share (and the torch
calls a rank makes), because only the launcher process runs this: it starts and watches a
subprocess, and passes a stop request on to it.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from potato.training.gpus import dataparallel
from potato.training.gpus.devices import DeviceProbe
from potato.training.job.events import EventWriter
from potato.training.job.results import Reason, Result, RunStatus
from potato.training.worker.steps import RunSoFar
from potato.training.worker.stop import StopFlag

log = logging.getLogger("potato.training.worker")  # one logger for the whole worker process

LAUNCH_POLL_S = 0.2
"""How often a data-parallel launcher looks at torchrun and its stop flag."""


def world_size(run: RunSoFar, machine: DeviceProbe) -> int:
    """How many ranks the run gets (1: it trains in this process)."""
    job, cls = run.job, run.cls
    if job is None or cls is None:
        return 1
    cuda = machine.cuda_count if job.device in ("auto", "cuda") else 1  # cuda:N names one GPU
    return dataparallel.world_size(run.device, cuda, job.cpu_processes, bool(cls.data_parallel))


def launch(job_dir: Path, run: RunSoFar, n: int, events: EventWriter, result: Result, stop: StopFlag) -> int:
    """Run the job as ``n`` ranks under torchrun and make their ends the run's one result; returns
    the exit code. A stop request is passed on to torchrun, which passes it to every rank."""
    gpus = dataparallel.visible_gpus(n, os.environ.get("CUDA_VISIBLE_DEVICES"))
    events.log(dataparallel.describe(n, run.device, gpus))
    folder = job_dir / dataparallel.RANKS_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    for old in folder.iterdir():  # a requeued SLURM job runs again in the same folder
        old.unlink()
    events.step(f"starting {n} ranks")
    argv = dataparallel.torchrun_argv(sys.executable, n, job_dir)
    log.info("data-parallel: %s", " ".join(argv))
    with open(str(folder / dataparallel.TORCHRUN_LOG), "ab") as said:  # torchrun's own words, and rank 0's stderr
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=said, stderr=said, start_new_session=True)
    forwarded = False
    while True:
        try:
            torchrun_code = proc.wait(timeout=LAUNCH_POLL_S)
            break
        except subprocess.TimeoutExpired:
            if stop() and not forwarded:
                forwarded = True
                try:
                    proc.send_signal(signal.SIGTERM)
                except OSError:  # it ended between the wait and the signal
                    pass
    ends = dataparallel.read_rank_ends(job_dir, n)
    unfinished = any(end is None or end.status != RunStatus.SUCCEEDED.value for end in ends.values())
    status, reason, message, code = dataparallel.combine(ends, bool(stop()) and unfinished, run.device, gpus,
                                                         torchrun_code)
    main = ends.get(0)
    if main is not None:
        result.metrics.update(main.result.get("metrics") or {})
        result.predictions = int(main.result.get("predictions") or 0)
        result.device = str(main.result.get("device") or result.device)
    result.status = RunStatus(status)
    result.reason = Reason(reason) if reason else None
    result.message = message if status != RunStatus.CANCELLED.value else (
        getattr(stop, "cause", None) or "Cancelled (SIGTERM) before the run finished")
    return code
