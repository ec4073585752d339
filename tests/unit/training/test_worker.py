"""The worker as the backends run it: ``python -m potato.training.worker JOB_DIR`` in a subprocess.

Each test checks the files the server reads (result.json, exit_code, events.jsonl,
predictions.jsonl, artifacts/, stderr.log), for success and for every way a run can end.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.harness.jobdirs import (
    SENTIMENT,
    assert_failed,
    events,
    job_json,
    read_exit_code,
    read_jsonl,
    read_result,
    review_job,
    run_worker,
    start_worker,
    worker_env,
    write_bundle,
)


def wait_for(job_dir: Path, predicate: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = job_dir / "events.jsonl"
        if path.exists() and any(predicate(e) for e in read_jsonl(path)):
            return
        time.sleep(0.05)
    raise AssertionError(f"no matching event within {timeout} s")


def assert_complete_run(job_dir: Path, trainer: str, n_items: int = 40) -> dict[str, Any]:
    assert read_exit_code(job_dir) == 0
    result = read_result(job_dir)
    assert result["status"] == "succeeded" and result["reason"] is None and result["message"] is None
    assert result["trainer"] == trainer and result["device"] == "cpu"
    rows = read_jsonl(job_dir / "predictions.jsonl")
    assert result["predictions"] == len(rows) == 2 * n_items  # every item (labelled or not), every schema
    assert {(r["item_id"], r["schema"]) for r in rows} == {
        (f"r{i:03d}", s) for i in range(n_items) for s in ("sentiment", "aspects")
    }
    if trainer == "sklearn-text-classification":  # a model that gives every label's probability passes them on
        assert all(set(r["probabilities"]) == ({"positive", "negative"} if r["schema"] == "sentiment"
                                               else {"price", "quality", "delivery"}) for r in rows)
    for row in rows:
        assert {"item_id", "schema", "label", "confidence"} <= set(row) <= {
            "item_id", "schema", "label", "confidence", "probabilities"}
        assert 0.0 <= row["confidence"] <= 1.0
        if "probabilities" in row:  # each label's, for active learning's margin and entropy
            assert all(0.0 <= p <= 1.0 for p in row["probabilities"].values())
            if row["schema"] == "sentiment":
                assert row["probabilities"][row["label"]] == row["confidence"]
        assert isinstance(row["label"], list if row["schema"] == "aspects" else str)
    metrics = result["metrics"]
    assert metrics["n_train"] == 28 and metrics["n_holdout"] == 8  # 36 labelled, every 5th held out
    for name in ("holdout_accuracy", "holdout_macro_f1", "sentiment/holdout_accuracy", "aspects/holdout_macro_f1"):
        assert 0.0 <= metrics[name] <= 1.0
    metric_events = {e["name"]: e["value"] for e in events(job_dir, "metric")}
    assert metric_events["holdout_accuracy"] == metrics["holdout_accuracy"]
    assert all(isinstance(e["t"], float) for e in read_jsonl(job_dir / "events.jsonl"))
    assert events(job_dir, "step")[-1]["text"] == "finished"
    labels = json.loads((job_dir / "artifacts" / "labels.json").read_text())
    assert labels["schemas"]["sentiment"]["labels"] == ["positive", "negative"]
    assert "step: reading the job" in (job_dir / "stderr.log").read_text()
    assert not list(job_dir.glob(".*.tmp"))
    return result


def test_noop_run(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop", num_threads=1)
    proc = run_worker(job_dir)
    assert proc.returncode == 0, proc.stderr.decode()
    result = assert_complete_run(job_dir, "noop")
    assert result["metrics"]["sentiment/holdout_accuracy"] == 0.5  # the majority baseline on balanced data
    assert {"level": "info", "text": "Training on CPU (1 thread)"}.items() <= events(job_dir, "log")[0].items()
    assert json.loads((job_dir / "artifacts" / "model.json").read_text())["aspects"]["label"] == ["quality"]


def test_sklearn_run(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "sklearn-text-classification")
    proc = run_worker(job_dir)
    assert proc.returncode == 0, proc.stderr.decode()
    result = assert_complete_run(job_dir, "sklearn-text-classification")
    assert result["metrics"]["sentiment/holdout_accuracy"] >= 0.75
    assert (job_dir / "artifacts" / "model.pkl").stat().st_size > 0


def test_cpu_only_trainer_warns_about_a_requested_gpu(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop", device="cuda:1")
    assert run_worker(job_dir).returncode == 0
    assert [e["text"] for e in events(job_dir, "warning")] == [
        "Trainer 'noop' runs on the CPU only; device cuda:1 is not used"
    ]


def test_empty_holdout_reports_no_accuracy(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop", holdout_every=10 ** 6)
    (job_dir / "bundle" / "split.json").write_text('{"holdout": []}')
    assert run_worker(job_dir).returncode == 0
    metrics = read_result(job_dir)["metrics"]
    assert metrics["n_holdout"] == 0 and metrics["n_train"] == 36
    assert "holdout_accuracy" not in metrics and "holdout_macro_f1" not in metrics


def test_labels_for_unknown_items_are_ignored_with_a_warning(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop")
    with (job_dir / "bundle" / "labels.jsonl").open("a") as fh:
        fh.write(json.dumps({"item_id": "gone", "schema": "sentiment", "label": "positive", "user": "u"}) + "\n")
    assert run_worker(job_dir).returncode == 0
    assert "1 label(s) name items that are not in items.jsonl; they were ignored" in [
        e["text"] for e in events(job_dir, "warning")
    ]


def test_missing_job_json_is_a_bad_job(tmp_path: Path) -> None:
    (tmp_path / "bundle").mkdir()
    proc = run_worker(tmp_path)
    assert proc.returncode == 2
    assert "job.json is missing" in assert_failed(tmp_path, 2, "bad_job")


def test_invalid_job_json_is_a_bad_job(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop")
    (job_dir / "bundle" / "job.json").write_text('{"format": 1, "trainer": "noop"')
    assert run_worker(job_dir).returncode == 2
    assert "job.json is not valid JSON" in assert_failed(job_dir, 2, "bad_job")


def test_a_job_dir_that_does_not_exist(tmp_path: Path) -> None:
    proc = run_worker(tmp_path / "nope")
    assert proc.returncode == 2
    assert b"is not a folder" in proc.stderr


def test_unknown_trainer(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "bert")
    assert run_worker(job_dir).returncode == 2
    assert assert_failed(job_dir, 2, "bad_job") == (
        "Unknown trainer 'bert'. Valid trainers are: decision-calibrate, hf-llm-classification, hf-llm-preference, "
        "hf-text-classification, hf-token-classification, llm-zero-shot, noop, "
        "sklearn-text-classification, sklearn-token-classification"
    )


def test_unknown_parameter(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop", params={"sleep": 1})
    assert run_worker(job_dir).returncode == 2
    assert assert_failed(job_dir, 2, "bad_job") == (
        "Trainer 'noop' has no parameter 'sleep'. Valid parameters are: allocate_mb, artifact_mb, ignore_term, sleep_s"
    )


def test_no_training_labels(tmp_path: Path) -> None:
    job = job_json("noop", (SENTIMENT,))
    items = [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]
    labels = [{"item_id": "a", "schema": "sentiment", "label": "positive", "user": "u"}]
    job_dir = write_bundle(tmp_path, job, items, labels, ["a"])
    assert run_worker(job_dir).returncode == 1
    assert assert_failed(job_dir, 1, "no_labels") == (
        "No training item has a label for schema 'sentiment' (1 labelled item(s), 1 of them in the holdout); "
        "label more items, then start the run again"
    )


def test_missing_package_is_e4(tmp_path: Path) -> None:
    """Without site-packages (-S) scikit-learn is really missing: exit 3 and the E4 text with its fix."""
    job_dir = review_job(tmp_path, "sklearn-text-classification")
    proc = subprocess.run([sys.executable, "-S", "-m", "potato.training.worker", str(job_dir)], check=False,
                          env=worker_env(), capture_output=True, timeout=60)
    assert proc.returncode == 3, proc.stderr.decode()
    assert assert_failed(job_dir, 3, "import") == (
        "Trainer 'sklearn-text-classification' could not be imported: no module named 'sklearn'; install it "
        f"in the interpreter that runs the worker ({sys.executable} -m pip install scikit-learn)"
    )


def test_a_package_missing_in_one_of_our_images_names_the_image_that_has_it() -> None:
    """Inside a container a pip install is gone when it stops: the fix names an image instead (issue 19)."""
    from potato.training.job.failures import TrainerImportError, image_name

    missing_torch = ModuleNotFoundError("No module named 'torch'", name="torch")
    message = str(TrainerImportError("hf-text-classification", missing_torch, image="potato-agent"))
    assert message == (
        "Trainer 'hf-text-classification' could not be imported: no module named 'torch'; the image potato-agent "
        "has the CPU trainers only; run the agent on the GPU image instead (potato-agent built with "
        "--build-arg BASE_IMAGE=potato-worker-cuda, see docs/containers.md)")
    missing_other = ModuleNotFoundError("No module named 'sklearn'", name="sklearn")
    message = str(TrainerImportError("sklearn-text-classification", missing_other, image="potato-worker-cuda"))
    assert "pip install" not in message
    assert "build an image FROM potato-worker-cuda that installs scikit-learn" in message
    assert image_name("/nonexistent/potato-image") is None


def test_broken_package_is_e4(tmp_path: Path) -> None:
    """A transformers that fails to import (here: a stand-in on PYTHONPATH that raises ImportError)."""
    fake = tmp_path / "fake"
    (fake / "transformers").mkdir(parents=True)
    (fake / "transformers" / "__init__.py").write_text(
        "raise ImportError('transformers needs tokenizers>=0.22 (found 0.13)')\n")
    job_dir = review_job(tmp_path / "job", "hf-text-classification", params={"base_model": "/nowhere"})
    assert run_worker(job_dir, extra_path=[str(fake)]).returncode == 3
    message = assert_failed(job_dir, 3, "import")
    assert message == (
        "Trainer 'hf-text-classification' could not be imported: transformers needs tokenizers>=0.22 (found 0.13); "
        "install or upgrade its packages in the interpreter that runs the worker "
        f"({sys.executable} -m pip install -U torch transformers peft)"
    )


def test_sigterm_cancels_at_the_next_step(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop", params={"sleep_s": 30})
    proc = start_worker(job_dir)
    try:
        wait_for(job_dir, lambda e: e["type"] == "progress")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 143
    finally:
        proc.kill()
        proc.communicate()
    assert read_exit_code(job_dir) == 143
    result = read_result(job_dir)
    assert (result["status"], result["reason"]) == ("cancelled", "cancelled")
    assert result["message"] == "Cancelled (SIGTERM) before the run finished"
    assert "Stop requested (SIGTERM); stopping at this step" in [e["text"] for e in events(job_dir, "log")]


def test_second_sigterm_stops_at_once(tmp_path: Path) -> None:
    """The cold stop in the signal handler itself: a trainer that never reaches a step boundary."""
    script = (
        "import os, signal, sys, time\n"
        "from pathlib import Path\n"
        "from potato.training.job.results import Result\n"
        "from potato.training.worker.program import StopFlag, _on_signal_factory\n"
        "stop, result = StopFlag(), Result(trainer='noop')\n"
        f"handler = _on_signal_factory(stop, Path({str(tmp_path)!r}), result, time.monotonic())\n"
        "signal.signal(signal.SIGTERM, handler)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "assert stop() and not Path(sys.argv[1], 'exit_code').exists()\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=False, env=worker_env(), timeout=20,
                          capture_output=True)
    assert proc.returncode == 143, proc.stderr.decode()
    assert read_exit_code(tmp_path) == 143
    result = read_result(tmp_path)
    assert (result["status"], result["reason"], result["trainer"]) == ("cancelled", "cancelled", "noop")
    assert read_jsonl(tmp_path / "events.jsonl")[-1]["text"].startswith("Stopped at once by a second SIGTERM")


def test_ignore_term_needs_sigkill(tmp_path: Path) -> None:
    """The diagnostic for cancel escalation: SIGTERM is ignored, only SIGKILL ends the worker."""
    job_dir = review_job(tmp_path, "noop", params={"sleep_s": 60, "ignore_term": True})
    proc = start_worker(job_dir)
    try:
        wait_for(job_dir, lambda e: e["type"] == "progress")
        proc.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        proc.kill()
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.communicate()
    assert not (job_dir / "exit_code").exists()


def test_max_ram_mb_is_enforced(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop", params={"allocate_mb": 2048}, max_ram_mb=300)
    assert run_worker(job_dir).returncode == 4
    assert assert_failed(job_dir, 4, "oom") == (
        "The run hit max_ram_mb (300 MB); raise max_ram_mb or train on fewer items"
    )


def test_max_ram_mb_leaves_room_for_a_small_run(tmp_path: Path) -> None:
    job_dir = review_job(tmp_path, "noop", params={"allocate_mb": 50}, max_ram_mb=300)
    proc = run_worker(job_dir)
    assert proc.returncode == 0, proc.stderr.decode()
