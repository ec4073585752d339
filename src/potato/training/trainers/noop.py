"""``noop``: the majority-class baseline, and the diagnostic trainer for run-machinery tests.

Standard library only, so it runs on any interpreter that runs the worker (check a new backend
with it before installing torch there). It predicts, per schema, the most frequent training
label with its frequency as confidence (multiselect: each label on when more than half of the
training items have it, confidence as :func:`multiselect_prediction` defines). On a span schema
it memorises: every stretch of text marked in training is marked again wherever it stands as
whole words, with its most frequent label, its confidence the share of its appearances in the
training texts that were marked so (longer stretches first, none overlapping). Its holdout score
is the floor any real trainer should beat.

Diagnostic parameters (for tests of cancel, kill and memory limits; harmless elsewhere):

- ``sleep_s``: sleep this long during fit, in 0.05 s slices, checking for a stop request and
  reporting progress (a slow trainer that a SIGTERM stops cleanly).
- ``ignore_term``: install ``SIG_IGN`` for SIGTERM at the start of fit (a trainer stuck where a
  signal cannot reach it: cancel must escalate to SIGKILL after grace_seconds).
- ``allocate_mb``: fill this many MB during fit (to hit ``max_ram_mb`` or a SLURM job's ``mem``).
- ``artifact_mb``: also save ``weights.bin`` of this many MB (tests and benchmarks of model copy-back).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import ClassVar, Mapping, Sequence

from potato.training.job.schemes import SchemeType
from potato.training.job.labels import label_names, label_spans
from potato.training.job.spans import ScoredSpan, Span, by_position
from potato.training.trainers.base import (
    Example,
    JobItem,
    Param,
    Prediction,
    TrainContext,
    Trainer,
    labelled,
    multiselect_prediction,
    write_labels_json,
)

SLICE_S = 0.05


class NoopTrainer(Trainer):
    name = "noop"
    description = "Majority-class baseline (standard library only); also a diagnostic trainer for tests"
    requires = ()
    annotation_types = (SchemeType.RADIO, SchemeType.MULTISELECT, SchemeType.SPAN, SchemeType.PAIRWISE)
    params: ClassVar[Mapping[str, Param]] = {
        "sleep_s": Param(0.0, (float,), "seconds to sleep during fit, stoppable by SIGTERM", minimum=0),
        "ignore_term": Param(False, (bool,), "ignore SIGTERM during fit (tests cancel escalation to SIGKILL)"),
        "allocate_mb": Param(0, (int,), "MB to allocate during fit (tests max_ram_mb)", minimum=0),
        "artifact_mb": Param(0, (int,), "MB of random model weights to save (tests model copy-back)", minimum=0),
    }

    def __init__(self, ctx: TrainContext) -> None:
        super().__init__(ctx)
        self.answers: dict[str, Prediction] = {}
        self.memory: dict[str, dict[str, tuple[str, float]]] = {}

    def fit(self, examples: Sequence[Example]) -> None:
        params = self.ctx.params
        if params["ignore_term"]:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.ctx.log("noop: ignoring SIGTERM (ignore_term)")
        # filled, not just reserved: a zeroed bytearray is untouched pages that no RSS limit sees
        ballast = bytearray(b"\x01") * (params["allocate_mb"] * 1024 * 1024) if params["allocate_mb"] else None
        self._sleep(float(params["sleep_s"]))
        del ballast
        for spec in self.ctx.schemas:
            rows = labelled(examples, spec.name)
            if not rows:
                continue
            if spec.spans:
                self.memory[spec.name] = memorise([(ex.item.text, label_spans(target)) for ex, target in rows])
            elif spec.multiselect:
                counts = Counter(label for _, target in rows for label in label_names(target))
                freq = {label: counts[label] / len(rows) for label in self.ctx.class_labels[spec.name]}
                # on for more than half of the items, as the majority vote puts a label on
                self.answers[spec.name] = multiselect_prediction(freq, inclusive=False)
            else:
                counts = Counter(str(target) for _, target in rows)
                best = max(counts.values())
                label = min(k for k, v in counts.items() if v == best)
                self.answers[spec.name] = Prediction(label, best / len(rows))

    def _sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        total = max(1, round(seconds / SLICE_S))
        deadline = time.monotonic() + seconds
        for step in range(1, total + 1):
            self.ctx.check_stop()
            time.sleep(max(0.0, min(SLICE_S, deadline - time.monotonic())))
            self.ctx.progress(step, total)

    def predict(self, items: Sequence[JobItem]) -> list[dict[str, Prediction | None]]:
        out: list[dict[str, Prediction | None]] = []
        for item in items:
            row: dict[str, Prediction | None] = {}
            for spec in self.ctx.schemas:
                if spec.name in self.memory:
                    found = recall(item.text, self.memory[spec.name])
                    row[spec.name] = Prediction(found, sum(s.confidence for s in found) / len(found) if found else 1.0)
                else:
                    row[spec.name] = self.answers.get(spec.name)
            out.append(row)
        return out

    def save(self, artifacts_dir: Path) -> None:
        write_labels_json(artifacts_dir, self.name, self.ctx.schemas, self.ctx.class_labels)
        model: dict[str, object] = {name: {"label": list(p.label) if isinstance(p.label, tuple) else p.label,
                                           "confidence": p.confidence} for name, p in self.answers.items()}
        model.update({name: {"memorised": {text: list(known) for text, known in sorted(memory.items())}}
                      for name, memory in self.memory.items()})
        (artifacts_dir / "model.json").write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
        size_mb = int(self.ctx.params["artifact_mb"])
        if size_mb:
            with (artifacts_dir / "weights.bin").open("wb") as out:
                for _ in range(size_mb):
                    out.write(os.urandom(1 << 20))


def _whole_words(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_")


def _appearances(text: str, stretch: str) -> list[int]:
    """Where ``stretch`` stands in ``text`` as whole words (the starts)."""
    found, at = [], text.find(stretch)
    while at >= 0:
        if _whole_words(text, at, at + len(stretch)):
            found.append(at)
        at = text.find(stretch, at + 1)
    return found


def memorise(examples: Sequence[tuple[str, Sequence[Span]]]) -> dict[str, tuple[str, float]]:
    """Each marked stretch of text: its most frequent label (ties: the label that sorts first) and the
    share of its whole-word appearances in the training texts that carry that label."""
    marked: dict[str, Counter[str]] = {}
    for text, spans in examples:
        for span in spans:
            stretch = text[span.start:span.end]
            marked.setdefault(stretch, Counter())[span.label] += 1
    memory: dict[str, tuple[str, float]] = {}
    for stretch, labels in marked.items():
        best = max(labels.values())
        label = min(k for k, v in labels.items() if v == best)
        seen = sum(len(_appearances(text, stretch)) for text, _ in examples)
        memory[stretch] = (label, min(1.0, best / max(1, seen)))
    return memory


def recall(text: str, memory: Mapping[str, tuple[str, float]]) -> tuple[ScoredSpan, ...]:
    """The memorised stretches in ``text``, longer ones first, none overlapping another, by position."""
    taken: list[ScoredSpan] = []
    for stretch in sorted(memory, key=lambda s: (-len(s), s)):
        label, confidence = memory[stretch]
        for start in _appearances(text, stretch):
            end = start + len(stretch)
            if all(end <= t.start or start >= t.end for t in taken):
                taken.append(ScoredSpan(start, end, label, confidence))
    return tuple(sorted(taken, key=by_position))
