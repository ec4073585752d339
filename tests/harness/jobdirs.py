"""Job dirs as the server builds them (``JOB_DIR/bundle/``), for worker and trainer tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

SRC = Path(__file__).resolve().parents[2] / "src"

SENTIMENT = {"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"]}
ASPECTS = {"name": "aspects", "annotation_type": "multiselect", "labels": ["price", "quality", "delivery"]}


def job_json(trainer: str, schemes: Sequence[Mapping[str, Any]] = (SENTIMENT,),
             params: Mapping[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "format": 1, "run_id": "test-run", "trainer": trainer,
        "schemes": [dict(s) for s in schemes],
        "params": dict(params or {}), "device": "auto", "grace_seconds": 20,
        "num_threads": None, "max_ram_mb": None, "seed": 0,
    }
    job.update(fields)
    return job


def write_bundle(job_dir: Path, job: Mapping[str, Any], items: Iterable[Mapping[str, Any]],
                 labels: Iterable[Mapping[str, Any]], holdout: Iterable[str]) -> Path:
    bundle = job_dir / "bundle"
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "job.json").write_text(json.dumps(job), encoding="utf-8")
    (bundle / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    (bundle / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labels), encoding="utf-8")
    (bundle / "split.json").write_text(json.dumps({"holdout": list(holdout)}), encoding="utf-8")
    return job_dir


def pack_bundle(job_dir: Path, dest: Path) -> Path:
    """``job_dir/bundle/``'s files as the ``bundle.tar.gz`` the server keeps in a run folder (``dest``)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest / "bundle.tar.gz", "w:gz") as tar:
        for path in sorted((job_dir / "bundle").iterdir()):
            tar.add(str(path), arcname=path.name)
    return dest / "bundle.tar.gz"


def reviews(n: int = 40) -> list[tuple[str, str, str]]:
    """(id, text, sentiment): even ids positive, odd negative; words a linear model can learn."""
    good = ["works perfectly", "is great", "exceeded my expectations", "is sturdy and well made"]
    bad = ["broke after two days", "was a waste of money", "arrived damaged", "is far too noisy"]
    out = []
    for i in range(n):
        words = good if i % 2 == 0 else bad
        out.append((f"r{i:03d}", f"The item {i} {words[i % 4]}.",
                    "positive" if i % 2 == 0 else "negative"))
    return out


def review_job(job_dir: Path, trainer: str, n: int = 40, params: Mapping[str, Any] | None = None,
               unlabelled: int = 4, holdout_every: int = 5, **fields: Any) -> Path:
    """``n`` reviews, all but the last ``unlabelled`` labelled (sentiment by one annotator, aspects by
    two); every ``holdout_every``-th labelled item in the holdout."""
    data = reviews(n)
    items = [{"id": i, "text": t} for i, t, _ in data]
    labels: list[dict[str, Any]] = []
    for item_id, _, sentiment in data[: n - unlabelled]:
        labels.append({"item_id": item_id, "schema": "sentiment", "label": sentiment, "user": "ann"})
        aspects = ["quality"] if sentiment == "positive" else ["quality", "delivery"]
        for user in ("ann", "bob"):
            labels.append({"item_id": item_id, "schema": "aspects", "label": aspects, "user": user})
    holdout = [item_id for k, (item_id, _, _) in enumerate(data[: n - unlabelled]) if k % holdout_every == 0]
    job = job_json(trainer, (SENTIMENT, ASPECTS), params, **fields)
    return write_bundle(job_dir, job, items, labels, holdout)


def worker_env(extra_path: Sequence[str] = ()) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(list(extra_path) + [str(SRC)])
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    return env


def start_worker(job_dir: Path, extra_path: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "potato.training.worker", str(job_dir)],
                            env=worker_env(extra_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_worker(job_dir: Path, extra_path: Sequence[str] = (), timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "potato.training.worker", str(job_dir)], check=False,
                          env=worker_env(extra_path), capture_output=True, timeout=timeout)


def read_result(job_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((job_dir / "result.json").read_text(encoding="utf-8"))
    return data


def read_exit_code(job_dir: Path) -> int:
    return int((job_dir / "exit_code").read_text(encoding="utf-8").strip())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def events(job_dir: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in read_jsonl(job_dir / "events.jsonl") if e["type"] == kind]


def assert_failed(job_dir: Path, code: int, reason: str) -> str:
    assert read_exit_code(job_dir) == code
    result = read_result(job_dir)
    assert (result["status"], result["reason"]) == ("failed", reason)
    assert not (job_dir / "predictions.jsonl").exists()
    message: str = result["message"]
    assert message in (job_dir / "stderr.log").read_text()
    assert events(job_dir, "log")[-1] == {**events(job_dir, "log")[-1], "level": "error", "text": message}
    return message
