"""Data-parallel runs (issue 34, "every GPU a run is given"): one worker per GPU under torchrun.

The pure parts need nothing. The runs go through the real worker in a subprocess, as every backend
starts it, with ``cpu_processes: 2``: two CPU ranks over gloo take the place of two GPUs over NCCL
(torchrun, the shards, the gradient averaging and rank 0's one set of files are the same code).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from potato.training.gpus.dataparallel import (
    RankEnd,
    Ranks,
    combine,
    describe,
    rank_name,
    shard,
    shard_items,
    torchrun_argv,
    visible_gpus,
    world_size,
)

from tests.harness.jobdirs import SENTIMENT, job_json, read_jsonl, read_result, worker_env, write_bundle

# -- pure ------------------------------------------------------------------------------------------


def test_a_run_uses_every_visible_gpu_unless_it_names_one() -> None:
    assert world_size("cuda:0", cuda_count=2, cpu_processes=1, supported=True) == 2
    assert world_size("cuda:0", cuda_count=1, cpu_processes=1, supported=True) == 1
    assert world_size("cuda:0", cuda_count=4, cpu_processes=1, supported=False) == 1  # e.g. sklearn
    assert world_size("cpu", cuda_count=0, cpu_processes=3, supported=True) == 3
    assert world_size("mps", cuda_count=0, cpu_processes=3, supported=True) == 1


def test_run_log_names_the_gpus_as_the_host_numbers_them() -> None:
    """ssh ``gpus: "2,3"`` and SLURM's gres set CUDA_VISIBLE_DEVICES: the line says 2 and 3, not 0 and 1."""
    assert describe(2, "cuda:0", visible_gpus(2, None)) == "data-parallel on 2 GPUs (0, 1)"
    assert describe(2, "cuda:0", visible_gpus(2, "2,3")) == "data-parallel on 2 GPUs (2, 3)"
    assert describe(2, "cpu", visible_gpus(2, None)) == "data-parallel on 2 CPU processes (gloo)"
    assert rank_name(1, "cuda:0", ["2", "3"]) == "rank 1 (GPU 3)" and rank_name(1, "cpu", ["0", "1"]) == "rank 1"


def test_every_rank_gets_as_many_items_and_together_all_of_them() -> None:
    order = [7, 3, 9, 1, 4]
    parts = [shard(order, Ranks(r, 2, r)) for r in range(2)]
    assert [len(p) for p in parts] == [3, 3]
    assert set(parts[0]) | set(parts[1]) == set(order)
    assert shard(order, Ranks()) == order
    blocks = [shard_items(5, Ranks(r, 2, r)) for r in range(2)]
    assert [list(b) for b in blocks] == [[0, 1, 2], [3, 4]]
    assert list(shard_items(1, Ranks(1, 2, 1))) == []


def test_torchrun_is_torch_s_own_launcher_on_one_node() -> None:
    argv = torchrun_argv("/usr/bin/python3", 2, Path("/jobs/r1"))
    assert argv[1:] == ["-m", "potato.training.gpus.dataparallel", "--standalone", "--nproc-per-node", "2", "-m",
                        "potato.training.worker", "--rank", "/jobs/r1"]
    assert "srun" not in argv


def _end(rank: int, status: str, ended: float, reason: Any = None, message: Any = None, code: int = 0) -> RankEnd:
    return RankEnd(rank, status, reason, message, code, ended, {})


def test_the_run_names_the_rank_that_failed_first_not_the_peers_it_took_down() -> None:
    ends = {0: _end(0, "failed", 20.0, "error", "RuntimeError: Connection closed by peer", 1),
            1: _end(1, "failed", 10.0, "oom", "CUDA out of memory; try batch_size 4", 4)}
    assert combine(ends, False, "cuda:0", ["0", "1"], 1) == (
        "failed", "oom", "rank 1 (GPU 1): CUDA out of memory; try batch_size 4", 4)


def test_a_rank_that_left_no_word_was_killed_and_is_named() -> None:
    ends = {0: _end(0, "failed", 20.0, "error", "RuntimeError: Connection closed by peer", 1), 1: None}
    status, reason, message, code = combine(ends, False, "cpu", ["0", "1"], 1)
    assert (status, reason, code) == ("failed", "error", 1)
    assert message is not None and message.startswith("rank 1 ended without finishing: it was killed from outside")


def test_a_cancel_is_a_cancel_and_success_is_rank_0_s() -> None:
    ends = {0: _end(0, "cancelled", 1.0, "cancelled", "Cancelled", 143), 1: None}
    assert combine(ends, True, "cpu", [], 143)[0] == "cancelled"
    ok = {0: _end(0, "succeeded", 2.0), 1: _end(1, "succeeded", 1.0)}
    assert combine(ok, False, "cpu", [], 0) == ("succeeded", None, None, 0)
    assert combine({0: None, 1: None}, False, "cpu", [], 1)[2].startswith("torch.distributed.run ended (exit 1)")


# -- through the real worker: two CPU ranks over gloo ------------------------------------------------


def _smollm2() -> Path:
    from tests.harness.llm import smollm2_folder

    return smollm2_folder()


def start(job_dir: Path) -> subprocess.Popen[bytes]:
    env = worker_env()
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.Popen([sys.executable, "-m", "potato.training.worker", str(job_dir)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def rank_pids(job_dir: Path, n: int) -> dict[int, int]:
    """Each rank's pid, from the first line its log has ("worker pid N ...")."""
    pids = {}
    for rank in range(n):
        log = job_dir / ("stderr.log" if rank == 0 else f"ranks/rank-{rank}.log")
        for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
            if "worker pid" in line and f"rank {rank} of {n}" in line:
                pids[rank] = int(line.split("worker pid ")[1].split(",")[0])
    return pids


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[-1][:1] != "Z"


def wait_for(what: str, ok: Any, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.harness.trainingdata import DATA
    from .tinybert import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("bert"), [text for text, _ in DATA])


def hf_job(job_dir: Path, model: Path, epochs: int, n: int = 200) -> Path:
    from tests.harness.trainingdata import DATA

    data = DATA[:n]
    items = [{"id": f"i{i}", "text": text} for i, (text, _) in enumerate(data)]
    labels = [{"item_id": f"i{i}", "schema": "sentiment", "label": label, "user": "u"} for i, (_, label) in enumerate(data)]
    holdout = [f"i{i}" for i in range(0, n, 5)]
    params = {"base_model": str(model), "epochs": epochs, "batch_size": 8, "learning_rate": 5e-3, "max_length": 32}
    job = job_json("hf-text-classification", (SENTIMENT,), params, num_threads=1, cpu_processes=2, device="cpu")
    return write_bundle(job_dir, job, items, labels, holdout)


@pytest.mark.slow
def test_two_ranks_train_on_their_own_shards_and_rank_0_writes_one_set_of_predictions(
        tmp_path: Path, tiny_bert: Path) -> None:
    job_dir = hf_job(tmp_path, tiny_bert, epochs=3)
    proc = start(job_dir)
    _, err = proc.communicate(timeout=600)
    result = read_result(job_dir)
    assert proc.returncode == 0, (result, err.decode()[-3000:])
    events = read_jsonl(job_dir / "events.jsonl")
    logs = [e["text"] for e in events if e["type"] == "log"]
    assert "data-parallel on 2 CPU processes (gloo)" in logs
    assert sum(1 for text in logs if text.startswith("Training on ")) == 1  # the launcher's, not every rank's
    # 160 training items: 80 per rank, 10 steps of 8 an epoch on each, not 20 on one
    totals = [e["total"] for e in events if e["type"] == "progress" and "loss" in e]
    rank1 = read_jsonl(job_dir / "ranks" / "rank-1.events.jsonl")
    assert totals[-1] == 30 and [e["total"] for e in rank1 if e["type"] == "progress" and "loss" in e][-1] == 30
    predictions = read_jsonl(job_dir / "predictions.jsonl")
    assert sorted(p["item_id"] for p in predictions) == sorted(f"i{i}" for i in range(200))
    assert result["predictions"] == 200 and result["metrics"]["sentiment/holdout_accuracy"] >= 0.9
    ends = [json.loads((job_dir / "ranks" / f"rank-{r}.json").read_text()) for r in (0, 1)]
    assert [e["status"] for e in ends] == ["succeeded", "succeeded"]
    assert (job_dir / "exit_code").read_text() == "0\n"


def training_ranks(tmp_path: Path, model: Path) -> tuple[subprocess.Popen[bytes], Path, dict[int, int]]:
    """A long two-rank run, once both ranks train: the launcher, the job dir and the ranks' pids."""
    job_dir = hf_job(tmp_path, model, epochs=200)
    proc = start(job_dir)
    wait_for("both ranks training", lambda: len(rank_pids(job_dir, 2)) == 2 and any(
        e["type"] == "progress" for e in read_jsonl(job_dir / "ranks" / "rank-1.events.jsonl")))
    return proc, job_dir, rank_pids(job_dir, 2)


@pytest.mark.slow
def test_a_cancel_ends_every_rank(tmp_path: Path, tiny_bert: Path) -> None:
    proc, job_dir, pids = training_ranks(tmp_path, tiny_bert)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == 143
    result = read_result(job_dir)
    assert result["status"] == "cancelled" and result["reason"] == "cancelled"
    wait_for("the ranks to end", lambda: not any(alive(pid) for pid in pids.values()), timeout=60)


@pytest.mark.slow
def test_a_killed_rank_fails_the_run_naming_it(tmp_path: Path, tiny_bert: Path) -> None:
    proc, job_dir, pids = training_ranks(tmp_path, tiny_bert)
    os.kill(pids[1], signal.SIGKILL)
    proc.communicate(timeout=120)
    assert proc.returncode == 1
    result = read_result(job_dir)
    assert result["status"] == "failed"
    assert result["message"].startswith("rank 1 ended without finishing: it was killed from outside"), result
    wait_for("rank 0 to end", lambda: not alive(pids[0]), timeout=60)


@pytest.mark.slow
def test_zero_shot_ranks_each_ask_about_their_share_of_the_items(tmp_path: Path) -> None:
    """llm-zero-shot learns nothing: each rank predicts its block of the items, rank 0 writes them all."""
    from tests.harness.llm import example_reviews

    data = example_reviews()[:12]
    items = [{"id": i, "text": t} for i, t, _ in data]
    scheme = {"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"],
              "description": "Is this product review positive or negative?"}
    job = job_json("llm-zero-shot", (scheme,), {"base_model": str(_smollm2()), "batch_size": 6}, num_threads=1,
                   cpu_processes=2, device="cpu")
    job_dir = write_bundle(tmp_path, job, items, [], [])
    proc = start(job_dir)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, (read_result(job_dir), err.decode()[-3000:])
    predictions = read_jsonl(job_dir / "predictions.jsonl")
    assert [p["item_id"] for p in predictions] == [i for i, _, _ in data]
    assert all(set(p["probabilities"]) == {"positive", "negative"} for p in predictions)
