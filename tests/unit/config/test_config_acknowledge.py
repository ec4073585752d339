"""R7: ``validation.acknowledge`` entries, as a pure function and through the validator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from potato import defaults
from potato.config import validate
from potato.config.acknowledge import apply_acknowledge, entry_backend
from potato.config.schema import Issue

CONFIG = Path("/projects/reviews/config.yaml")


def long_time(backend: str, value: str = "12:00:00") -> Issue:
    path = f"model_training.backends.{backend}.time"
    return Issue(
        path,
        f"{path} is {value}. A job that holds a GPU for more than 6 hours is long on a shared cluster; "
        "check its policy",
        backend,
    )


PORT = Issue("port", "port: unknown key, ignored")


def ack(entries: list[object], warnings: list[Issue], names: list[str] | None = None) -> Any:
    return apply_acknowledge(entries, warnings, names if names is not None else ["cluster", "cluster2"])


def messages(issues: list[Issue]) -> list[str]:
    return [i.message for i in issues]


# --- the pure function -------------------------------------------------------------------------


def test_tutorial_entry_acknowledges_its_backend() -> None:
    remaining, acknowledged = ack(["model_training.backends.cluster.time is"], [long_time("cluster"), PORT])
    assert acknowledged == [long_time("cluster")]
    assert remaining == [PORT]


def test_matching_is_case_sensitive() -> None:
    remaining, acknowledged = ack(["Model_training.backends.cluster.time is"], [long_time("cluster")])
    assert acknowledged == []
    assert messages(remaining) == [
        long_time("cluster").message,
        ("validation.acknowledge[0]: 'Model_training.backends.cluster.time is' matches no warning of backend "
        "'cluster' (matching is case-sensitive); copy part of a warning's text as `potato validate` prints it, "
        "or remove the entry"),
    ]
    assert remaining[1].path == "validation.acknowledge[0]" and remaining[1].backend is None


def test_entry_too_short_becomes_a_warning_even_if_it_would_match() -> None:
    remaining, acknowledged = ack(["time is"], [long_time("cluster")])
    assert acknowledged == []
    assert messages(remaining)[1] == (
        "validation.acknowledge[0]: 'time is' has 7 characters; an entry needs at least 12 so it cannot match "
        'warnings by accident. Quote more of the warning, e.g. "model_training.backends.cluster.time is"'
    )


def test_entry_of_exactly_the_minimum_length_may_match() -> None:
    entry = "is long on a"
    assert len(entry) == defaults.ACKNOWLEDGE_MIN_CHARS
    remaining, acknowledged = ack([entry], [long_time("cluster")])
    assert remaining == [] and acknowledged == [long_time("cluster")]


@pytest.mark.parametrize(("entry", "shown"), [(42, "42"), (None, "null"), (["x"], "a list of 1 item(s)"),
                                               ({"a": 1}, "a mapping"), (True, "true")])
def test_entry_that_is_not_text_becomes_a_warning(entry: object, shown: str) -> None:
    remaining, acknowledged = ack([entry], [PORT])
    assert acknowledged == []
    assert messages(remaining) == [
        PORT.message,
        (f"validation.acknowledge[0]: {shown} is not text; write part of the warning to acknowledge as a quoted "
        'string of at least 12 characters, e.g. "model_training.backends.cluster.time is"'),
    ]


def test_entry_matching_nothing_becomes_a_warning() -> None:
    remaining, _ = ack(["this text appears nowhere"], [PORT])
    assert messages(remaining)[1] == (
        "validation.acknowledge[0]: 'this text appears nowhere' matches no warning (matching is case-sensitive); "
        "copy part of a warning's text as `potato validate` prints it, or remove the entry"
    )


def test_entry_naming_cluster_leaves_cluster2_alone() -> None:
    """`backends.cluster` is a substring of cluster2's warning, yet names only cluster."""
    warnings = [long_time("cluster"), long_time("cluster2")]
    remaining, acknowledged = ack(["model_training.backends.cluster"], warnings)
    assert acknowledged == [long_time("cluster")]
    assert remaining == [long_time("cluster2")]
    remaining, acknowledged = ack(["backends.cluster2.time is"], warnings)
    assert acknowledged == [long_time("cluster2")]
    assert remaining == [long_time("cluster")]


def test_entry_naming_a_backend_that_has_no_such_warning() -> None:
    remaining, acknowledged = ack(["model_training.backends.cluster2.time is"], [long_time("cluster")])
    assert acknowledged == []
    assert "matches no warning of backend 'cluster2'" in remaining[-1].message


def test_two_backends_with_the_same_warning() -> None:
    warnings = [long_time("a"), long_time("b")]
    remaining, acknowledged = ack(["model_training.backends.a.time is"], warnings, ["a", "b"])
    assert acknowledged == [long_time("a")] and remaining == [long_time("b")]
    remaining, acknowledged = ack(["is long on a shared cluster"], warnings, ["a", "b"])
    assert acknowledged == warnings and remaining == []


def test_same_value_for_two_backends_is_acknowledged_per_backend() -> None:
    """An entry naming no backend quiets both; one naming a backend only that one."""
    warnings = [long_time("a", "1-00:00:00"), long_time("b", "1-00:00:00")]
    remaining, acknowledged = ack([".time is 1-00:00:00. A job"], warnings, ["a", "b"])
    assert acknowledged == warnings and remaining == []
    remaining, acknowledged = ack(["backends.b.time is 1-00:00:00"], warnings, ["a", "b"])
    assert acknowledged == [warnings[1]] and remaining == [warnings[0]]


def test_backend_entry_does_not_quiet_warnings_of_no_backend() -> None:
    issue = Issue("x", "x: mentions model_training.backends.cluster in passing")
    remaining, acknowledged = ack(["model_training.backends.cluster"], [issue])
    assert acknowledged == [] and remaining[0] == issue


def test_new_warnings_are_not_acknowledgeable() -> None:
    remaining, acknowledged = ack(["short", "validation.acknowledge[0]"], [PORT])
    assert acknowledged == []
    assert [i.path for i in remaining] == ["port", "validation.acknowledge[0]", "validation.acknowledge[1]"]


def test_two_entries_may_match_the_same_warning() -> None:
    remaining, acknowledged = ack(["model_training.backends.cluster.time", "check its policy"], [long_time("cluster")])
    assert remaining == [] and acknowledged == [long_time("cluster")]


def test_order_is_kept() -> None:
    warnings = [PORT, long_time("cluster"), Issue("debug", "debug: true while ...")]
    remaining, acknowledged = ack(["port: unknown key", "debug: true while"], warnings)
    assert remaining == [long_time("cluster")]
    assert acknowledged == [PORT, warnings[2]]


@pytest.mark.parametrize(
    ("entry", "names", "expected"),
    [
        ("model_training.backends.cluster.time is", ["cluster", "cluster2"], "cluster"),
        ("model_training.backends.cluster", ["cluster", "cluster2"], "cluster"),
        ("model_training.backends.cluster2", ["cluster", "cluster2"], "cluster2"),
        ("model_training.backends.clusterX.time", ["cluster"], None),
        ("backends.a.b.time is", ["a", "a.b"], "a.b"),
        ("backends.a.c.time is", ["a", "a.b"], "a"),
        ("backends.x.time backends.cluster.", ["cluster"], "cluster"),
        ("backends.clusterX backends.cluster", ["cluster"], "cluster"),
        ("no backend here at all", ["cluster"], None),
    ],
)
def test_backend_named(entry: str, names: list[str], expected: str | None) -> None:
    assert entry_backend(entry, names) == expected


# --- through the validator ---------------------------------------------------------------------


def config_with(backends: dict[str, Any], entries: list[object]) -> dict[str, Any]:
    return {
        "annotation_task_name": "t",
        "data_files": ["d.json"],
        "admin_api_key": "a-long-random-admin-key",
        "annotation_schemes": [{"annotation_type": "radio", "name": "s", "labels": ["a", "b"]}],
        "model_training": {"backends": backends},
        "validation": {"acknowledge": entries},
    }


def slurm(time: str) -> dict[str, Any]:
    return {"type": "slurm", "host": "login", "remote_dir": "/shared/p", "time": time}


def test_validator_acknowledges_cluster_not_cluster2() -> None:
    raw = config_with({"cluster": slurm("12:00:00"), "cluster2": slurm("12:00:00")},
                      ["model_training.backends.cluster.time is"])
    report = validate(raw, CONFIG)
    assert report.ok
    assert [i.backend for i in report.acknowledged] == ["cluster"]
    assert [i.backend for i in report.warnings] == ["cluster2"]
    assert not report.strict_ok()


def test_validator_with_everything_acknowledged_passes_strict() -> None:
    raw = config_with({"cluster": slurm("12:00:00"), "cluster2": slurm("2-00:00:00")},
                      ["more than 6 hours is long"])
    report = validate(raw, CONFIG)
    assert report.strict_ok() and len(report.acknowledged) == 2


def test_validator_turns_stale_entries_into_warnings() -> None:
    raw = config_with({"cluster": slurm("04:00:00")}, ["model_training.backends.cluster.time is", 5])
    report = validate(raw, CONFIG)
    assert report.ok and not report.strict_ok()
    assert [i.path for i in report.warnings] == ["validation.acknowledge[0]", "validation.acknowledge[1]"]


def test_validator_can_acknowledge_unknown_top_level_keys() -> None:
    raw = config_with({}, ["colour_scheme: unknown key"])
    raw["colour_scheme"] = "dark"
    report = validate(raw, CONFIG)
    assert report.strict_ok()
    assert [i.path for i in report.acknowledged] == ["colour_scheme"]


def test_debug_warning_acknowledged_per_backend() -> None:
    raw = config_with({"a": {"type": "ssh", "host": "h"}, "b": {"type": "ssh", "host": "h"}},
                      ["model_training.backends.a is an ssh backend"])
    raw["debug"] = True
    report = validate(raw, CONFIG)
    assert [i.backend for i in report.acknowledged] == ["a"]
    assert [i.backend for i in report.warnings] == ["b"]
