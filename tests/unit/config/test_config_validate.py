"""The config validator (C1, R1-R8, R11, R13-R31, D2): every rule with the message a user reads."""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from potato import defaults
from potato.config import format_report, load_config, load_report, report_to_json, validate
from potato.config.training.backends import node_local_dir, parse_slurm_time
from potato.config._checks import Invalid
from potato.config.schema import AgentBackendSettings, LocalBackendSettings, Report, SlurmBackendSettings, SshBackendSettings
from potato.training.job.schemes import SchemeType
from potato.errors import ConfigError

CONFIG = Path("/projects/reviews/config.yaml")

TUTORIAL = """
annotation_task_name: "Review Sentiment"
task_dir: "."
data_files:
  - "data/reviews.json"
item_properties:
  id_key: "id"
  text_key: "text"
output_annotation_dir: "annotation_output"
admin_api_key: "a-long-random-admin-key"

annotation_schemes:
  - annotation_type: "radio"
    name: "sentiment"
    description: "Is this review positive or negative?"
    labels: ["positive", "negative"]

model_training:
  enabled: true
  backend: gpu-server        # the default for runs; leave out to keep runs local
  max_wall_seconds: 3600
  writeback:
    schemas: ["sentiment"]
    include_unlabeled: true
    min_confidence: 0.6
  backends:
    gpu-server:
      type: ssh
      host: gpu.example.org
      python: /opt/conda/bin/python3
      gpus: auto
      min_free_gpu_mb: 4000
    cluster:
      type: slurm
      host: login.cluster.example.org
      python: /opt/conda/bin/python3
      job_python: /shared/envs/train/bin/python
      remote_dir: /shared/projects/me/potato-training
      gres: gpu:1
      time: "04:00:00"
      prelude: ["module load cuda/12.4"]
    lab-workstation:
      type: agent
      queue_timeout_s: 3600
"""


def minimal() -> dict[str, Any]:
    return {
        "annotation_task_name": "Review Sentiment",
        "data_files": ["data/reviews.json"],
        "admin_api_key": "a-long-random-admin-key",
        "annotation_schemes": [
            {"annotation_type": "radio", "name": "sentiment", "labels": ["positive", "negative"]},
        ],
    }


def with_training(**training: Any) -> dict[str, Any]:
    raw = minimal()
    raw["model_training"] = training
    return raw


def with_backend(name: str = "gpu-server", **body: Any) -> dict[str, Any]:
    return with_training(backends={name: body})


SSH = {"type": "ssh", "host": "gpu.example.org"}
SLURM = {"type": "slurm", "host": "login.example.org", "remote_dir": "/shared/me/potato"}
AGENT = {"type": "agent"}


def errors(report: Report) -> list[str]:
    return [issue.message for issue in report.errors]


def warnings(report: Report) -> list[str]:
    return [issue.message for issue in report.warnings]


def only_error(raw: object) -> str:
    report = validate(raw, CONFIG)
    assert len(report.errors) == 1, errors(report)
    assert report.config is None
    return report.errors[0].message


# --- the tutorial's config and what it builds ---------------------------------------------------


def test_tutorial_config_is_valid_and_strict_valid() -> None:
    report = validate(yaml.safe_load(TUTORIAL), CONFIG)
    assert report.errors == [] and report.warnings == [] and report.strict_ok()
    config = report.config
    assert config is not None
    assert config.path == CONFIG
    assert config.task_dir == Path("/projects/reviews")
    assert config.data_files == (Path("/projects/reviews/data/reviews.json"),)
    assert config.output_annotation_dir == Path("/projects/reviews/annotation_output")
    assert config.annotation_schemes[0].annotation_type is SchemeType.RADIO
    assert config.annotation_schemes[0].labels == ("positive", "negative")
    training = config.model_training
    assert training.enabled and training.backend == "gpu-server" and training.max_wall_seconds == 3600
    assert training.grace_seconds == defaults.GRACE_SECONDS
    assert training.writeback.schemas == ("sentiment",) and training.writeback.min_confidence == 0.6
    assert list(training.all_backends()) == ["local", "gpu-server", "cluster", "lab-workstation"]
    ssh = training.backends["gpu-server"]
    assert isinstance(ssh, SshBackendSettings) and ssh.min_free_gpu_mb == 4000 and ssh.remote_dir == defaults.REMOTE_DIR
    assert ssh.describe() == "gpu-server (ssh to gpu.example.org)"
    slurm = training.backends["cluster"]
    assert isinstance(slurm, SlurmBackendSettings)
    assert slurm.prelude == ("module load cuda/12.4",) and slurm.time == "04:00:00" and slurm.gres == "gpu:1"
    agent = training.backends["lab-workstation"]
    assert isinstance(agent, AgentBackendSettings) and agent.queue_timeout_s == 3600
    assert agent.heartbeat_timeout_s == defaults.HEARTBEAT_TIMEOUT_S


def test_minimal_config_uses_defaults() -> None:
    config = validate(minimal(), CONFIG).config
    assert config is not None
    assert config.item_properties.id_key == "id" and config.item_properties.text_key == "text"
    assert config.debug is False
    assert config.model_training.backend == "local"
    assert config.model_training.local == LocalBackendSettings()
    assert config.output_annotation_dir == Path("/projects/reviews/annotation_output")


def test_paths_resolve_against_config_folder_then_task_dir() -> None:
    raw = minimal()
    raw.update(task_dir="project", data_files="items.jsonl", output_annotation_dir="/srv/out")
    config = validate(raw, Path("/a/b/config.yaml")).config
    assert config is not None
    assert config.task_dir == Path("/a/b/project")
    assert config.data_files == (Path("/a/b/project/items.jsonl"),)
    assert config.output_annotation_dir == Path("/srv/out")


def test_relative_config_path_becomes_absolute() -> None:
    config = validate(minimal(), Path("config.yaml")).config
    assert config is not None
    assert config.path == Path(os.getcwd()) / "config.yaml"
    assert config.task_dir == Path(os.getcwd())


def test_home_folder_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    raw = minimal()
    raw["task_dir"] = "~/reviews"
    config = validate(raw, CONFIG).config
    assert config is not None and config.task_dir == Path("/home/me/reviews")


def test_data_files_are_not_opened() -> None:
    raw = minimal()
    raw["data_files"] = ["does/not/exist.jsonl"]
    assert validate(raw, CONFIG).ok


# --- top level ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "got"),
    [(None, "the file is empty"), ([1, 2], "got a list of 2 item(s)"), (3, "got 3"), ("text", "got 'text'")],
)
def test_top_level_must_be_a_mapping(raw: object, got: str) -> None:
    message = only_error(raw)
    assert message.startswith("top level: a config must be a mapping of keys to values")
    assert message.endswith(got)


def test_required_keys_are_reported_together() -> None:
    report = validate({"admin_api_key": "k"}, CONFIG)
    assert errors(report) == [
        'annotation_task_name: missing; name the project, e.g. annotation_task_name: "Review Sentiment"',
        'data_files: missing; list the item files (json, jsonl or csv), e.g. data_files: ["data/reviews.json"]',
        ("annotation_schemes: missing; add at least one scheme, e.g. annotation_schemes: [{annotation_type: "
        "radio, name: sentiment, labels: [positive, negative]}]"),
    ]
    assert [i.path for i in report.errors] == ["annotation_task_name", "data_files", "annotation_schemes"]


def test_annotation_task_name_must_be_text() -> None:
    raw = minimal()
    raw["annotation_task_name"] = 2024
    assert only_error(raw) == "annotation_task_name: must be text, got 2024; quote it"


def test_data_files_problems() -> None:
    raw = minimal()
    raw["data_files"] = []
    assert only_error(raw) == (
        'data_files: is empty; list at least one item file, e.g. data_files: ["data/reviews.json"]'
    )
    raw["data_files"] = ["a.json", 7, ""]
    report = validate(raw, CONFIG)
    assert errors(report) == [
        "data_files[1]: must be text, got 7; quote it",
        "data_files[2]: is empty; set a value or remove the key",
    ]
    raw["data_files"] = ""
    assert only_error(raw) == "data_files: is empty; set a value or remove the key"
    raw["data_files"] = {"a": 1}
    assert only_error(raw) == (
        'data_files: must be a list of strings, e.g. ["data/reviews.json"], got a mapping'
    )


def test_unknown_top_level_key_far_from_any_known_one_warns() -> None:
    raw = minimal()
    raw.update(colour_scheme="dark", model_trainer={"epochs": 3}, gold_standard_ratio=0.1)
    report = validate(raw, CONFIG)
    assert report.ok and report.config is not None
    assert warnings(report) == [
        "colour_scheme: unknown key, ignored",
        "model_trainer: unknown key, ignored (did you mean 'model_training'?)",
        "gold_standard_ratio: unknown key, ignored",
    ]
    assert report.warnings[0].path == "colour_scheme" and report.warnings[0].backend is None


@pytest.mark.parametrize("typo, meant", [
    ("model_trainng", "model_training"), ("debgu", "debug"), ("alert_time_each_instnace", "alert_time_each_instance"),
    ("Model_Training", "model_training"), ("data_file", "data_files"), ("prot", "port"),
])
def test_a_misspelt_top_level_key_is_an_error(typo: str, meant: str) -> None:
    """Issue 33 item 9: `model_trainng:` warned, the config "was valid" and the server started with
    training off. A key a slip of the keyboard from a known one is an error naming the one meant."""
    raw = minimal()
    raw[typo] = {"enabled": True} if meant == "model_training" else 1
    report = validate(raw, CONFIG)
    assert not report.ok and report.config is None
    assert errors(report) == [f"{typo}: not a known key; did you mean '{meant}'? As written, it is ignored: "
                              "correct the spelling"]
    assert report.errors[0].path == typo


def test_non_text_top_level_key_warns() -> None:
    raw: dict[Any, Any] = minimal()
    raw[1] = "x"
    assert warnings(validate(raw, CONFIG)) == ["1: unknown key, ignored"]


def test_missing_admin_api_key_warns() -> None:
    raw = minimal()
    del raw["admin_api_key"]
    report = validate(raw, CONFIG)
    assert report.ok
    assert warnings(report) == [
        ("admin_api_key: not set; admin routes are closed without it. Set admin_api_key to a long random secret "
        "to use the admin pages and the training API")
    ]


def test_empty_admin_api_key_is_an_error() -> None:
    raw = minimal()
    raw["admin_api_key"] = "  "
    assert only_error(raw) == (
        "admin_api_key: is empty, which would be a key anyone can send; set a long random secret or remove the key"
    )


def test_debug_must_be_boolean() -> None:
    raw = minimal()
    raw["debug"] = "yes please"
    assert only_error(raw) == "debug: must be true or false, got 'yes please'"


def test_item_properties() -> None:
    raw = minimal()
    raw["item_properties"] = {"id_key": "review_id", "text_kye": "x"}
    assert only_error(raw) == (
        "item_properties.text_kye: unknown key for item_properties (did you mean 'text_key'?). "
        "Valid keys: id_key, text_key"
    )
    raw["item_properties"] = {"id_key": "review_id"}
    config = validate(raw, CONFIG).config
    assert config is not None and config.item_properties.id_key == "review_id"
    raw["item_properties"] = ["id"]
    assert only_error(raw) == (
        'item_properties: must be a mapping of keys to values, e.g. {id_key: "id", text_key: "text"}, '
        "got a list of 1 item(s)"
    )


def test_null_optional_key_means_default() -> None:
    raw = minimal()
    raw.update(task_dir=None, debug=None, model_training=None, item_properties=None, validation=None)
    report = validate(raw, CONFIG)
    assert report.ok and report.config is not None and report.config.debug is False


# --- annotation_schemes -------------------------------------------------------------------------


def scheme_error(scheme: object) -> str:
    raw = minimal()
    raw["annotation_schemes"] = [scheme]
    return only_error(raw)


def test_schemes_must_be_a_non_empty_list() -> None:
    raw = minimal()
    raw["annotation_schemes"] = []
    assert only_error(raw) == (
        "annotation_schemes: must be a non-empty list of schemes, each with annotation_type, name and labels; "
        "got a list of 0 item(s)"
    )
    raw["annotation_schemes"] = {"name": "x"}
    assert only_error(raw).endswith("got a mapping")


def test_scheme_must_be_a_mapping() -> None:
    assert scheme_error("sentiment") == (
        "annotation_schemes[0]: must be a mapping of keys to values, e.g. {annotation_type: radio, "
        "name: sentiment, labels: [positive, negative]}, got 'sentiment'"
    )


def test_scheme_type_lists_valid_types() -> None:
    message = scheme_error({"annotation_type": "star_rating", "name": "x", "labels": ["a", "b"]})
    assert message == (
        "annotation_schemes[0].annotation_type: 'star_rating' is not a valid annotation_type; "
        "valid choices: radio, multiselect, text, likert, select, slider, number, span, process_reward, pairwise, "
        "multirate, rubric_eval, consensus_tracking, trajectory_eval, hierarchical_multiselect, triage, vas, semantic_differential, soft_label, failure_attribution, text_edit, trajectory_edit, tool_call_review, handoff_review, ranking, constant_sum, confidence, context_attribution, multimodal_reasoning, gui_trajectory, speech_transcript, agent_scorecard, emergent_behavior, tool_contention, voice_interaction, agent_interaction_graph, table_grid, range_slider, card_sort, pure_display, extractive_qa, conjoint, span_link"
    )
    message = scheme_error({"annotation_type": "radi", "name": "x", "labels": ["a", "b"]})
    assert "(did you mean 'radio'?)" in message


def test_scheme_type_and_name_are_required() -> None:
    raw = minimal()
    raw["annotation_schemes"] = [{"labels": ["a", "b"]}]
    assert errors(validate(raw, CONFIG)) == [
        "annotation_schemes[0].annotation_type: missing; valid types: radio, multiselect, text, likert, select, "
        "slider, number, span, process_reward, pairwise, multirate, rubric_eval, consensus_tracking, trajectory_eval, "
        "hierarchical_multiselect, triage, vas, semantic_differential, soft_label, failure_attribution, text_edit, trajectory_edit, tool_call_review, handoff_review, ranking, constant_sum, confidence, context_attribution, multimodal_reasoning, gui_trajectory, speech_transcript, agent_scorecard, emergent_behavior, tool_contention, voice_interaction, agent_interaction_graph, table_grid, range_slider, card_sort, pure_display, extractive_qa, conjoint, span_link",
        "annotation_schemes[0].name: missing; name the scheme, e.g. name: sentiment",
    ]


def test_scheme_unknown_key_is_an_error() -> None:
    message = scheme_error({"annotation_type": "radio", "name": "x", "labels": ["a", "b"], "lables": 1})
    assert message == (
        "annotation_schemes[0].lables: unknown key for a radio scheme (did you mean 'labels'?). "
        "Valid keys: annotation_type, name, description, labels, sequential_key_binding, codebook, label_requirement, "
        "horizontal, layout, display_logic, has_free_response, turn_level, turn_binding, turn_label, dynamic_labels, "
        "option_randomization"
    )


@pytest.mark.parametrize("kind, extra, listed", [
    ("span", {"labels": ["a"]}, "annotation_type, name, description, labels, sequential_key_binding, "
     "label_requirement, layout, display_logic, title, show_span_labels, allow_overlapping, allow_discontinuous, "
     "entity_linking, target_field"),
    ("slider", {"min_value": 0, "max_value": 5}, "annotation_type, name, description, label_requirement, layout, "
     "min_value, max_value, starting_value, step, display_logic, turn_level, turn_binding, turn_label"),
    ("text", {}, "annotation_type, name, description, labels, max_length, label_requirement, layout, textarea, "
     "multiline, single_line, text_box_single_line, rows, placeholder, display_logic, turn_level, turn_binding, "
     "turn_label"),
])
def test_an_unknown_scheme_key_lists_only_the_keys_of_that_type(kind: str, extra: dict[str, Any],
                                                                  listed: str) -> None:
    """Issue 33 item 14: a radio scheme's "Valid keys" listed span-only keys (title, target_field...)."""
    message = scheme_error({"annotation_type": kind, "name": "x", **extra, "colour": 1})
    assert message == f"annotation_schemes[0].colour: unknown key for a {kind} scheme. Valid keys: {listed}"


def test_a_scheme_of_an_unknown_type_lists_every_key() -> None:
    raw = minimal()
    raw["annotation_schemes"] = [{"annotation_type": "radoi", "name": "x", "labels": ["a", "b"], "colour": 1}]
    assert errors(validate(raw, CONFIG))[0].startswith(
        "annotation_schemes[0].colour: unknown key for an annotation scheme. Valid keys: annotation_type, name, "
        "description, labels, max_length")


def test_scheme_names_are_unique() -> None:
    raw = minimal()
    raw["annotation_schemes"].append({"annotation_type": "text", "name": "sentiment"})
    report = validate(raw, CONFIG)
    assert errors(report) == [
        ("annotation_schemes[1].name: 'sentiment' is already the name of annotation_schemes[0]; "
        "give each scheme its own name")
    ]


@pytest.mark.parametrize(
    ("scheme", "message"),
    [
        (
            {"annotation_type": "radio", "name": "s", "labels": ["only"]},
            ('annotation_schemes[0].labels: has 1 label; a radio scheme needs at least 2 labels, '
            'e.g. labels: ["positive", "negative"]'),
        ),
        (
            {"annotation_type": "radio", "name": "s"},
            ('annotation_schemes[0].labels: missing; a radio scheme needs at least 2 labels, '
            'e.g. labels: ["positive", "negative"]'),
        ),
        (
            {"annotation_type": "multiselect", "name": "s", "labels": []},
            ('annotation_schemes[0].labels: missing; a multiselect scheme needs at least 1 label, '
            'e.g. labels: ["positive", "negative"]'),
        ),
        (
            {"annotation_type": "slider", "name": "s", "min_value": 0, "max_value": 9, "labels": ["a"]},
            ("annotation_schemes[0].labels: a slider scheme takes no labels (annotators pick a number); remove "
             "labels, or use annotation_type: radio or likert"),
        ),
        (
            {"annotation_type": "radio", "name": "s", "labels": ["a", "b", "a"]},
            "annotation_schemes[0].labels[2]: 'a' appears more than once; list each only once",
        ),
        (
            {"annotation_type": "radio", "name": "s", "labels": ["a", {"tooltip": "b"}]},
            ("annotation_schemes[0].labels[1].name: missing; each label mapping needs a name (what is stored), "
             "e.g. name: positive"),
        ),
        (
            {"annotation_type": "radio", "name": "s", "labels": ["a", ["b"]]},
            ("annotation_schemes[0].labels[1]: must be a label name or a mapping such as {name: positive, "
             "tooltip: ...}, got a list of 1 item(s)"),
        ),
        (
            {"annotation_type": "radio", "name": "s", "labels": ["a", ""]},
            "annotation_schemes[0].labels[1]: is empty; set a value or remove the key",
        ),
        (
            {"annotation_type": "radio", "name": "s", "labels": [1, True]},
            "annotation_schemes[0].labels[1]: must be a label name or a mapping such as {name: positive, "
            "tooltip: ...}, got true",
        ),
        (
            {"annotation_type": "radio", "name": "s", "labels": "a, b"},
            ("annotation_schemes[0].labels: must be a list of labels, e.g. labels: [\"positive\", \"negative\"], "
            "got 'a, b'"),
        ),
    ],
)
def test_scheme_labels(scheme: dict[str, Any], message: str) -> None:
    raw = minimal()
    raw["annotation_schemes"] = [scheme]
    assert errors(validate(raw, CONFIG))[0] == message


def test_text_and_multiselect_schemes_build() -> None:
    raw = minimal()
    raw["annotation_schemes"] += [
        {"annotation_type": "multiselect", "name": "topics", "labels": ["price"], "description": ""},
        {"annotation_type": "text", "name": "notes", "labels": []},
    ]
    config = validate(raw, CONFIG).config
    assert config is not None
    assert [s.annotation_type for s in config.annotation_schemes] == [
        SchemeType.RADIO, SchemeType.MULTISELECT, SchemeType.TEXT
    ]


# --- model_training -----------------------------------------------------------------------------


def test_model_training_must_be_a_mapping() -> None:
    raw = minimal()
    raw["model_training"] = [1]
    assert only_error(raw) == (
        "model_training: must be a mapping of keys to values, e.g. {enabled: true, backend: gpu-server}, "
        "got a list of 1 item(s)"
    )


def test_model_training_unknown_key() -> None:
    message = only_error(with_training(max_wall_second=10))
    assert message.startswith(
        "model_training.max_wall_second: unknown key for model_training (did you mean 'max_wall_seconds'?). "
        "Valid keys: enabled, backend, trainer, max_wall_seconds,"
    )


def test_backend_must_name_a_backend() -> None:
    raw = with_training(backend="gpu-srv", backends={"gpu-server": SSH, "cluster": SLURM})
    report = validate(raw, CONFIG)
    assert errors(report) == [
        ("model_training.backend: 'gpu-srv' names no backend (did you mean 'gpu-server'?); valid backends: "
        "local, gpu-server, cluster. Declare it under model_training.backends or name one of these")
    ]
    assert report.errors[0].path == "model_training.backend"


def test_backend_local_needs_no_declaration() -> None:
    assert validate(with_training(backend="local"), CONFIG).ok
    assert only_error(with_training(backend="gpu")) == (
        "model_training.backend: 'gpu' names no backend; valid backends: local. "
        "Declare it under model_training.backends or name one of these"
    )


def test_backend_may_name_a_backend_that_has_its_own_errors_without_a_second_error() -> None:
    raw = with_training(backend="gpu-server", backends={"gpu-server": {"type": "ssh"}})
    assert errors(validate(raw, CONFIG)) == [
        ("model_training.backends.gpu-server.host: missing; an ssh backend needs the host to log in to (any name "
        "ssh accepts, e.g. gpu.example.org or an alias from ~/.ssh/config)")
    ]


def test_auto_retrain() -> None:
    raw = with_training(
        backends={"gpu-server": SSH},
        auto_retrain={"enabled": True, "every_n_labels": 50, "schemas": ["sentiment"], "backend": "gpu-server"},
    )
    config = validate(raw, CONFIG).config
    assert config is not None
    auto = config.model_training.auto_retrain
    assert auto.enabled and auto.every_n_labels == 50 and auto.backend == "gpu-server"
    raw["model_training"]["auto_retrain"] = {"backend": "cluster", "schemas": ["sentimnet"], "every_n_labels": 0}
    assert errors(validate(raw, CONFIG)) == [
        ("model_training.auto_retrain.backend: 'cluster' names no backend; valid backends: local, gpu-server. "
        "Declare it under model_training.backends or name one of these"),
        ("model_training.auto_retrain.schemas[0]: 'sentimnet' names no annotation scheme (did you mean "
        "'sentiment'?); schemes: sentiment"),
        "model_training.auto_retrain.every_n_labels: must be a whole number of at least 1, got 0",
    ]
    raw["model_training"]["auto_retrain"] = {"every_n_label": 5}
    assert only_error(raw) == (
        "model_training.auto_retrain.every_n_label: unknown key for model_training.auto_retrain (did you mean "
        "'every_n_labels'?). Valid keys: enabled, every_n_labels, trainer, schemas, backend"
    )


def test_writeback_schemas_must_be_radio_or_multiselect() -> None:
    raw = with_training(writeback={"schemas": ["sentiment", "notes", "zzz"], "min_confidence": 1.5})
    raw["annotation_schemes"].append({"annotation_type": "text", "name": "notes"})
    assert errors(validate(raw, CONFIG)) == [
        ("model_training.writeback.schemas[1]: 'notes' is a text scheme, and suggestions need a scheme with "
         "labels (radio, multiselect, likert, select, span, a binary pairwise comparison, or one asked on "
             "each step with labels); remove it"),
        "model_training.writeback.schemas[2]: 'zzz' names no annotation scheme; schemes: sentiment, notes",
        "model_training.writeback.min_confidence: must be a number at least 0 and at most 1, got 1.5",
    ]
    raw["model_training"]["writeback"] = {"schemas": ["sentiment"], "include_unlabeled": "yes", "extra": 1}
    assert errors(validate(raw, CONFIG)) == [
        "model_training.writeback.include_unlabeled: must be true or false, got 'yes'",
        ("model_training.writeback.extra: unknown key for model_training.writeback. "
        "Valid keys: schemas, include_unlabeled, min_confidence"),
    ]


def test_writeback_scheme_with_its_own_error_is_not_reported_twice() -> None:
    raw = with_training(writeback={"schemas": ["sentiment"]})
    raw["annotation_schemes"][0]["labels"] = ["one"]
    assert len(validate(raw, CONFIG).errors) == 1


@pytest.mark.parametrize("value", [0, 1, -0.1, 1.5, math.nan, math.inf, True, "0.2"])
def test_holdout_fraction_must_be_between_0_and_1(value: object) -> None:
    message = only_error(with_training(holdout_fraction=value))
    assert message.startswith(
        "model_training.holdout_fraction: must be a number greater than 0 and less than 1, got "
    )


def test_holdout_fraction_accepts_a_fraction() -> None:
    config = validate(with_training(holdout_fraction=0.25), CONFIG).config
    assert config is not None and config.model_training.holdout_fraction == 0.25


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_wall_seconds", 0, "must be a whole number of at least 1, got 0"),
        ("max_wall_seconds", True, "must be a whole number of at least 1, got true"),
        ("max_wall_seconds", 1.5, "must be a whole number of at least 1, got 1.5"),
        ("max_wall_seconds", 10**400, "a very large number is too large; use at most 2147483647"),
        ("max_wall_seconds", 2**31, "2147483648 is too large; use at most 2147483647"),
        ("grace_seconds", -1, "must be a whole number of at least 0, got -1"),
        ("max_predictions_mb", 0, "must be a whole number of at least 1, got 0"),
        ("num_threads", 0, "must be a whole number of at least 1, got 0"),
        ("max_ram_mb", "8G", "must be a whole number of at least 1, got '8G'"),
        ("enabled", "true", "must be true or false, got 'true'"),
        ("trainer", 3, "must be text, got 3; quote it"),
        ("device", "gpu", "'gpu' is not a device; valid devices: auto, cpu, mps, cuda, cuda:N (e.g. cuda:1)"),
        ("device", "cuda:", "'cuda:' is not a device; valid devices: auto, cpu, mps, cuda, cuda:N (e.g. cuda:1)"),
        ("device", 0, "0 is not a device; valid devices: auto, cpu, mps, cuda, cuda:N (e.g. cuda:1)"),
        ("trainer_params", [1], ("must be a mapping of keys to values, e.g. {sklearn-text-classification: {C: 1.0}}, "
                                "got a list of 1 item(s)")),
    ],
)
def test_model_training_value_types(key: str, value: object, message: str) -> None:
    assert only_error(with_training(**{key: value})) == f"model_training.{key}: {message}"


def test_trainer_params_values_must_be_mappings() -> None:
    report = validate(with_training(trainer_params={"hf": 3, 1: {}}), CONFIG)
    assert errors(report) == [
        ("model_training.trainer_params.hf: must be a mapping of parameter names to values, e.g. {epochs: 3}, "
        "got 3"),
        "model_training.trainer_params.1: trainer names must be text, got 1",
    ]
    config = validate(with_training(trainer_params={"hf": {"epochs": 3}}), CONFIG).config
    assert config is not None and config.model_training.trainer_params == {"hf": {"epochs": 3}}


@pytest.mark.parametrize("device", ["auto", "cpu", "mps", "cuda", "cuda:0", "cuda:12"])
def test_local_settings_go_to_the_local_backend(device: str) -> None:
    config = validate(with_training(device=device, num_threads=4, max_ram_mb=2048, grace_seconds=0), CONFIG).config
    assert config is not None
    assert config.model_training.local == LocalBackendSettings(device=device, num_threads=4, max_ram_mb=2048)
    assert config.model_training.grace_seconds == 0


# --- backends: names and types -----------------------------------------------------------------


def test_backends_must_be_a_mapping() -> None:
    assert only_error(with_training(backends=["gpu-server"])) == (
        "model_training.backends: must be a mapping of backend names to settings, e.g. gpu-server: {type: ssh, "
        "host: gpu.example.org}, got a list of 1 item(s)"
    )


def test_backend_named_local_is_reserved() -> None:
    assert only_error(with_backend("local", **SSH)) == (
        "model_training.backends.local: 'local' is reserved for the backend that always exists (a subprocess on "
        "this server); set its device, num_threads and max_ram_mb directly under model_training, and rename "
        "this backend"
    )


@pytest.mark.parametrize("name", ["gpu server", "", "-x", ".hidden", "ü"])
def test_backend_names_are_restricted(name: str) -> None:
    assert only_error(with_backend(name, **SSH)) == (
        f"model_training.backends.{name}: {name!r} is not a valid backend name; use letters, digits, '.', '_' "
        "and '-', starting with a letter or digit"
    )


def test_backend_name_must_be_text() -> None:
    raw = minimal()
    raw["model_training"] = {"backends": {7: SSH}}
    assert only_error(raw) == "model_training.backends.7: backend names must be text, got 7; quote the name"


@pytest.mark.parametrize("name", ["gpu-server", "a.b_c-1", "0node"])
def test_valid_backend_names(name: str) -> None:
    assert validate(with_backend(name, **SSH), CONFIG).ok


def test_backend_body_must_be_a_mapping() -> None:
    report = validate(with_backend("gpu-server"), CONFIG)
    raw = minimal()
    raw["model_training"] = {"backends": {"gpu-server": "ssh"}}
    assert only_error(raw) == (
        "model_training.backends.gpu-server: must be a mapping with type: ssh, slurm or agent and its settings, "
        "got 'ssh'"
    )
    assert errors(report) == ["model_training.backends.gpu-server.type: missing; set type: ssh, slurm or agent"]
    assert report.errors[0].backend == "gpu-server"


def test_backend_type_lists_valid_types() -> None:
    assert only_error(with_backend(type="kubernetes", host="x")) == (
        "model_training.backends.gpu-server.type: 'kubernetes' is not a backend type; valid types: ssh, slurm, agent"
    )


def test_misspelt_python_stops_with_did_you_mean() -> None:
    """R5: the tutorial's case: `pyhton` must stop the server, not fall back to python3."""
    report = validate(with_backend(**SSH, pyhton="/opt/conda/bin/python3"), CONFIG)
    assert errors(report) == [
        ("model_training.backends.gpu-server.pyhton: unknown key for an ssh backend (did you mean 'python'?). "
        "Valid keys: type, description, host, user, port, identity_file, python, packages, gpus, "
        "min_free_gpu_mb, num_threads, remote_dir, max_artifact_mb, max_artifacts_total_mb, fetch_artifacts, keep_remote, keep_connection_s, "
        "heartbeat_timeout_s, env, container")
    ]
    issue = report.errors[0]
    assert issue.path == "model_training.backends.gpu-server.pyhton" and issue.backend == "gpu-server"
    assert report.config is None


def test_unknown_slurm_key_lists_slurm_keys() -> None:
    message = only_error(with_backend("cluster", **SLURM, partiton="gpu"))
    assert message == (
        "model_training.backends.cluster.partiton: unknown key for a slurm backend (did you mean 'partition'?). "
        "Valid keys: type, description, host, user, port, identity_file, python, min_free_gpu_mb, num_threads, "
        "remote_dir, max_artifact_mb, max_artifacts_total_mb, fetch_artifacts, keep_remote, keep_connection_s, heartbeat_timeout_s, env, container, "
        "job_python, prelude, partition, account, qos, gres, time, mem, cpus_per_task, constraint, "
        "extra_sbatch_args, poll_interval_s"
    )


def test_slurm_key_on_ssh_backend_says_so() -> None:
    assert only_error(with_backend(**SSH, partition="gpu")) == (
        "model_training.backends.gpu-server.partition: partition is a slurm setting, but this backend has "
        "type: ssh; remove it or set type: slurm"
    )


@pytest.mark.parametrize("btype", ["ssh", "slurm"])
def test_ssh_and_slurm_need_host(btype: str) -> None:
    body = {"type": btype, "remote_dir": "/shared/x"}
    article = "an" if btype == "ssh" else "a"
    assert only_error(with_backend("b", **body)) == (
        f"model_training.backends.b.host: missing; {article} {btype} backend needs the host to log in to (any "
        "name ssh accepts, e.g. gpu.example.org or an alias from ~/.ssh/config)"
    )


def test_slurm_needs_remote_dir() -> None:
    assert only_error(with_backend("cluster", type="slurm", host="login")) == (
        "model_training.backends.cluster.remote_dir: missing; a slurm backend needs remote_dir on storage the "
        "login node and the compute nodes share, e.g. remote_dir: /shared/projects/me/potato-training"
    )


@pytest.mark.parametrize(
    ("remote_dir", "local"),
    [
        ("/tmp", "/tmp"),
        ("/tmp/", "/tmp"),
        ("/tmp/x", "/tmp"),
        ("/var/tmp/x", "/var/tmp"),
        ("//tmp/x", "/tmp"),
        ("///tmp/x", "/tmp"),
        ("/tmp/../tmp/x", "/tmp"),
        ("/shared/../tmp/x", "/tmp"),
        ("/./var//tmp", "/var/tmp"),
        ("/dev/shm/potato", "/dev/shm"),
    ],
)
def test_slurm_remote_dir_under_node_local_tmp_is_an_error(remote_dir: str, local: str) -> None:
    body = dict(SLURM, remote_dir=remote_dir)
    assert only_error(with_backend("cluster", **body)) == (
        f"model_training.backends.cluster.remote_dir: {remote_dir!r} is under {local}; /tmp, /var/tmp and "
        "/dev/shm are local to each node, so the job on a compute node would not see the files the agent writes "
        "on the login node. Use storage the login and compute nodes share, e.g. remote_dir: "
        "/shared/projects/me/potato-training"
    )


@pytest.mark.parametrize("remote_dir", ["/tmpfs/x", "/var/tmpx", "/home/me/tmp", "~/potato", "tmp/x", "/tmp/../srv"])
def test_slurm_remote_dir_elsewhere_is_fine(remote_dir: str) -> None:
    assert node_local_dir(remote_dir) is None
    assert validate(with_backend("cluster", **dict(SLURM, remote_dir=remote_dir)), CONFIG).ok


def test_ssh_remote_dir_may_be_anywhere() -> None:
    config = validate(with_backend(**SSH, remote_dir="/tmp/potato"), CONFIG).config
    assert config is not None
    backend = config.model_training.backends["gpu-server"]
    assert isinstance(backend, SshBackendSettings) and backend.remote_dir == "/tmp/potato"


def test_packages_on_slurm_explains_why() -> None:
    """R5, R26."""
    assert only_error(with_backend("cluster", **SLURM, packages=["peft"])) == (
        "model_training.backends.cluster.packages: packages is not supported on a slurm backend: a venv built on "
        "the login node may not run on the compute nodes. Point job_python at an environment the compute nodes "
        'have, and put module loads or its activation in prelude, e.g. prelude: ["module load cuda/12.4"]'
    )


def test_gpus_on_slurm_points_to_gres() -> None:
    """R27."""
    assert only_error(with_backend("cluster", **SLURM, gpus="auto")) == (
        "model_training.backends.cluster.gpus: gpus is not supported on a slurm backend: GPUs come from gres "
        "(e.g. gres: gpu:1), and the scheduler sets CUDA_VISIBLE_DEVICES for the GPUs it allocates. Remove gpus "
        "and set gres"
    )


def test_agent_knows_only_four_keys() -> None:
    """R8."""
    config = validate(with_backend("lab", type="agent", description="desk", heartbeat_timeout_s=60,
                                   queue_timeout_s=3600), CONFIG).config
    assert config is not None
    assert config.model_training.backends["lab"] == AgentBackendSettings(
        name="lab", description="desk", heartbeat_timeout_s=60, queue_timeout_s=3600
    )
    assert only_error(with_backend("lab", type="agent", host="desk.lan")) == (
        "model_training.backends.lab.host: an agent backend takes no host: Potato never connects to the "
        "training machine, the agent there opens every connection itself and takes its settings on the "
        "`potato training agent` command line. Valid keys: type, description, heartbeat_timeout_s, queue_timeout_s"
    )
    assert only_error(with_backend("lab", type="agent", queue_timeout=5)) == (
        "model_training.backends.lab.queue_timeout: unknown key for an agent backend (did you mean "
        "'queue_timeout_s'?). Valid keys: type, description, heartbeat_timeout_s, queue_timeout_s"
    )


def test_every_problem_of_a_backend_is_reported_with_its_backend() -> None:
    raw = with_training(backends={
        "a": {"type": "ssh", "port": 0, "gpus": "x"},
        "b": {"type": "slurm", "host": "h", "remote_dir": "/tmp/p", "packages": []},
    })
    report = validate(raw, CONFIG)
    assert [(i.path, i.backend) for i in report.errors] == [
        ("model_training.backends.a.port", "a"),
        ("model_training.backends.a.gpus", "a"),
        ("model_training.backends.a.host", "a"),
        ("model_training.backends.b.packages", "b"),
        ("model_training.backends.b.remote_dir", "b"),
    ]


# --- backends: value types ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "key", "message"),
    [
        (SSH, "port", (0, "must be a whole number from 1 to 65535, got 0")),
        (SSH, "port", (65536, "must be a whole number from 1 to 65535, got 65536")),
        (SSH, "port", ("22", "must be a whole number from 1 to 65535, got '22'")),
        (SSH, "port", (True, "must be a whole number from 1 to 65535, got true")),
        (SSH, "host", ("-oProxyCommand=x", ("'-oProxyCommand=x' must not start with '-' or contain spaces (ssh "
                                           "would read it as an option)"))),
        (SSH, "host", ("gpu example", ("'gpu example' must not start with '-' or contain spaces (ssh would read it "
                                      "as an option)"))),
        (SSH, "user", ("-l", "'-l' must not start with '-' or contain spaces (ssh would read it as an option)")),
        (SSH, "python", ("", "is empty; set a value or remove the key")),
        (SSH, "min_free_gpu_mb", (-1, "must be a whole number of at least 0, got -1")),
        (SSH, "num_threads", (0, "must be a whole number of at least 1, got 0")),
        (SSH, "max_artifact_mb", (-5, "must be a whole number of at least 0, got -5")),
        (SSH, "fetch_artifacts", ("no", "must be true or false, got 'no'")),
        (SSH, "keep_remote", (1, "must be true or false, got 1")),
        (SSH, "heartbeat_timeout_s", (0, "must be a whole number of at least 1, got 0")),
        (AGENT, "queue_timeout_s", (0, "must be a whole number of at least 1, got 0")),
        (SSH, "packages", ("peft", ("must be a list of strings, e.g. [\"transformers>=4.46.0\", \"peft>=0.13.0\"], "
                                   "got 'peft'"))),
        (SLURM, "prelude", ("module load cuda", ("must be a list of strings, e.g. [\"module load cuda/12.4\"], got "
                                                "'module load cuda'"))),
        (SLURM, "extra_sbatch_args", ({}, "must be a list of strings, e.g. [\"--exclusive\"], got a mapping")),
        (SLURM, "cpus_per_task", (0, "must be a whole number of at least 1, got 0")),
        (SLURM, "poll_interval_s", (0, "must be a number greater than 0, got 0")),
        (SLURM, "poll_interval_s", (math.nan, "must be a number greater than 0, got nan")),
        (SLURM, "poll_interval_s", ("5", "must be a number greater than 0, got '5'")),
        (SLURM, "poll_interval_s", (1e300, "1e+300 is too large; use at most 2147483647")),
        (SLURM, "job_python", (3, "must be text, got 3; quote it")),
        (SLURM, "gres", (1, "must be text, got 1; quote it")),
        (SSH, "env", ("PATH=/x", ("must be a mapping of keys to values, e.g. {PATH: /opt/bin:/usr/bin}, got "
                                 "'PATH=/x'"))),
        (SSH, "container", ("apptainer", ("must be a mapping of keys to values, e.g. {runtime: apptainer, image: "
                                         "/shared/images/potato-worker.sif}, got 'apptainer'"))),
    ],
)
def test_backend_value_types(body: dict[str, Any], key: str, message: Any) -> None:
    value, detail = message
    btype = body["type"]
    raw = with_backend(btype, **dict(body, **{key: value}))
    assert only_error(raw) == f"model_training.backends.{btype}.{key}: {detail}"


@pytest.mark.parametrize(
    ("value", "stored"),
    [("auto", "auto"), ("none", "none"), ("1", "1"), (1, "1"), (0, "0"), ("0,1", "0,1"), ("0, 1", "0,1")],
)
def test_gpus_values(value: object, stored: str) -> None:
    config = validate(with_backend(**SSH, gpus=value), CONFIG).config
    assert config is not None
    backend = config.model_training.backends["gpu-server"]
    assert isinstance(backend, SshBackendSettings) and backend.gpus == stored


@pytest.mark.parametrize("value", ["cuda", -1, "0,0", 1.5, "1,", "all"])
def test_bad_gpus_values(value: object) -> None:
    message = only_error(with_backend(**SSH, gpus=value))
    assert message.startswith("model_training.backends.gpu-server.gpus: ")
    assert message.endswith(
        'is not a GPU choice; use auto (the GPU with the most free memory), none (the CPU), or GPU indices such '
        'as "1" or "0,1"'
    )


def test_gpus_false_suggests_none() -> None:
    """YAML reads an unquoted `no`/`off` as false."""
    assert only_error(with_backend(**SSH, gpus=False)) == (
        "model_training.backends.gpu-server.gpus: false is not a GPU choice; to train on the CPU write gpus: none; "
        'use auto (the GPU with the most free memory), none (the CPU), or GPU indices such as "1" or "0,1"'
    )


def test_numbers_where_slurm_takes_names_become_text() -> None:
    body = dict(SLURM, account=12345, mem=32000, partition="gpu", user=1001)
    config = validate(with_backend("cluster", **body), CONFIG).config
    assert config is not None
    backend = config.model_training.backends["cluster"]
    assert isinstance(backend, SlurmBackendSettings)
    assert (backend.account, backend.mem, backend.user) == ("12345", "32000", "1001")


def test_env_values() -> None:
    config = validate(with_backend(**SSH, env={"PATH": "/opt/bin", "OMP_NUM_THREADS": 4, "X": 1.5}), CONFIG).config
    assert config is not None
    backend = config.model_training.backends["gpu-server"]
    assert isinstance(backend, SshBackendSettings)
    assert backend.env == {"PATH": "/opt/bin", "OMP_NUM_THREADS": "4", "X": "1.5"}
    report = validate(with_backend(**SSH, env={"A-B": "x", "OK": True, 3: "x", "N": None}), CONFIG)
    assert errors(report) == [
        ("model_training.backends.gpu-server.env.A-B: is not a valid environment variable name; use letters, "
        "digits and _"),
        "model_training.backends.gpu-server.env.OK: must be text, got true; quote the value",
        ("model_training.backends.gpu-server.env.3: is not a valid environment variable name; use letters, digits "
        "and _"),
        "model_training.backends.gpu-server.env.N: must be text, got null; quote the value",
    ]


def test_container() -> None:
    """D2."""
    body = dict(SLURM, container={"runtime": "apptainer", "image": "/shared/w.sif", "options": ["--nv"]})
    config = validate(with_backend("cluster", **body), CONFIG).config
    assert config is not None
    backend = config.model_training.backends["cluster"]
    assert isinstance(backend, SlurmBackendSettings) and backend.container is not None
    assert (backend.container.runtime, backend.container.image, backend.container.options) == (
        "apptainer", "/shared/w.sif", ("--nv",)
    )
    report = validate(with_backend(**SSH, container={"runtime": "podman", "options": "--nv", "img": "x"}), CONFIG)
    where = "model_training.backends.gpu-server.container"
    assert errors(report) == [
        f"{where}.runtime: 'podman' is not a valid container runtime; valid choices: apptainer, docker",
        f"{where}.options: must be a list of strings, e.g. [\"--nv\"], got '--nv'",
        f"{where}.img: unknown key for a container (did you mean 'image'?). Valid keys: runtime, image, options",
        f"{where}.image: missing; name the worker image, e.g. image: /shared/images/potato-worker.sif",
    ]
    assert only_error(with_backend(**SSH, container={"image": "potato-worker:latest"})) == (
        f"{where}.runtime: missing; set runtime: apptainer or runtime: docker"
    )


# --- slurm time (R6) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800),
        ("30:15", 1815),
        ("04:00:00", 14400),
        ("12:00:00", 43200),
        ("1-0", 86400),
        ("1-02", 93600),
        ("1-02:30", 95400),
        ("1-02:30:05", 95405),
        ("0", None),
        ("UNLIMITED", None),
        ("infinite", None),
    ],
)
def test_parse_slurm_time(text: str, seconds: object) -> None:
    assert parse_slurm_time(text) == seconds


@pytest.mark.parametrize("text", ["", "4h", "1:2:3:4", "-5", "1-", "1-2-3", "a:b", "1.5", "1234567890"])
def test_parse_slurm_time_refuses_what_sbatch_refuses(text: str) -> None:
    with pytest.raises(Invalid):
        parse_slurm_time(text)


def test_bad_time_lists_formats() -> None:
    assert only_error(with_backend("cluster", **SLURM, time="4h")) == (
        "model_training.backends.cluster.time: '4h' is not a SLURM time; use minutes, MM:SS, HH:MM:SS, D-HH, "
        'D-HH:MM or D-HH:MM:SS, e.g. time: "04:00:00"'
    )


def test_unquoted_time_that_yaml_made_a_number_asks_for_quotes() -> None:
    raw = yaml.safe_load(TUTORIAL.replace('time: "04:00:00"', "time: 12:00:00"))
    assert raw["model_training"]["backends"]["cluster"]["time"] == 43200
    assert only_error(raw) == (
        "model_training.backends.cluster.time: YAML read this unquoted value as the number 43200 (an unquoted time "
        'such as 12:00:00 becomes seconds); quote the time, e.g. time: "12:00:00"'
    )


def test_time_of_wrong_type() -> None:
    assert only_error(with_backend("cluster", **SLURM, time=[1])) == (
        'model_training.backends.cluster.time: must be a SLURM time in quotes, e.g. time: "04:00:00", got a list '
        "of 1 item(s)"
    )


def test_long_slurm_time_warns_with_the_tutorial_text() -> None:
    """R6, word for word."""
    raw = yaml.safe_load(TUTORIAL.replace('time: "04:00:00"', 'time: "12:00:00"'))
    report = validate(raw, CONFIG)
    assert report.ok and report.config is not None and not report.strict_ok()
    assert warnings(report) == [
        ("model_training.backends.cluster.time is 12:00:00. A job that holds a GPU for more than 6 hours is long "
        "on a shared cluster; check its policy")
    ]
    assert report.warnings[0].backend == "cluster"
    assert report.warnings[0].path == "model_training.backends.cluster.time"


@pytest.mark.parametrize(
    ("time", "warns"),
    [("06:00:00", False), ("360", False), ("06:00:01", True), ("361", True), ("0-7", True),
     ("1-00:00:00", True), ("UNLIMITED", True), ("0", True), ("5:59:59", False)],
)
def test_long_time_threshold(time: str, warns: bool) -> None:
    report = validate(with_backend("cluster", **SLURM, time=time), CONFIG)
    assert report.ok
    assert bool(report.warnings) is warns
    if warns:
        assert warnings(report)[0].startswith(f"model_training.backends.cluster.time is {time}. ")


# --- debug with ssh (R21) ----------------------------------------------------------------------


def test_debug_with_ssh_or_slurm_backend_warns_per_backend() -> None:
    raw = with_training(backends={"gpu-server": SSH, "cluster": SLURM, "lab": AGENT})
    raw["debug"] = True
    report = validate(raw, CONFIG)
    assert report.ok
    assert warnings(report) == [
        ("debug: true while model_training.backends.gpu-server is an ssh backend. Requests through its ssh socket "
        "reach the server as loopback requests, and a server with debug: true gives loopback requests admin "
        "access, so anyone using that account on the remote host gets admin access while a run goes on. Turn "
        "debug off while training over ssh"),
        ("debug: true while model_training.backends.cluster is a slurm backend. Requests through its ssh socket "
        "reach the server as loopback requests, and a server with debug: true gives loopback requests admin "
        "access, so anyone using that account on the remote host gets admin access while a run goes on. Turn "
        "debug off while training over ssh"),
    ]
    assert [i.backend for i in report.warnings] == ["gpu-server", "cluster"]


def test_debug_without_ssh_backends_is_quiet() -> None:
    raw = with_training(backends={"lab": AGENT})
    raw["debug"] = True
    assert validate(raw, CONFIG).warnings == []
    raw = with_training(backends={"gpu-server": SSH})
    raw["debug"] = False
    assert validate(raw, CONFIG).warnings == []


# --- validation block --------------------------------------------------------------------------


def test_validation_block_shape() -> None:
    raw = minimal()
    raw["validation"] = ["x"]
    assert only_error(raw) == (
        'validation: must be a mapping of keys to values, e.g. {acknowledge: ["model_training.backends.cluster.'
        'time is"]}, got a list of 1 item(s)'
    )
    raw["validation"] = {"acknowledge": "model_training.backends.cluster.time is", "strict": True}
    assert errors(validate(raw, CONFIG)) == [
        ('validation.acknowledge: must be a list of warning texts to acknowledge, e.g. acknowledge: '
        '["model_training.backends.cluster.time is"], got \'model_training.backends.cluster.time is\''),
        "validation.strict: unknown key for validation. Valid keys: acknowledge",
    ]


def test_acknowledge_entries_are_kept_on_the_config() -> None:
    raw = yaml.safe_load(TUTORIAL.replace('time: "04:00:00"', 'time: "12:00:00"'))
    raw["validation"] = {"acknowledge": ["model_training.backends.cluster.time is"]}
    report = validate(raw, CONFIG)
    assert report.strict_ok() and report.config is not None
    assert report.config.acknowledge == ("model_training.backends.cluster.time is",)
    assert [i.path for i in report.acknowledged] == ["model_training.backends.cluster.time"]


# --- report, text and JSON ---------------------------------------------------------------------


def test_format_report_valid() -> None:
    assert format_report(validate(minimal(), Path("config.yaml")), strict=True) == "config.yaml is valid."


def test_format_report_errors_and_warnings() -> None:
    raw = with_backend(**SSH, pyhton="x")
    raw["colour_scheme"] = 1
    text = format_report(validate(raw, Path("config.yaml")), strict=False)
    lines = text.splitlines()
    assert lines[0].startswith("error: model_training.backends.gpu-server.pyhton: unknown key")
    assert lines[1] == "warning: colour_scheme: unknown key, ignored"
    assert lines[-1] == "config.yaml has 1 error(s)."


def test_format_report_strict_and_acknowledged() -> None:
    raw = yaml.safe_load(TUTORIAL.replace('time: "04:00:00"', 'time: "12:00:00"'))
    raw["colour_scheme"] = 8000
    raw["validation"] = {"acknowledge": ["model_training.backends.cluster.time is"]}
    report = validate(raw, Path("config.yaml"))
    assert format_report(report, strict=True).splitlines() == [
        "warning: colour_scheme: unknown key, ignored",
        ("acknowledged: model_training.backends.cluster.time is 12:00:00. A job that holds a GPU for more than 6 "
        "hours is long on a shared cluster; check its policy"),
        "config.yaml fails --strict: 1 unacknowledged warning(s).",
    ]
    assert format_report(report, strict=False).splitlines()[-1] == (
        "config.yaml is valid, with 1 warning(s) (--strict fails on unacknowledged warnings)."
    )


def test_report_to_json() -> None:
    raw = with_backend(**SSH, pyhton="x")
    raw["colour_scheme"] = 1
    data = report_to_json(validate(raw, CONFIG))
    assert data["valid"] is False and data["strict_valid"] is False
    assert data["errors"] == [{
        "path": "model_training.backends.gpu-server.pyhton",
        "message": validate(raw, CONFIG).errors[0].message,
        "backend": "gpu-server",
    }]
    assert data["warnings"] == [{"path": "colour_scheme", "message": "colour_scheme: unknown key, ignored", "backend": None}]
    assert data["acknowledged"] == []
    clean = report_to_json(validate(minimal(), CONFIG))
    assert clean["valid"] is True and clean["strict_valid"] is True


def test_validate_does_not_modify_its_input() -> None:
    raw = yaml.safe_load(TUTORIAL)
    before = copy.deepcopy(raw)
    validate(raw, CONFIG)
    assert raw == before


# --- loading files -----------------------------------------------------------------------------


def test_load_report_and_load_config(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(TUTORIAL, encoding="utf-8")
    report = load_report(path)
    assert report.ok and report.source == str(path)
    config = load_config(path)
    assert config.task_dir == tmp_path
    assert config.data_files == (tmp_path / "data" / "reviews.json",)


def test_load_config_raises_listing_every_error(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(TUTORIAL.replace("python:", "pyhton:", 1).replace("host: login", "hots: login"), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    problems = caught.value.problems
    assert len(problems) == 3
    assert problems[0].startswith("model_training.backends.gpu-server.pyhton: unknown key for an ssh backend (did "
                                  "you mean 'python'?)")
    assert problems[1].startswith("model_training.backends.cluster.hots: unknown key for a slurm backend (did you "
                                  "mean 'host'?)")
    assert problems[2].startswith("model_training.backends.cluster.host: missing")
    assert str(path) in str(caught.value)


def test_missing_file_is_a_report_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    report = load_report(path)
    assert report.config is None
    assert errors(report) == [
        f"{path}: cannot read the config file: No such file or directory; check the path and permissions"
    ]
    with pytest.raises(ConfigError):
        load_config(path)


def test_directory_is_a_report_error(tmp_path: Path) -> None:
    assert errors(load_report(tmp_path))[0].startswith(f"{tmp_path}: cannot read the config file: ")


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text('annotation_task_name: "x"\ndata_files: [a.json\nadmin_api_key: k\n', encoding="utf-8")
    (message,) = errors(load_report(path))
    assert message.startswith(f"{path}, line 3, column 14: YAML syntax error: ")
    assert message.endswith(
        "Fix the YAML there (check the indentation, and quote values that contain ': ' or ' #')"
    )


def test_tab_indentation_is_a_yaml_error(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("model_training:\n\tenabled: true\n", encoding="utf-8")
    (message,) = errors(load_report(path))
    assert message.startswith(f"{path}, line 2, column 1: YAML syntax error: ")


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"annotation_task_name: \xff\n")
    assert errors(load_report(path)) == [f"{path}: is not UTF-8 text (byte 22); save the file as UTF-8"]


def test_huge_integer_and_deep_nesting_are_report_errors(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("x: " + "9" * 5000 + "\n", encoding="utf-8")
    assert errors(load_report(path))[0].startswith(f"{path}: cannot be read as YAML: ")
    path.write_text("x: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    assert errors(load_report(path)) == [f"{path}: cannot be read as YAML: nested too deeply; simplify the file"]


def test_empty_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("# nothing yet\n", encoding="utf-8")
    (message,) = errors(load_report(path))
    assert message.endswith("the file is empty")


def test_pass_env_names_variables_for_local_runs_and_refuses_bad_names() -> None:
    report = validate(with_training(pass_env=["HF_TOKEN", "WANDB_API_KEY"]), CONFIG)
    assert report.config is not None and report.config.model_training.local.pass_env == ("HF_TOKEN", "WANDB_API_KEY")
    assert only_error(with_training(pass_env=["HF-TOKEN"])) == (
        "model_training.pass_env[0]: 'HF-TOKEN' is not a valid environment variable name; use letters, digits and _")
    assert only_error(with_training(pass_env="HF_TOKEN")).startswith(
        "model_training.pass_env: must be a list of strings, e.g. [HF_TOKEN]")


@pytest.mark.parametrize("key, why", [
    ("change-me", "is an example key that anyone would try first"),
    ("s3cret-key", "has only 10 characters; a guessable key opens the admin pages and the training API"),
])
def test_a_known_or_short_admin_key_warns_so_strict_fails(key: str, why: str) -> None:
    raw = minimal()
    raw["admin_api_key"] = key
    assert warnings(validate(raw, CONFIG)) == [
        f"admin_api_key: {why}. Set a long random secret, e.g. the output of "
        "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"]


def test_max_length_belongs_to_text_schemes() -> None:
    raw = minimal()
    raw["annotation_schemes"] = [{"annotation_type": "text", "name": "note", "max_length": 200},
                                 {"annotation_type": "radio", "name": "s", "labels": ["a", "b"], "max_length": 5}]
    assert errors(validate(raw, CONFIG)) == [
        "annotation_schemes[1].max_length: applies to text schemes only; remove it from this radio scheme"]
    raw["annotation_schemes"].pop()
    report = validate(raw, CONFIG)
    assert report.config is not None and report.config.annotation_schemes[0].max_length == 200


def test_a_config_others_can_read_warns_when_it_holds_the_admin_key(make_project: Any) -> None:
    # Issue 11: the config holds admin_api_key; an 0644 file gives it to every account on the machine.
    path = make_project()
    assert not [w for w in load_report(path).warnings if "can read it" in w.message]  # 0600: quiet
    path.chmod(0o644)
    assert [w.message for w in load_report(path).warnings if "can read it" in w.message] == [
        f"admin_api_key: config.yaml holds the admin key, and other accounts on this machine can read it (mode "
        f"0644); make the file yours alone: chmod 600 {path}"]
    raw = yaml.safe_load(path.read_text())
    del raw["admin_api_key"]
    path.write_text(yaml.safe_dump(raw))
    assert not [w for w in load_report(path).warnings if "can read it" in w.message]  # no key, nothing to hide


def test_server_public_url_is_the_address_agents_are_told() -> None:
    """server.public_url: what `potato training register` prints when agents reach the server under
    another name than it binds (a proxy, a DNS name) (issue 19)."""
    raw = minimal()
    raw["server"] = {"public_url": "https://annotate.example.org/potato/"}
    report = validate(raw, CONFIG)
    assert report.config is not None and report.config.public_url == "https://annotate.example.org/potato"
    for bad, says in (("annotate.example.org", "must be an http:// or https:// address"),
                      ("https://me:pw@annotate.example.org", "without credentials"),
                      ("https://annotate.example.org:99999", "has a bad port")):
        raw["server"] = {"public_url": bad}
        message = only_error(raw)
        assert message.startswith("server.public_url: ") and says in message, message
