"""The calibration report from what the project holds: the judges' draws, the annotators' labels on
the sample, and the files upstream writes (``llm_labels.jsonl``, ``report.json``, ``report.html``).

Only annotators' own labels count as the reference (not imported ones, not a run's): the point is
how the judges compare with the people who labelled blind.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import render_template

from potato.labels import LabelSource
from potato.server.judging.runner import JudgeRunner, judged_items
from potato.study.judging import report, vote

if TYPE_CHECKING:
    from potato.server.context import Project


def calibration_report(project: Project, runner: JudgeRunner) -> dict[str, Any]:
    """The status with, once a sample is drawn, each question's figures."""
    jc = runner.jc
    status = runner.status()
    sample = status.pop("sample") or []
    written = [name for name in (jc.labels_file, jc.report_json, jc.report_html) if (jc.out_dir / name).is_file()]
    out: dict[str, Any] = {**status, "sample_size": len(sample), "sample_labelled": 0, "num_raters": jc.num_raters,
                           "gold": jc.gold, "out_dir": str(jc.out_dir), "written": written, "sample_items": sample,
                           "questions": {}}
    if not sample:
        return out
    draws = runner.store.draws(runner.digest)
    in_sample = set(sample)
    raters_per_item: dict[str, set[str]] = {}
    for schema in jc.schemas:
        scheme = project.config.scheme(schema)
        options = list(scheme.labels) if scheme is not None else []
        judged = {j.model: {item_id: vote([d.label for d in draws.get((j.model, item_id, schema), [])])
                            for item_id in sample} for j in jc.judges}
        humans = _human_labels(project, schema, in_sample)
        for user, labels in humans:
            for item_id in labels:
                raters_per_item.setdefault(item_id, set()).add(user)
        out["questions"][schema] = report(options, schema in jc.ordinal, judged, humans, sample, jc.gold, jc.n_bins)
    out["sample_labelled"] = sum(1 for item_id in sample if len(raters_per_item.get(item_id, ())) >= jc.num_raters)
    return out


def _human_labels(project: Project, schema: str, sample: set[str]) -> list[tuple[str, dict[str, str]]]:
    """Each annotator's labels on the sample, the earliest annotator first (``gold: single`` takes them)."""
    first: dict[str, float] = {}
    labels: dict[str, dict[str, str]] = {}
    for label in project.labels.iter_labels(schema=schema):
        if label.source is not LabelSource.HUMAN or label.item_id not in sample:
            continue
        if isinstance(label.value, (str, int)) and not isinstance(label.value, bool):
            labels.setdefault(label.user, {})[label.item_id] = str(label.value)
            first[label.user] = min(first.get(label.user, label.updated_at), label.updated_at)
    return [(user, labels[user]) for user in sorted(labels, key=lambda u: (first[u], u))]


def llm_label_lines(project: Project, runner: JudgeRunner) -> list[dict[str, Any]]:
    """One line per judge, item and question, upstream's shape: the modal label, its confidence, k and
    every draw (None where the reply named no option)."""
    draws = runner.store.draws(runner.digest)
    lines = []
    for item in judged_items(project, runner.jc):
        for schema in runner.jc.schemas:
            for judge in runner.jc.judges:
                found = draws.get((judge.model, item.id, schema))
                if not found:
                    continue
                samples = [d.label for d in found]
                modal, confidence = vote(samples)
                lines.append({"model": judge.model, "item_id": item.id, "schema": schema, "modal_label": modal,
                              "confidence": round(confidence, 4), "k": len(samples), "samples": samples})
    return lines


def write_report(project: Project, runner: JudgeRunner) -> tuple[dict[str, Any], list[Path]]:
    """The report, written with the judges' labels into ``output.dir`` (the server's account's alone)."""
    jc = runner.jc
    built = {**calibration_report(project, runner), "task": project.config.annotation_task_name,
             "written_at": time.time()}
    folder = jc.out_dir
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    lines = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in llm_label_lines(project, runner))
    html = render_template("judge_report.html", report=built)
    written = [_write(folder / jc.labels_file, lines),
               _write(folder / jc.report_json, json.dumps(built, indent=2, ensure_ascii=False) + "\n"),
               _write(folder / jc.report_html, html)]
    return built, written


def _write(path: Path, text: str) -> Path:
    """Whole or not at all: a reader never sees half a report."""
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(part, path)
    return path
