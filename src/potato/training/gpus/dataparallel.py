"""Data-parallel runs: one worker process per GPU, started by torch's own launcher.

A run that sees more than one GPU (ssh ``gpus: "0,1"``, SLURM ``gres: gpu:2``, an agent's machine
with several, a local ``device: cuda`` with several) would otherwise train on the first and leave
the rest idle. Here the worker that was started becomes the *launcher*: it runs
``python -m torch.distributed.run --standalone --nproc-per-node N -m potato.training.worker --rank
JOB_DIR`` (through this module's ``__main__``, which ties torchrun's life to the launcher's) and
turns what the ranks left behind into the run's one result.json and exit_code.

Each *rank* is a worker in rank mode: it trains on its own shard of every epoch (the trainer wraps
its model in ``DistributedDataParallel``), predicts its shard of the items, and hands its
predictions to rank 0, which alone writes events, artifacts and predictions. Every rank leaves
``ranks/rank-K.json`` (its result and exit code) and ranks above 0 their log in ``ranks/rank-K.log``;
a rank with no file was killed from outside, and that is the run's message.

Cancel: the launcher forwards SIGTERM to torchrun, which forwards it to every rank; in the training
loop the ranks agree on stopping at the same step (:func:`stop_anywhere`), so none waits forever on
a peer that left. If the launcher dies, torchrun gets SIGTERM from the kernel (``PR_SET_PDEATHSIG``),
and each rank gets SIGKILL when torchrun dies: nothing goes on training as an orphan.

Remote-safe: standard library only, Python 3.8; torch is imported inside the functions that use
it, which only run in a rank.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

RANKS_DIR = "ranks"
TORCHRUN_LOG = "torchrun.log"
"""In ``ranks/``: what torchrun itself says (and rank 0's stderr), for a launch that went wrong."""
RANK_FLAG = "--rank"
"""The worker's flag for a process torchrun started (internal: never on a user's command line)."""
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Ranks:
    """Where this process stands in a data-parallel run; ``world_size`` 1 for a run of one process."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def parallel(self) -> bool:
        return self.world_size > 1

    @property
    def main(self) -> bool:
        """Rank 0: the one that reports, saves and writes predictions."""
        return self.rank == 0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Ranks":
        """What torchrun put in the environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``)."""
        try:
            return cls(int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", env["RANK"])))
        except (KeyError, ValueError):
            raise RuntimeError("potato.training.worker --rank runs only under torch.distributed.run, which "
                               "sets RANK and WORLD_SIZE; start the worker without --rank") from None


SINGLE = Ranks()


def world_size(device: str, cuda_count: int, cpu_processes: int, supported: bool) -> int:
    """How many processes a run trains with: every visible GPU for a CUDA run that did not name one
    (``cuda:1`` means that GPU alone), ``cpu_processes`` on the CPU; 1 for a trainer that cannot."""
    if not supported:
        return 1
    if device.startswith("cuda"):
        return cuda_count if cuda_count > 1 else 1
    if device == "cpu":
        return max(1, cpu_processes)
    return 1


def visible_gpus(count: int, cuda_visible_devices: Optional[str]) -> List[str]:
    """The GPUs' names as the host numbers them: ``CUDA_VISIBLE_DEVICES`` (set by ssh ``gpus:`` and
    SLURM's gres) where it lists them, else 0..count-1."""
    listed = [x.strip() for x in (cuda_visible_devices or "").split(",") if x.strip()]
    if len(listed) >= count:
        return listed[:count]
    return [str(i) for i in range(count)]


def describe(n: int, device: str, gpus: Sequence[str]) -> str:
    """run.log's line: ``data-parallel on 2 GPUs (0, 1)`` or ``data-parallel on 2 CPU processes (gloo)``."""
    if device.startswith("cuda"):
        return f"data-parallel on {n} GPUs ({', '.join(gpus)})"
    return f"data-parallel on {n} CPU processes (gloo)"


def rank_name(rank: int, device: str, gpus: Sequence[str]) -> str:
    """How a message names a rank: ``rank 1 (GPU 1)`` or ``rank 1``."""
    if device.startswith("cuda") and rank < len(gpus):
        return f"rank {rank} (GPU {gpus[rank]})"
    return f"rank {rank}"


def torchrun_argv(python: str, n: int, job_dir: Path) -> List[str]:
    """torch's launcher, one process per GPU on this node (never srun: one node only), each a worker
    in rank mode; through this module so that torchrun dies with the launcher."""
    return [python, "-m", "potato.training.gpus.dataparallel", "--standalone", "--nproc-per-node", str(n),
            "-m", "potato.training.worker", RANK_FLAG, str(job_dir)]


# -- what each rank leaves behind, and the run's one result from them


def rank_file(job_dir: Path, rank: int, suffix: str = "json") -> Path:
    return job_dir / RANKS_DIR / f"rank-{rank}.{suffix}"


@dataclass(frozen=True)
class RankEnd:
    """A rank's ending as its file says: the worker's result fields, its exit code and when."""

    rank: int
    status: str
    reason: Optional[str]
    message: Optional[str]
    code: int
    ended: float
    result: Dict[str, Any]
    """The rank's result.json fields (rank 0's metrics and prediction count become the run's)."""


def read_rank_ends(job_dir: Path, n: int) -> Dict[int, Optional[RankEnd]]:
    """Per rank, its file's :class:`RankEnd`, or None for a rank that left none (or half of one)."""
    out: Dict[int, Optional[RankEnd]] = {}
    for rank in range(n):
        try:
            data = json.loads(rank_file(job_dir, rank).read_text(encoding="utf-8"))
            out[rank] = RankEnd(rank, str(data["status"]), data.get("reason"), data.get("message"),
                                int(data["exit_code"]), float(data.get("ended", 0.0)), data)
        except (OSError, ValueError, KeyError, TypeError):
            out[rank] = None
    return out


def combine(ends: Mapping[int, Optional[RankEnd]], cancelled: bool, device: str,
            gpus: Sequence[str], torchrun_code: int) -> Tuple[str, Optional[str], Optional[str], int]:
    """The run's (status, reason, message, exit code) from its ranks' ends (pure).

    A cancel is a cancel. Otherwise the rank that caused the failure is named: one that left no file
    was killed from outside (its peers then fail only because it left); else the failure that came
    first (the others fail because a peer left, or are stopped by torchrun). All succeeded: rank 0's.
    """
    if cancelled:
        return "cancelled", "cancelled", None, 143
    missing = sorted(rank for rank, end in ends.items() if end is None)
    if missing and len(missing) < len(ends):
        rank = missing[0]
        name = rank_name(rank, device, gpus)
        return ("failed", "error", f"{name} ended without finishing: it was killed from outside (by a signal "
                f"or the kernel's out-of-memory killer), so every rank stopped. Its log: ranks/rank-{rank}.log", 1)
    if missing:
        return ("failed", "error", f"torch.distributed.run ended (exit {torchrun_code}) before any rank "
                f"finished; what it said is in {RANKS_DIR}/{TORCHRUN_LOG}", torchrun_code or 1)
    failed = [end for end in ends.values() if end is not None and end.status == "failed"]
    if failed:
        first = min(failed, key=lambda end: (end.ended, end.rank))
        return ("failed", first.reason, f"{rank_name(first.rank, device, gpus)}: {first.message}", first.code)
    stopped = [end for end in ends.values() if end is not None and end.status != "succeeded"]
    if stopped:
        first = min(stopped, key=lambda end: (end.ended, end.rank))
        return first.status, first.reason, first.message, first.code
    main = ends[0]
    assert main is not None
    return main.status, main.reason, main.message, main.code


# -- in a rank (torch imported here only)


def init_process_group(ranks: Ranks, device: str) -> str:
    """Join the run's process group (NCCL on GPUs, gloo on the CPU); the device this rank trains on."""
    import torch
    import torch.distributed as dist

    if device.startswith("cuda"):
        torch.cuda.set_device(ranks.local_rank)
        device = f"cuda:{ranks.local_rank}"
        dist.init_process_group(backend="nccl", device_id=torch.device(device))
    else:
        dist.init_process_group(backend="gloo")
    return device


def destroy_process_group() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def shard(order: Sequence[int], ranks: Ranks) -> List[int]:
    """This rank's part of an epoch's order: every rank gets as many items (the order wraps round for
    the last ones, as torch's DistributedSampler does), so every rank takes as many steps and none
    waits for a gradient that never comes."""
    order = list(order)
    if not ranks.parallel or not order:
        return order
    per_rank = -(-len(order) // ranks.world_size)
    padded = (order * (per_rank * ranks.world_size // len(order) + 1))[:per_rank * ranks.world_size]
    return padded[ranks.rank::ranks.world_size]


def wrap(model: Any, ranks: Ranks, device: str) -> Any:
    """``model`` in DistributedDataParallel for a parallel run (gradients averaged across ranks)."""
    if not ranks.parallel:
        return model
    from torch.nn.parallel import DistributedDataParallel

    ids = [ranks.local_rank] if device.startswith("cuda") else None
    return DistributedDataParallel(model, device_ids=ids)


def stop_anywhere(local: bool, ranks: Ranks, device: str) -> bool:
    """True when any rank was asked to stop: every rank calls it at the same step, so all stop there."""
    if not ranks.parallel:
        return local
    import torch
    import torch.distributed as dist

    flag = torch.tensor([1.0 if local else 0.0], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item() > 0)


def gather_to_main(part: Any, ranks: Ranks) -> Optional[List[Any]]:
    """Every rank's ``part`` (any picklable value), in rank order, on rank 0; None on the others."""
    if not ranks.parallel:
        return [part]
    import torch.distributed as dist

    parts: Optional[List[Any]] = [None] * ranks.world_size if ranks.main else None
    dist.gather_object(part, parts, dst=0)
    return parts


def shard_items(n: int, ranks: Ranks) -> range:
    """The items this rank predicts: a contiguous block, so rank order is item order."""
    per_rank = -(-n // ranks.world_size)
    return range(min(n, ranks.rank * per_rank), min(n, (ranks.rank + 1) * per_rank))


# -- process life


def set_parent_death_signal(sig: int) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies (``prctl(PR_SET_PDEATHSIG)``);
    False where that does not exist (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(sig), ctypes.c_ulong(0), ctypes.c_ulong(0),
                              ctypes.c_ulong(0))) == 0
    except (OSError, AttributeError):
        return False


def tie_to_parent(sig: int) -> None:
    """``sig`` when the parent dies; if it died already (we were re-parented), act on it now."""
    parent = os.getppid()
    if set_parent_death_signal(sig) and os.getppid() != parent:
        os.kill(os.getpid(), sig)


def main() -> None:
    """torchrun, tied to the launcher: SIGTERM when the launcher dies, so torchrun stops the ranks."""
    import runpy

    tie_to_parent(signal.SIGTERM)
    sys.argv = ["torch.distributed.run"] + sys.argv[1:]
    runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
