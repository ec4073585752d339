"""R10 and C4: what a start-run request may name, checked before anything is queued (pure)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from potato.config import load_config
from potato.server.training.run_requests import RunRequestError, check_run_request

TRAINERS = {
    "noop": {"name": "noop", "local_only": False},
    "decision-calibrate": {"name": "decision-calibrate", "local_only": True},
    "sklearn-text-classification": {"name": "sklearn-text-classification", "local_only": False},
}


@pytest.fixture
def cfg(make_project: Callable[..., Path]) -> Any:
    return load_config(make_project(model_training={
        "enabled": True,
        "writeback": {"schemas": ["sentiment"]},
        "trainer_params": {"noop": {"sleep_s": 1}},
        "backends": {"gpu-server": {"type": "ssh", "host": "gpu.example.org"},
                     "cluster": {"type": "slurm", "host": "login.example.org", "remote_dir": "/shared/potato"}},
    }))


def _error(cfg: Any, body: Any) -> RunRequestError:
    with pytest.raises(RunRequestError) as err:
        check_run_request(cfg, body, TRAINERS)
    return err.value


def test_defaults_and_param_merge(cfg: Any) -> None:
    trainer, schemas, backend, params = check_run_request(cfg, {"trainer": "noop", "params": {"ignore_term": True}}, TRAINERS)
    assert (trainer, schemas, backend) == ("noop", ["sentiment"], "local")
    assert params == {"sleep_s": 1, "ignore_term": True}
    assert check_run_request(cfg, {}, TRAINERS)[0] == "sklearn-text-classification"


def test_unknown_backend_is_409_with_the_list(cfg: Any) -> None:
    err = _error(cfg, {"trainer": "noop", "backend": "mars"})
    assert err.status == 409 and err.extra["backends"] == ["local", "gpu-server", "cluster"]
    assert "Backends: local, gpu-server, cluster" in str(err)


def test_every_configured_backend_takes_runs(cfg: Any) -> None:
    for name in ("gpu-server", "cluster"):
        assert check_run_request(cfg, {"trainer": "noop", "backend": name}, TRAINERS)[2] == name


def test_local_only_trainer_refused_elsewhere(cfg: Any) -> None:
    err = _error(cfg, {"trainer": "decision-calibrate", "backend": "gpu-server"})
    assert err.status == 400 and "runs only on the local backend" in str(err)


def test_unknown_trainer_and_schema_are_400_naming_valid_ones(cfg: Any) -> None:
    err = _error(cfg, {"trainer": "bert-9000"})
    assert err.status == 400 and "Trainers: decision-calibrate, noop, sklearn-text-classification" in str(err)
    err = _error(cfg, {"trainer": "noop", "schemas": ["note"]})
    assert err.status == 400 and "Trainable schemas: sentiment, aspects" in str(err)
    assert _error(cfg, {"trainer": "noop", "params": [1]}).status == 400
    assert _error(cfg, ["not", "an", "object"]).status == 400


def test_training_off_is_409(make_project: Callable[..., Path]) -> None:
    off = load_config(make_project())
    assert _error(off, {"trainer": "noop"}).status == 409


def test_trainer_params_are_checked_when_the_run_is_asked_for_not_in_the_worker(cfg: Any) -> None:
    """Issue: a bad param was accepted (201) and failed the run later in the worker."""
    unknown = _error(cfg, {"trainer": "noop", "params": {"sleep": 1}})
    assert unknown.status == 400 and str(unknown).startswith("Trainer 'noop' has no parameter 'sleep'. Valid parameters are:")
    typed = _error(cfg, {"trainer": "noop", "params": {"sleep_s": "a while"}})
    assert typed.status == 400 and "parameter sleep_s must be" in str(typed)


def test_decision_calibrate_names_a_run_never_a_path(cfg: Any) -> None:
    """Issue: params.source_predictions read any file the server could read and said whether it existed."""
    refused = _error(cfg, {"trainer": "decision-calibrate", "params": {"source_predictions": "/etc/passwd"}})
    assert refused.status == 400 and "source_run: <run id>" in str(refused)
    assert _error(cfg, {"trainer": "decision-calibrate", "params": {"source_run": 5}}).status == 400
    _, _, _, params = check_run_request(cfg, {"trainer": "decision-calibrate", "params": {"source_run": "r1"}}, TRAINERS)
    assert params == {"source_run": "r1"}  # start_run turns it into this server's own run folder


def test_a_trainer_that_cannot_learn_the_schema_is_refused_naming_those_that_can(cfg: Any) -> None:
    """Issue 23: the span trainer is registered; asked for a radio schema it is a 400 before any run."""
    trainers = {**TRAINERS, "sklearn-token-classification": {"name": "sklearn-token-classification",
                                                             "local_only": False, "annotation_types": ["span"]}}
    with pytest.raises(RunRequestError) as err:
        check_run_request(cfg, {"trainer": "sklearn-token-classification"}, trainers)
    assert err.value.status == 400
    assert str(err.value) == ("Trainer 'sklearn-token-classification' learns span schemes, and 'sentiment' is a radio "
                              "scheme. Trainers for it: decision-calibrate, noop, sklearn-text-classification.")


def test_the_registered_trainers_say_what_they_learn() -> None:
    from potato.server.training.run_requests import trainer_table

    table = trainer_table()
    assert table["sklearn-token-classification"]["annotation_types"] == ("span",)
    assert table["sklearn-text-classification"]["annotation_types"] == ("radio", "multiselect")


def test_a_person_s_local_run_of_a_trainer_this_python_lacks_is_refused_an_automatic_one_is_queued(
        make_project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused before it is queued, with the packages and the command that installs them; an
    automatic run has no one to answer, so it queues and its failure shows on the runs list."""
    import sys

    from potato.project import Project
    from potato.server.training.run_requests import start_run
    from potato.server.training.runs.store import RunStore, Trigger

    for name in ("torch", "transformers", "peft"):
        monkeypatch.setitem(sys.modules, name, None)
    project = Project.open(load_config(make_project(model_training={
        "enabled": True, "backends": {"lab": {"type": "agent"}}})))
    store = RunStore(project.db, project.config.training_dir / "runs")
    body = {"trainer": "hf-text-classification", "schemas": ["sentiment"]}
    with pytest.raises(RunRequestError) as err:
        start_run(project, store, body)
    assert err.value.status == 409 and str(err.value).startswith(
        f"Trainer 'hf-text-classification' could not be imported on this machine: {sys.executable} lacks torch, "
        "transformers, peft (`")
    assert store.list() == []
    assert start_run(project, store, {**body, "backend": "lab"}).backend == "lab"  # its machine may have them
    assert start_run(project, store, body, trigger=Trigger.AUTO).trainer == "hf-text-classification"


def test_decision_calibrate_takes_a_run_that_predicted_its_schemas(tmp_path: Path) -> None:
    """A run can succeed with no prediction for a schema (issue 33: an empty upload, a trainer that
    skipped it); calibrating it would have nothing to fit, so the newest run that did predict it is taken,
    and a named run without them is refused."""
    from potato.db import Database
    from potato.server.training.run_requests import calibration_source
    from potato.server.training.runs.store import RunState, RunStore

    store = RunStore(Database(tmp_path / "db.sqlite3"), tmp_path / "runs")

    def succeeded(rows: list[dict[str, Any]]) -> str:
        run = store.create("noop", ["sentiment"], "local", {})
        for state in (RunState.PREPARING, RunState.RUNNING, RunState.SUCCEEDED):
            assert store.move(run.id, state)
        (store.run_dir(run.id) / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return run.id

    good = succeeded([{"id": "r000", "schema": "sentiment", "label": "positive", "confidence": 0.9}])
    time.sleep(0.01)  # the newest first
    empty = succeeded([{"id": "r000", "schema": "aspects", "label": ["price"], "confidence": 0.9}])
    assert calibration_source(store, ["sentiment"], None) == str(store.run_dir(good) / "predictions.jsonl")
    with pytest.raises(RunRequestError) as refused:
        calibration_source(store, ["sentiment"], empty)
    assert refused.value.status == 400 and "with predictions for sentiment" in str(refused.value)


# -- the trainer menu (issue 42 A) -------------------------------------------------------------------

def test_the_trainer_menu_label_names_what_this_server_lacks() -> None:
    """Issue 42 A: the menu said only the name of a trainer this server cannot import; the packages it
    lacks are now in the text, in their order, and a trainer with nothing missing keeps its plain name."""
    from potato.server.training.run_requests import trainer_menu_label

    assert trainer_menu_label("hf-text-classification", ["torch", "transformers"]) == (
        "hf-text-classification (needs torch, transformers: not installed here)")
    assert trainer_menu_label("sklearn-text-classification", ["scikit-learn"]) == (
        "sklearn-text-classification (needs scikit-learn: not installed here)")
    assert trainer_menu_label("noop", []) == "noop"


def test_the_start_form_asks_for_exactly_the_parameters_a_trainer_requires() -> None:
    """Issue 43 (facts passed, not re-read): the form's 'required' mark is each trainer's
    Param.required, for every trainer (decision-calibrate's source_run is optional)."""
    from potato.server.training.run_requests import form_params, trainer_table
    from potato.training.trainers import get_trainer

    for name, trainer in trainer_table().items():
        expected = {key: param.required for key, param in get_trainer(name).params.items()
                    if key != "source_predictions"}
        if name == "decision-calibrate":
            expected["source_run"] = False
        assert {key: shown["required"] for key, shown in form_params(trainer).items()} == expected, name
