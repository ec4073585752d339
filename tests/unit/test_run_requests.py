"""R10 and C4: what a start-run request may name, checked before anything is queued (pure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from potato.config import load_config
from potato.server.training.blueprint import RunRequestError, check_run_request

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
