"""``model_training``: its keys, the references into the schemes and backends, and ``hub``.

Apart from the validator because this one section is most of the config's surface: trainer
parameters, devices, limits, writeback and automatic runs, each naming schemes or backends that
must exist. The backends themselves are checked in :mod:`potato.config.training.backends`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from potato import defaults
from potato.config.training.backends import check_backends, declared_types, env_names
from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    Problem,
    anything,
    boolean,
    check_keys,
    integer,
    key_text,
    mapping,
    number,
    section,
    show,
    text,
    text_list,
)
from potato.config._files import resolve, warn_token_file
from potato.config.schema import (
    HUB_NAME,
    AutoRetrain,
    HubSettings,
    LocalBackendSettings,
    ModelTraining,
    Writeback,
)
from potato.errors import did_you_mean

_DEVICE_HELP = "valid devices: auto, cpu, mps, cuda, cuda:N (e.g. cuda:1)"


def _device(value: object) -> str:
    """``auto``, ``cpu``, ``mps``, ``cuda``, or one GPU as ``cuda:N``."""
    if isinstance(value, str):
        if value in ("auto", "cpu", "mps", "cuda"):
            return value
        index = value[5:] if value.startswith("cuda:") else ""
        if index.isascii() and index.isdigit() and len(index) < 5:
            return value
    raise Invalid(f"{show(value)} is not a device; {_DEVICE_HELP}")


def _trainer_params(value: object) -> dict[str, dict[str, object]]:
    raw = mapping(value, "{sklearn-text-classification: {C: 1.0}}")
    out: dict[str, dict[str, object]] = {}
    problems: list[Problem] = []
    for trainer, params in raw.items():
        at = f".{key_text(trainer)}"
        if not isinstance(trainer, str):
            problems.append((at, f"trainer names must be text, got {show(trainer)}"))
        elif not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
            shape = "must be a mapping of parameter names to values, e.g. {epochs: 3}"
            problems.append((at, f"{shape}, got {show(params)}"))
        else:
            out[trainer] = dict(params)
    if problems:
        raise Invalid(problems=problems)
    return out


def _scheme_refs(scheme_types: Mapping[str, str | None], *, labelled_only: bool) -> Check:
    """A list of existing scheme names; writeback needs schemes a model can suggest an answer to."""

    def check(value: object) -> tuple[str, ...]:
        names: tuple[str, ...] = text_list('["sentiment"]')(value)
        problems: list[Problem] = []
        for i, name in enumerate(names):
            if name not in scheme_types:
                known = ", ".join(scheme_types) or "none"
                near = did_you_mean(name, scheme_types)
                problems.append((f"[{i}]", f"{show(name)} names no annotation scheme{near}; schemes: {known}"))
            elif labelled_only and scheme_types[name] not in ("radio", "multiselect", "span", "per_step", "pairwise"):
                why = (f"is a {scheme_types[name] or 'broken'} scheme, and suggestions need a scheme with labels "
                       "(radio, multiselect, likert, select, span, a binary pairwise comparison, or one asked on "
                       "each step with labels); remove it")
                problems.append((f"[{i}]", f"{show(name)} {why}"))
        if problems:
            raise Invalid(problems=problems)
        return names

    return check


def _backend_ref(names: Mapping[str, object] | None) -> Check:
    """A backend reference must name ``local`` or a declared backend (None: not checkable)."""

    def check(value: object) -> str:
        name: str = text()(value)
        if names is None or name == defaults.LOCAL_BACKEND or name in names:
            return name
        valid = [defaults.LOCAL_BACKEND, *names]
        raise Invalid(
            f"{show(name)} names no backend{did_you_mean(name, valid)}; valid backends: {', '.join(valid)}. "
            "Declare it under model_training.backends or name one of these"
        )

    return check


def _training_table(scheme_types: Mapping[str, str | None], names: Mapping[str, object] | None) -> dict[
    str, Check
]:
    writeback = {
        "schemas": _scheme_refs(scheme_types, labelled_only=True),
        "include_unlabeled": boolean,
        "min_confidence": number(0, 1, open_low=False),
    }
    auto_retrain = {
        "enabled": boolean,
        "every_n_labels": integer(1),
        "trainer": text(),
        "schemas": _scheme_refs(scheme_types, labelled_only=False),
        "backend": _backend_ref(names),
    }
    return {
        "enabled": boolean,
        "backend": _backend_ref(names),
        "trainer": text(),
        "max_wall_seconds": integer(1),
        "grace_seconds": integer(0),
        "max_predictions_mb": integer(1),
        "max_run_log_mb": integer(1),
        "disk_reserve_mb": integer(0),
        "holdout_fraction": number(0, 1, open_low=True, open_high=True),
        "step_context_chars": integer(0),
        "trainer_params": _trainer_params,
        "device": _device,
        "num_threads": integer(1),
        "max_ram_mb": integer(1),
        "pass_env": env_names,
        "writeback": section(writeback, "model_training.writeback", "{schemas: [sentiment]}"),
        "auto_retrain": section(auto_retrain, "model_training.auto_retrain", "{enabled: true, every_n_labels: 100}"),
        "backends": anything,
        "hub": anything,
    }


def check_model_training(
    raw: object, scheme_types: Mapping[str, str | None], findings: Findings, base: Path | None = None
) -> tuple[ModelTraining | None, dict[str, str | None]]:
    """The training settings and the declared backends' types (for references and the ssh-under-debug warning)."""
    if raw is None:
        return ModelTraining(), {}
    try:
        body = mapping(raw, "{enabled: true, backend: gpu-server}")
    except Invalid as bad:
        findings.errors_at("model_training", bad.problems)
        return None, {}
    raw_backends = body.get("backends")
    backend_types = declared_types(raw_backends)
    checkable = raw_backends is None or isinstance(raw_backends, dict)
    table = _training_table(scheme_types, backend_types if checkable else None)
    before = len(findings.errors)
    values, problems = check_keys(body, table, "model_training")
    findings.errors_at("model_training", problems)
    backends = check_backends(raw_backends, findings) if raw_backends is not None else {}
    hub = _check_hub(body.get("hub"), base, findings)
    if len(findings.errors) > before or backends is None or hub is None:
        return None, backend_types
    local = {k: values.pop(k) for k in ("device", "num_threads", "max_ram_mb", "pass_env") if k in values}
    values.pop("backends", None)
    values.pop("hub", None)
    training = ModelTraining(
        hub=hub,
        writeback=Writeback(**values.pop("writeback", {})),
        auto_retrain=AutoRetrain(**values.pop("auto_retrain", {})),
        local=LocalBackendSettings(**local),
        backends=backends,
        **values,
    )
    return training, backend_types


# --- model_training.hub ---------------------------------------------------------------------

_HUB_EXAMPLE = "{token_file: secrets/hf_token, organization: my-lab}"


def _hub_namespace(value: object) -> str:
    """A Hub user or organization: the namespace a run's default repository goes under."""
    name: str = text()(value)
    if not re.fullmatch(HUB_NAME, name) or "--" in name or ".." in name:
        raise Invalid(f"{show(name)} is not a Hub user or organization name; write it as it appears in its "
                      "address on huggingface.co (letters, digits, '-', '_' and '.', at most 96), e.g. my-lab")
    return name


def _check_hub(raw: object, base: Path | None, findings: Findings) -> HubSettings | None:
    """``model_training.hub``, with ``token_file`` resolved against the config's folder; None when it
    is wrong (each problem reported)."""
    if raw is None:
        return HubSettings()
    table: Mapping[str, Check] = {"token_file": text(), "organization": _hub_namespace}
    try:
        values = section(table, "model_training.hub", _HUB_EXAMPLE)(raw)
    except Invalid as bad:
        findings.errors_at("model_training.hub", bad.problems)
        return None
    token_file = None
    if "token_file" in values:
        token_file = resolve(base if base is not None else Path("."), values["token_file"])
        warn_token_file(token_file, findings)
    return HubSettings(token_file=token_file, organization=values.get("organization"))
