"""Issue 35: a new backend is one module and its settings dataclass. This test is that module: it
registers a toy backend type from here alone, and a config names it, the page lists and checks it,
and a run on it goes through the dispatcher to a model the Hub push finds, as on a built-in backend."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

from potato.config import BackendKind, load_config, load_report
from potato.config._checks import text
from potato.config.schema import Config
from potato.errors import ConfigError
from potato.project import Project
from potato.server.training import backends
from potato.server.training.backends import Backend, CheckReport, Launch, Results, Session
from potato.server.training.dispatcher import Dispatcher
from potato.server.training.outputs import hubpush
from potato.server.training.runs.recorder import RunRecorder
from potato.server.training.runs.store import Run, RunState, RunStore


@dataclass(frozen=True)
class ToySettings:
    """A toy backend's settings: the machine it pretends to train on."""

    name: str
    machine: str
    type: str = "toy"
    description: str = ""

    def describe(self) -> str:
        return f"{self.name} (toy on {self.machine})"


class Finished:
    """The toy's session: it has already ended when the dispatcher gets it."""

    def alive(self) -> bool:
        return False


class Toy(Backend):
    """Trains nothing: it leaves a model file and reports success at once, through the same recorder
    an agent's report goes through."""

    type = "toy"

    def __init__(self, settings: ToySettings) -> None:
        super().__init__(settings)
        self.toy = settings

    def check(self, config: Config) -> CheckReport:
        return CheckReport(self.name, self.type, True, [f"{self.describe()}: ready"])

    def claimer(self) -> tuple[str, str]:
        return "toy-1", self.toy.machine

    def start(self, launch: Launch, run: Run, token: str) -> Session:
        job = launch.project.config.training_dir / "toy" / run.id
        (job / "artifacts").mkdir(parents=True)
        (job / "artifacts" / "model.pkl").write_bytes(b"\x80\x04toy")
        RunRecorder(launch.project, launch.store, run).finish(
            0, {"status": "succeeded", "metrics": {"n_train": 40}}, None, None, self.results(launch.project, run).artifacts)
        return Finished()

    def results(self, project: Project, run: Run) -> Results:
        return Results(artifacts=project.config.training_dir / "toy" / run.id / "artifacts")


TOY_KIND = BackendKind("toy", ToySettings, {"type": text(), "description": text(allow_empty=True), "machine": text()},
                       "a toy backend")


@pytest.fixture
def toy() -> Iterator[None]:
    from potato.config.training import backends as _backends

    backends.register_backend(Toy, TOY_KIND)
    yield
    backends.BACKEND_CLASSES.pop("toy")
    _backends.BACKEND_KINDS.pop("toy")


@pytest.fixture
def config_path(make_project: Callable[..., Path]) -> Path:
    return make_project(model_training={"enabled": True, "backend": "box",
                                        "backends": {"box": {"type": "toy", "machine": "toy-box"}}})


def test_a_config_names_the_toy_backend_and_its_keys_are_checked(toy: None, make_project: Callable[..., Path],
                                                                 config_path: Path) -> None:
    config = load_config(config_path)
    settings = config.model_training.all_backends()["box"]
    assert settings == ToySettings(name="box", machine="toy-box")
    assert isinstance(backends.backends_of(config)["box"], Toy)

    bad = make_project(model_training={"enabled": True, "backends": {"box": {"type": "toy", "host": "x"}}})
    errors = [issue.message for issue in load_report(bad).errors]
    assert any("host" in e and "machine" in e for e in errors), errors  # the unknown key, with the valid ones
    unknown = make_project(model_training={"enabled": True, "backends": {"box": {"type": "toyy"}}})
    errors = [issue.message for issue in load_report(unknown).errors]
    assert any("valid types: ssh, slurm, agent, toy" in e for e in errors), errors


def test_without_the_module_the_type_is_unknown(config_path: Path) -> None:
    with pytest.raises(ConfigError, match="'toy' is not a backend type; valid types: ssh, slurm, agent"):
        load_config(config_path)


def test_the_page_lists_and_checks_it_and_a_run_on_it_ends_with_a_model_to_push(
        toy: None, config_path: Path, admin_headers: dict[str, str]) -> None:
    from potato.server import close_app, create_app

    app = create_app(load_config(config_path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        client = app.test_client()
        listed = client.get("/admin/training/api/backends", headers=admin_headers).get_json()
        assert {"name": "box", "type": "toy", "label": "box (toy on toy-box)"} in listed["backends"]
        check = client.post("/admin/training/api/backends/box/check", headers=admin_headers)
        assert check.status_code == 200 and check.get_json()["ok"] is True, check.get_data(as_text=True)

        r = client.post("/admin/training/api/runs", headers=admin_headers,
                        json={"trainer": "noop", "schemas": ["sentiment"], "backend": "box"})
        assert r.status_code == 201, r.get_data(as_text=True)
        project: Project = app.extensions["potato"]
        store: RunStore = app.extensions["potato.runs"]
        assert Dispatcher(project, store, "http://127.0.0.1:9").run_next()
        run = store.get(r.get_json()["id"])
        assert run is not None and run.state is RunState.SUCCEEDED, (run.state, run.message) if run else None
        assert run.agent_host == "toy-box"
        assert run.model is not None and (run.model.files, run.model.stayed) == (1, False)
        assert hubpush.blocker(project, store, run) is None  # its model is here: the Hub push can take it
        shown = client.get(f"/admin/training/api/runs/{run.id}", headers=admin_headers).get_json()
        assert shown["state"] == "succeeded" and shown["model"]["files"] == 1, json.dumps(shown)[:500]
    finally:
        close_app(app)
