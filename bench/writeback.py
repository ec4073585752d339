"""Writeback of a run's predictions (C5): seconds to store 100k suggestions. Target: <= 2 s on 2 cores.

Ours: ``potato.server.training.runs.writeback.write_back`` on a real project (``Project.open`` of a config with
N items, writeback on for every item) and a run made by ``RunStore.create``, reading a
``predictions.jsonl`` of N rows, as the local backend calls it after a run.

Baseline, in the same run: the least any writeback must do with the same file and the same
durability. Parse every line with ``json.loads`` and ``executemany`` the same tuples into a fresh
SQLite file with the same pragmas (WAL, ``synchronous=FULL``) and the same ``suggestions`` table
(primary key and index as in potato.db), in one ``BEGIN IMMEDIATE ... COMMIT``. It skips only
what a correct writeback must add (validation, the labelled/unlabelled filter, the shown-run row),
so ``ours/bare`` is the price of those rules and of the glue around them.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path

import quick  # bench/quick.py: --quick, the sizes CI runs

import yaml

from potato.config import load_config
from potato.db import MIGRATIONS
from potato.project import Project
from potato.server.training.runs.store import RunStore
from potato.server.training.runs.writeback import write_back

TARGET_S = 2.0
SCHEMA = "sentiment"


def make_project(root: Path, n_items: int) -> Path:
    """A one-scheme project like tests/conftest.py's, writeback on for every item; the config path."""
    (root / "data").mkdir(parents=True)
    items = [{"id": f"r{i:06d}", "text": f"The item {i} {'broke after two days' if i % 2 else 'works'}."}
             for i in range(n_items)]
    (root / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    config = {
        "annotation_task_name": "Bench", "task_dir": ".", "data_files": ["data/reviews.json"],
        "item_properties": {"id_key": "id", "text_key": "text"}, "output_annotation_dir": "annotation_output",
        "annotation_schemes": [{"annotation_type": "radio", "name": SCHEMA, "description": "Positive?",
                                "labels": ["positive", "negative"]}],
        "model_training": {"enabled": True, "writeback": {"schemas": [SCHEMA], "include_unlabeled": True,
                                                          "min_confidence": 0.0}},
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def write_predictions(path: Path, n_items: int) -> None:
    """One prediction per item, as the worker writes them (results.prediction_row's keys)."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_items):
            row = {"item_id": f"r{i:06d}", "schema": SCHEMA, "label": "negative" if i % 2 else "positive",
                   "confidence": round(0.5 + (i % 50) / 100, 4)}
            fh.write(json.dumps(row) + "\n")


def time_ours(project: Project, store: RunStore, predictions: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds for one write_back into a suggestions table emptied beforehand (not timed)."""
    project.db.write([("DELETE FROM suggestions", ())])
    project.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    run = store.create("sklearn-text-classification", [SCHEMA], "local", {})
    os.sync()  # no dirty pages from the setup left for the timed commit's fsync to wait on
    began, cpu = time.perf_counter(), time.process_time()
    stats = write_back(project, run, predictions, {"holdout_accuracy": 0.9})
    return time.perf_counter() - began, time.process_time() - cpu, stats.written


def time_bare(db_path: Path, predictions: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds to json-parse the file and executemany it into a fresh table, one commit."""
    conn = sqlite3.connect(str(db_path), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    schema = MIGRATIONS[1]  # potato's own suggestions table and index, as the migration creates them
    table = schema[schema.index("CREATE TABLE suggestions"):schema.index("CREATE TABLE meta")]
    for statement in table.split(";"):
        if statement.strip():
            conn.execute(statement)
    os.sync()
    began, cpu = time.perf_counter(), time.process_time()
    rows = []
    with predictions.open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            rows.append(("bench-run", r["item_id"], r["schema"], json.dumps(r["label"]), r["confidence"]))
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO suggestions (run_id, item_id, schema, label, confidence) "
                     "VALUES (?, ?, ?, ?, ?)", rows)
    conn.execute("COMMIT")
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    conn.close()
    return elapsed, cpu, len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000, help="items and predictions (default 100000)")
    parser.add_argument("--repeats", type=int, default=3, help="alternating rounds; best of each (default 3)")
    args = quick.parse(parser, {"items": 2000, "repeats": 1})
    with tempfile.TemporaryDirectory(prefix="potato-bench-wb-") as tmp:
        root = Path(tmp)
        began = time.perf_counter()
        config = load_config(make_project(root / "project", args.items))
        project = Project.open(config)
        store = RunStore(project.db, config.training_dir / "runs")
        predictions = root / "predictions.jsonl"
        write_predictions(predictions, args.items)
        print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}; {args.items} items and "
              f"predictions ({predictions.stat().st_size / 1e6:.1f} MB); setup {time.perf_counter() - began:.1f} "
              "s, not timed")
        print(f"{'round':>5} {'ours s':>8} {'bare s':>8} {'ours/bare':>9} {'ours cpu':>8} {'bare cpu':>8} "
              f"{'written':>8}")
        ours_all, bare_all = [], []
        for k in range(args.repeats):
            ours, ours_cpu, written = time_ours(project, store, predictions)
            bare, bare_cpu, inserted = time_bare(root / f"bare-{k}.sqlite3", predictions)
            if written != args.items or inserted != args.items:
                raise SystemExit(f"round {k}: {written} (ours) / {inserted} (bare) rows, not {args.items}")
            ours_all.append(ours)
            bare_all.append(bare)
            print(f"{k + 1:>5} {ours:>8.3f} {bare:>8.3f} {ours / bare:>9.2f} {ours_cpu:>8.3f} "
                  f"{bare_cpu:>8.3f} {written:>8}", flush=True)
        project.db.close()
    ours, bare = min(ours_all), min(bare_all)
    print("(cpu: this process's CPU seconds; wall - cpu is mostly waiting for the disk: fsync, checkpoint)")
    print(f"\nwriteback of {args.items} predictions: ours {ours:.3f} s, bare parse+executemany {bare:.3f} s, "
          f"ratio {ours / bare:.2f}x (best of {args.repeats})")
    verdict = "PASS" if ours <= TARGET_S else "MISS"
    print(f"target <= {TARGET_S:g} s: {verdict} ({ours / TARGET_S:.0%} of the budget)")


if __name__ == "__main__":
    main()
