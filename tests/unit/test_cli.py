"""The CLI as a user runs it: exit codes and messages of validate, import-labels, export, check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, List

import pytest

from potato.config import load_config
from potato.db import Database
from potato.labels import LabelStore

LONG_TIME = {"model_training": {"backends": {"cluster": {
    "type": "slurm", "host": "login", "remote_dir": "/shared/p", "time": "12:00:00"}}}}
R6 = ("model_training.backends.cluster.time is 12:00:00. A job that holds a GPU for more than 6 hours "
      "is long on a shared cluster; check its policy")


def potato(*args: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "potato", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_validate_valid_config(config_path: Path) -> None:
    proc = potato("validate", config_path)
    assert proc.returncode == 0 and f"{config_path} is valid." in proc.stdout


def test_validate_reports_pyhton_typo_with_fix(make_project: Callable[..., Path]) -> None:
    path = make_project(model_training={"backends": {"gpu-server": {"type": "ssh", "host": "gpu", "pyhton": "/x"}}})
    proc = potato("validate", path)
    assert proc.returncode == 1
    assert "model_training.backends.gpu-server.pyhton: unknown key for an ssh backend (did you mean 'python'?)" in proc.stdout


def test_strict_fails_on_warning_until_acknowledged(make_project: Callable[..., Path]) -> None:
    path = make_project(**LONG_TIME)
    plain = potato("validate", path)
    assert plain.returncode == 0 and R6 in plain.stdout
    assert potato("validate", path, "--strict").returncode == 1
    acked = make_project(**LONG_TIME, validation={"acknowledge": ["model_training.backends.cluster.time is"]})
    proc = potato("validate", acked, "--strict")
    assert proc.returncode == 0 and "acknowledged: " + R6 in proc.stdout
    report = json.loads(potato("validate", acked, "--json").stdout)
    assert report["strict_valid"] is True and report["acknowledged"][0]["message"] == R6


def test_start_refuses_errors_and_prints_warnings(make_project: Callable[..., Path]) -> None:
    bad = make_project(model_training={"backend": "gpu"})
    proc = potato("start", bad, "-p", "1")
    assert proc.returncode == 1 and "model_training.backend: 'gpu' names no backend" in proc.stderr


def test_start_prints_acknowledged_warnings_too(make_project: Callable[..., Path]) -> None:
    """R6/R7: acknowledge is for `potato validate` only; the server still says it at start."""
    path = make_project(**LONG_TIME, validation={"acknowledge": ["model_training.backends.cluster.time is", "short"]},
                        data_files=["data/missing.json"])
    proc = potato("start", path, "-p", "1")  # stops at the missing data file, after the warnings
    assert f"warning: {R6}" in proc.stderr and "validation.acknowledge" not in proc.stderr
    assert "missing.json: data file not found" in proc.stderr


def test_start_names_the_bad_data_file(make_project: Callable[..., Path]) -> None:
    path = make_project()
    (path.parent / "data" / "reviews.json").write_text('[{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]')
    proc = potato("start", path, "-p", "1")
    assert proc.returncode == 1 and "duplicate id 'a'" in proc.stderr and "reviews.json" in proc.stderr


def _write(path: Path, rows: List[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _stored(config_path: Path) -> List[Any]:
    store = LabelStore(Database(load_config(config_path).database_path))
    return [(lab.user, lab.item_id, lab.schema, lab.value, lab.source.value) for lab in store.iter_labels()]


def test_import_labels_good_bad_skip_and_idempotent(config_path: Path, tmp_path: Path) -> None:
    good = _write(tmp_path / "good.jsonl", [
        {"id": "r000", "schema": "sentiment", "label": "positive"},
        {"id": "r001", "schema": "aspects", "label": ["price"]},
    ])
    proc = potato("import-labels", config_path, good, "--user", "gold")
    assert proc.returncode == 0 and "Imported 2 label(s) for user 'gold' (2 new, 0 changed, 0 unchanged)." in proc.stdout
    again = potato("import-labels", config_path, good, "--user", "gold")  # the same file twice says so
    assert again.returncode == 0 and "(0 new, 0 changed, 2 unchanged)" in again.stdout
    assert len(_stored(config_path)) == 2
    changed = _write(tmp_path / "changed.jsonl", [{"id": "r000", "schema": "sentiment", "label": "negative"}])
    assert "(0 new, 1 changed, 0 unchanged)" in potato("import-labels", config_path, changed, "--user", "gold").stdout
    typo = _write(tmp_path / "typo.jsonl", [{"id": "r000", "schema": "sentimnet", "label": "negative"}])
    assert "unknown schema 'sentimnet' (did you mean 'sentiment'?)" in potato(
        "import-labels", config_path, typo, "--user", "gold").stderr

    mixed = _write(tmp_path / "mixed.jsonl", [
        {"id": "r002", "schema": "sentiment", "label": "negative"},
        {"id": "nope", "schema": "sentiment", "label": "negative"},
        {"id": "r003", "schema": "sentiment", "label": "meh"},
    ])
    proc = potato("import-labels", config_path, mixed, "--user", "gold")
    assert proc.returncode == 1
    assert f"{mixed}:2: unknown item id 'nope'" in proc.stderr
    assert f"{mixed}:3: 'meh' is not a valid label for 'sentiment'; expected one of: positive, negative" in proc.stderr
    assert "nothing was imported" in proc.stderr and len(_stored(config_path)) == 2

    proc = potato("import-labels", config_path, mixed, "--user", "gold", "--skip-invalid")
    assert proc.returncode == 0 and "Imported 1 label(s)" in proc.stdout and "skipped 2 invalid" in proc.stdout
    assert ("gold", "r002", "sentiment", "negative", "import") in _stored(config_path)


def test_import_labels_csv(config_path: Path, tmp_path: Path) -> None:
    csv_path = tmp_path / "l.csv"
    csv_path.write_text("id,schema,label\nr000,sentiment,negative\nr001,aspects,price|quality\n")
    proc = potato("import-labels", config_path, csv_path, "--user", "pilot")
    assert proc.returncode == 0, proc.stderr
    assert sorted(_stored(config_path)) == [
        ("pilot", "r000", "sentiment", "negative", "import"),
        ("pilot", "r001", "aspects", ["price", "quality"], "import"),
    ]


def test_export_writes_jsonl(config_path: Path, tmp_path: Path) -> None:
    good = _write(tmp_path / "g.jsonl", [{"id": "r000", "schema": "sentiment", "label": "positive"}])
    potato("import-labels", config_path, good, "--user", "u")
    out = tmp_path / "out.jsonl"
    proc = potato("export", config_path, "-o", out)
    assert proc.returncode == 0 and "Exported 1 labels" in proc.stderr
    assert json.loads(out.read_text())["label"] == "positive"


def test_training_check_local(config_path: Path) -> None:
    proc = potato("training", "check", "local", config_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith("local: this machine, ")
    assert potato("training", "check", "mars", config_path).returncode == 1


@pytest.mark.parametrize("args", [["validate"], ["validate", "/no/such.yaml"], ["import-labels"]])
def test_usage_errors_exit_2(args: List[str]) -> None:
    assert potato(*args).returncode == 2


def test_validate_reads_the_data_files_as_start_would(make_project: Callable[..., Path]) -> None:
    """It said "valid" for a missing data file, duplicate ids and broken JSON lines."""
    config_path = make_project()
    data = config_path.parent / "data"
    cases = {
        "missing.json": (None, "missing.json: data file not found"),
        "dupes.jsonl": ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "dupes.jsonl:2: duplicate id 'a'"),
        "broken.jsonl": ('{"id": "a", "text": "x"}\n{"id": "b", \n', "broken.jsonl:2: not valid JSON"),
        "empty.json": ("[]", "No items in"),
    }
    for name, (content, expected) in cases.items():
        if content is not None:
            (data / name).write_text(content)
        config_path.write_text(config_path.read_text().replace("data/reviews.json", f"data/{name}"))
        proc = potato("validate", config_path)
        assert proc.returncode == 1 and expected in proc.stdout, (name, proc.stdout)
        config_path.write_text(config_path.read_text().replace(f"data/{name}", "data/reviews.json"))


def test_import_labels_csv_with_an_unclosed_quote_names_its_line(config_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text('id,schema,label\nr000,sentiment,positive\nr001,sentiment,"negative\nr002,sentiment,positive\n')
    proc = potato("import-labels", config_path, path, "--user", "gold")
    assert proc.returncode == 1 and f"{path}:3: a quoted field that starts on this line is never closed" in proc.stderr
    assert _stored(config_path) == []


def test_the_agent_command_imports_nothing_of_the_server() -> None:
    """`potato training agent` runs on a Python 3.8 machine without Flask (issue 19): it must not import
    it, nor the config modules (YAML) the server's commands load."""
    import subprocess
    import sys

    code = ("import sys\nsys.argv = ['potato', 'training', 'agent', '--help']\nfrom potato.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('flask', 'werkzeug', 'jinja2', 'yaml', "
            "'gunicorn') or m.startswith(('potato.server', 'potato.config'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert "--server" in out.stdout
