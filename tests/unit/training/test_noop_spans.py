"""noop on span schemes (issue 23): the standard-library baseline that lets a span run go through any
backend without scikit-learn or torch on the host. It marks what it saw marked, wherever the same
words stand again."""

from __future__ import annotations

from pathlib import Path

from potato.training.job.spans import ScoredSpan, Span
from potato.training.trainers.noop import memorise, recall
from potato.training.worker.program import run_job

from tests.harness.jobdirs import job_json, read_jsonl, read_result, write_bundle
from tests.harness.trainingdata import ENTITIES, sentences


def test_memorised_stretches_are_marked_as_whole_words_longest_first() -> None:
    memory = memorise([("Ada met Ada Lovelace in Paris.", [Span(0, 3, "PER"), Span(8, 20, "PER"), Span(24, 29, "LOC")]),
                       ("Paris is not Adam.", [Span(0, 5, "ORG")])])
    # "Ada" stands twice as whole words in the texts and was marked once alone (the second is inside
    # "Ada Lovelace"): 1 of 2; "Adam" is not "Ada". "Paris": LOC once, ORG once, the tie to LOC.
    assert memory == {"Ada": ("PER", 0.5), "Ada Lovelace": ("PER", 1.0), "Paris": ("LOC", 0.5)}
    assert recall("Ada Lovelace met Ada, not Adam, in Paris.", memory) == (
        ScoredSpan(0, 12, "PER", 1.0), ScoredSpan(17, 20, "PER", 0.5), ScoredSpan(35, 40, "LOC", 0.5))
    assert recall("Nobody here.", memory) == ()


def test_a_noop_span_run_scores_and_predicts_spans(tmp_path: Path) -> None:
    data = sentences(40)
    labels = [{"item_id": i, "schema": "names", "label": spans, "user": "ann"} for i, _, spans in data[:35]]
    holdout = [i for k, (i, _, _) in enumerate(data[:35]) if k % 5 == 0]
    job_dir = write_bundle(tmp_path, job_json("noop", (ENTITIES,)), [{"id": i, "text": t} for i, t, _ in data],
                           labels, holdout)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    metrics = read_result(job_dir)["metrics"]
    assert metrics["names/holdout_f1"] >= 0.9  # eight names and eight places, all seen in training
    rows = {r["item_id"]: r for r in read_jsonl(job_dir / "predictions.jsonl")}
    text, spans = data[39][1], data[39][2]
    assert [(s["start"], s["end"], s["label"]) for s in rows[data[39][0]]["label"]] == [
        (s["start"], s["end"], s["label"]) for s in spans], text
