"""The validator never raises, whatever the YAML holds, and its reports keep their invariants."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from potato.config import format_report, load_report, report_to_json, validate
from potato.config.schema import Report
from tests.faults.matrix import fault

CONFIG = Path("/projects/reviews/config.yaml")

KEY_NAMES = [
    "model_training", "backends", "backend", "type", "ssh", "slurm", "agent", "local", "time", "host",
    "remote_dir", "annotation_schemes", "annotation_type", "name", "labels", "validation", "acknowledge",
    "data_files", "task_dir", "debug", "admin_api_key", "writeback", "auto_retrain", "schemas", "gpus",
    "packages", "env", "container", "image", "runtime", "options", "port", "prelude", "device", "trainer_params",
    "item_properties", "id_key", "holdout_fraction", "poll_interval_s", "queue_timeout_s", "gres", "sentiment",
    "span", "allow_overlapping", "target_field", "span_target", "active_learning", "enabled", "schema_names",
    "update_frequency", "random_sample_percent", "uncertainty", "hub", "token_file", "organization",
]
SPECIAL_TEXT = [
    "/tmp/x", "//tmp/../tmp/y", "12:00:00", "1-00:00:00", "UNLIMITED", "auto", "none", "0,1", "cuda:1", "radio",
    "multiselect", "text", "~/x", "-oProxyCommand=x", "model_training.backends.cluster.time is",
    "backends.cluster", "is long on a shared cluster", "", " ", "\x00",
]

leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(KEY_NAMES + SPECIAL_TEXT)
)
keys = st.sampled_from(KEY_NAMES) | st.text(max_size=10)
values = st.recursive(
    leaves,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
    max_leaves=25,
)
odd_keys = keys | st.integers() | st.none() | st.booleans() | st.floats(allow_nan=False)
odd_values = st.recursive(
    leaves,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(odd_keys, children, max_size=5),
    max_leaves=25,
)

BACKEND_KEYS = [
    "type", "description", "host", "user", "port", "identity_file", "python", "packages", "gpus", "min_free_gpu_mb",
    "num_threads", "remote_dir", "max_artifact_mb", "fetch_artifacts", "keep_remote", "heartbeat_timeout_s", "env",
    "container", "job_python", "prelude", "partition", "account", "qos", "gres", "time", "mem", "cpus_per_task",
    "constraint", "extra_sbatch_args", "poll_interval_s", "queue_timeout_s", "pyhton",
]
backend_bodies = st.builds(
    lambda btype, body: {"type": btype, **body},
    st.sampled_from(["ssh", "slurm", "agent"]) | leaves,
    st.dictionaries(st.sampled_from(BACKEND_KEYS[1:]), values, max_size=6),
)
schemes = st.fixed_dictionaries(
    {},
    optional={
        "annotation_type": st.sampled_from(["radio", "multiselect", "text"]) | leaves,
        "name": st.sampled_from(["sentiment", "topics"]) | leaves,
        "labels": st.lists(st.sampled_from(["a", "b"]) | leaves, max_size=3) | values,
        "description": leaves,
    },
)
config_shaped = st.fixed_dictionaries(
    {},
    optional={
        "annotation_task_name": leaves,
        "data_files": values,
        "annotation_schemes": st.lists(schemes, max_size=3) | values,
        "admin_api_key": leaves,
        "debug": leaves,
        "model_training": st.fixed_dictionaries(
            {},
            optional={
                "backends": st.dictionaries(st.sampled_from(["cluster", "cluster2", "local", "a b"]) | keys,
                                            backend_bodies, max_size=3) | values,
                "backend": st.sampled_from(["cluster", "local"]) | leaves,
                "writeback": values,
                "auto_retrain": values,
                "device": leaves,
                "holdout_fraction": leaves,
            },
        ) | values,
        "validation": st.fixed_dictionaries(
            {}, optional={"acknowledge": st.lists(st.sampled_from(SPECIAL_TEXT) | leaves, max_size=4) | values}
        ) | values,
    },
)


def _paths(node: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into the tutorial config, so one mutation can land anywhere in it."""
    out = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            out += _paths(child, prefix + (key,))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            out += _paths(child, prefix + (index,))
    return out


TUTORIAL_RAW: dict[str, Any] = {
    "annotation_task_name": "Review Sentiment",
    "task_dir": ".",
    "data_files": ["data/reviews.json"],
    "item_properties": {"id_key": "id", "text_key": "text"},
    "admin_api_key": "a-long-random-admin-key",
    "annotation_schemes": [
        {"annotation_type": "radio", "name": "sentiment", "labels": ["positive", "negative"]},
        {"annotation_type": "text", "name": "notes"},
    ],
    "model_training": {
        "enabled": True,
        "backend": "gpu-server",
        "max_wall_seconds": 3600,
        "device": "cuda:1",
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True, "min_confidence": 0.6},
        "auto_retrain": {"enabled": True, "schemas": ["sentiment"], "backend": "cluster"},
        "backends": {
            "gpu-server": {"type": "ssh", "host": "gpu.example.org", "gpus": "auto", "env": {"A": "1"},
                           "container": {"runtime": "docker", "image": "w", "options": ["--gpus=all"]}},
            "cluster": {"type": "slurm", "host": "login", "remote_dir": "/shared/p", "time": "12:00:00",
                        "prelude": ["module load cuda"]},
            "lab": {"type": "agent", "queue_timeout_s": 3600},
        },
    },
    "validation": {"acknowledge": ["model_training.backends.cluster.time is"]},
}
TUTORIAL_PATHS = [p for p in _paths(TUTORIAL_RAW) if p]


def _mutated(path: tuple[Any, ...], value: object) -> dict[str, Any]:
    raw = copy.deepcopy(TUTORIAL_RAW)
    node = raw
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return raw


def check_report(report: Report) -> None:
    """What every caller relies on, whatever the input was."""
    assert isinstance(report, Report)
    assert (report.config is None) == bool(report.errors)
    for issue in report.errors + report.warnings + report.acknowledged:
        assert isinstance(issue.message, str) and issue.message
        assert issue.message.startswith(issue.path)
    format_report(report, strict=True)
    report_to_json(report)


FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(odd_values)
def test_validate_never_raises_on_any_value(raw: object) -> None:
    check_report(validate(raw, CONFIG))


@FAST
@given(config_shaped)
def test_validate_never_raises_on_config_shaped_values(raw: dict[str, Any]) -> None:
    check_report(validate(raw, CONFIG))


@FAST
@given(st.sampled_from(TUTORIAL_PATHS), odd_values)
@fault("Annotators and the server",
       "Any bad value anywhere in a config (hypothesis)",
       "The validator names it; it never raises",
       "A message with the key path and the fix")
def test_validate_never_raises_on_one_bad_value_in_a_good_config(path: tuple[Any, ...], value: object) -> None:
    check_report(validate(_mutated(path, value), CONFIG))


@settings(max_examples=150, deadline=None)
@given(config_shaped | values)
def test_load_report_never_raises_on_dumped_yaml(tmp_path_factory: pytest.TempPathFactory, doc: object) -> None:
    path = tmp_path_factory.mktemp("cfg") / "config.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    check_report(load_report(path))


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200) | st.sampled_from([": :", "a: [", "- &a [*a]", "\tx: 1", "x: !!python/object {}"]))
def test_load_report_never_raises_on_any_text(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("cfg") / "config.yaml"
    path.write_text(text, encoding="utf-8")
    check_report(load_report(path))


def test_mutation_base_is_valid() -> None:
    """Mutations start from a valid config, so each one exercises the checks of the key it changes."""
    report = validate(TUTORIAL_RAW, CONFIG)
    assert report.strict_ok() and report.config is not None and len(report.acknowledged) == 1


def test_self_referencing_values_do_not_hang() -> None:
    """YAML aliases can build a list that contains itself."""
    loop: list[object] = []
    loop.append(loop)
    tree: dict[str, object] = {}
    tree["model_training"] = tree
    for raw in (loop, tree, _mutated(("data_files",), loop), _mutated(("validation",), {"acknowledge": loop})):
        check_report(validate(raw, CONFIG))


def test_aliases_in_yaml(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("a: &x [*x]\nvalidation: {acknowledge: &y [*y]}\nmodel_training: &z {backends: *z}\n",
                    encoding="utf-8")
    check_report(load_report(path))
