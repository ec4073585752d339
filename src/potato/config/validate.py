"""The one place a project config is checked and turned into :class:`Config`.

Pure: takes the already-parsed YAML value and the config's path (only to resolve relative paths),
reads no file and never raises, whatever the YAML held. Every problem is reported at once, each
message starting with its dotted key path and ending with the fix, so one ``potato validate`` run
shows the whole list. Item data files are not opened here; the item loader reports those.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from potato import defaults
from potato.config import _page as page_keys
from potato.config._active import as_auto_retrain, check_active_learning
from potato.config._schemes import check_schemes, training_types
from potato.config._backends import check_backends, declared_types, env_names
from potato.errors import did_you_mean
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
    misspelt,
    number,
    section,
    show,
    text,
    text_list,
)
from potato.config.acknowledge import apply_acknowledge
from potato.config.upstream import TOP_LEVEL as UPSTREAM_KEYS
from potato.config.upstream import unsupported_message
from potato.config.schema import (
    HUB_NAME,
    ActiveLearning,
    AutoRetrain,
    Config,
    HubSettings,
    ItemProperties,
    LocalBackendSettings,
    ModelTraining,
    Report,
    Scheme,
    SchemeType,
    Writeback,
)

TOP_LEVEL_KEYS = (
    "annotation_task_name",
    "task_dir",
    "data_files",
    "item_properties",
    "output_annotation_dir",
    "admin_api_key",
    "annotation_schemes",
    "debug",
    "trust_proxy",
    "model_training",
    "active_learning",
    "validation",
    *page_keys.KEYS,
)
"""Top-level keys Potato reads; others only warn, as released configs carry many more."""

_REQUIRED = {
    "annotation_task_name": 'missing; name the project, e.g. annotation_task_name: "Review Sentiment"',
    "data_files": 'missing; list the item files (json, jsonl or csv), e.g. data_files: ["data/reviews.json"]',
    "annotation_schemes": (
        "missing; add at least one scheme, e.g. annotation_schemes: [{annotation_type: radio, "
        "name: sentiment, labels: [positive, negative]}]"
    ),
}

_DEVICE_HELP = "valid devices: auto, cpu, mps, cuda, cuda:N (e.g. cuda:1)"


def validate(raw: object, config_path: Path, file_mode: int | None = None) -> Report:
    """Check ``raw`` (what ``yaml.safe_load`` returned) and build the typed config if it is valid;
    ``file_mode`` is the config file's ``st_mode`` where it was read from a file."""
    path = Path(config_path)
    findings = Findings()
    if not isinstance(raw, dict):
        what = "the file is empty" if raw is None else f"got {show(raw)}"
        findings.error(
            "",
            f"top level: a config must be a mapping of keys to values (annotation_task_name: ..., "
            f"data_files: [...], annotation_schemes: [...]); {what}",
        )
        return Report(None, findings.errors, findings.warnings, [], source=str(config_path))
    config, backend_names = _check_config(raw, path, findings, file_mode)
    if config is not None:
        _warn_open_folder(config.output_annotation_dir, findings)
    entries = _acknowledge_entries(raw.get("validation"), findings)
    remaining, acknowledged = apply_acknowledge(entries, findings.warnings, backend_names)
    return Report(
        config if not findings.errors else None,
        findings.errors,
        remaining,
        acknowledged,
        source=str(config_path),
    )


def _check_config(raw: Mapping[Any, object], path: Path, findings: Findings,
                  file_mode: int | None = None) -> tuple[Config | None, list[str]]:
    """All top-level checks; the config (None if anything failed) and the declared backend names."""
    _warn_unknown_top_level(raw, findings)
    simple = {k: v for k, v in raw.items() if k in _TOP_TABLE}
    values, problems = check_keys(simple, _TOP_TABLE, "the config")
    for key, fix in _REQUIRED.items():
        if raw.get(key) is None:
            problems.append((f".{key}", fix))
    findings.errors_at("", problems)
    if raw.get("admin_api_key") is None:
        findings.warn(
            "admin_api_key",
            "not set; admin routes are closed without it. Set admin_api_key to a long random secret to use "
            "the admin pages and the training API",
        )
    elif isinstance(values.get("admin_api_key"), str):
        _warn_weak_key(values["admin_api_key"], findings)
        if file_mode is not None and file_mode & 0o044:
            findings.warn("admin_api_key", f"{path.name} holds the admin key, and other accounts on this machine can "
                                           f"read it (mode {file_mode & 0o777:04o}); make the file yours alone: "
                                           f"chmod 600 {path}")
    page = page_keys.check(raw, findings)
    schemes = check_schemes(raw.get("annotation_schemes"), findings,
                            go_to_item=page is None or not page["page"].jumping_to_id_disabled)
    scheme_types = training_types(raw.get("annotation_schemes"))
    item_properties = _check_item_properties(raw.get("item_properties"), findings)
    training, backend_types = _check_model_training(raw.get("model_training"), scheme_types, findings, path.parent)
    stated = None if raw.get("model_training") is None else training is not None and training.enabled
    active = check_active_learning(raw.get("active_learning"), scheme_types, stated, findings)
    if active is not None and active.enabled and training is not None:
        training = _with_active_learning(training, active, backend_types, findings)
    if values.get("debug") is True:
        _warn_debug(backend_types, findings)
    names = list(backend_types)
    if schemes is not None and item_properties is not None and page is not None:
        page = _span_target(raw.get("annotation_schemes"), schemes, item_properties, page, findings)
    if findings.errors or schemes is None or item_properties is None or training is None or page is None \
            or active is None:
        return None, names
    task_dir = _resolve(path.parent, values.get("task_dir", "."))
    config = Config(
        path=Path(os.path.abspath(path)),
        annotation_task_name=values["annotation_task_name"],
        task_dir=task_dir,
        data_files=tuple(_resolve(task_dir, f) for f in values["data_files"]),
        output_annotation_dir=_resolve(task_dir, values.get("output_annotation_dir", "annotation_output")),
        annotation_schemes=schemes,
        admin_api_key=values.get("admin_api_key"),
        item_properties=item_properties,
        debug=values.get("debug", False),
        trust_proxy=values.get("trust_proxy", False),
        model_training=training,
        acknowledge=tuple(_acknowledge_list(raw.get("validation"))),
        active_learning=active,
        **page,
    )
    return config, names


def _with_active_learning(training: ModelTraining, active: ActiveLearning, backend_types: Mapping[str, str | None],
                          findings: Findings) -> ModelTraining | None:
    """Active learning's runs are automatic runs: one every ``update_frequency`` labels, on its backend
    (training is on: an upstream config has no model_training, and its active learning trains)."""
    if training.auto_retrain.enabled:
        findings.error("model_training.auto_retrain", "active_learning starts its own runs every update_frequency "
                                                      "labels; remove auto_retrain, or turn active_learning off")
        return None
    if active.backend is not None and active.backend != defaults.LOCAL_BACKEND and active.backend not in backend_types:
        findings.error("active_learning.backend", f"{show(active.backend)} names no backend; backends: "
                                                  f"{', '.join([defaults.LOCAL_BACKEND, *backend_types])}")
        return None
    return replace(training, enabled=True, auto_retrain=as_auto_retrain(active, training.backend))


def _resolve(base: Path, value: str) -> Path:
    """An absolute path; ``~/`` means the home folder. No file system access beyond the cwd."""
    if value == "~" or value.startswith("~/"):
        value = os.path.expanduser(value)
    return Path(os.path.abspath(os.path.join(str(base), value)))


def _data_files(value: object) -> tuple[str, ...]:
    """``data_files``: a list of files; one file as a plain string is accepted too."""
    if isinstance(value, str):
        return (text()(value),)
    if isinstance(value, list):  # upstream's {path, encoding} entries: UTF-8 ones are plain paths here
        problems = []
        for i, entry in enumerate(value):
            if isinstance(entry, dict) and "path" in entry:
                encoding = str(entry.get("encoding", "utf-8")).lower().replace("_", "-")
                if encoding in ("utf-8", "utf8", "utf-8-sig"):
                    value = [*value[:i], entry["path"], *value[i + 1:]]
                else:
                    problems.append((f"[{i}]", f"is read as {entry.get('encoding')}, and this server reads items as "
                                               "UTF-8; convert the file (e.g. iconv -f " + str(entry.get("encoding")) +
                                               " -t utf-8) and list its path"))
        if problems:
            raise Invalid(problems=problems)
    files: tuple[str, ...] = text_list('["data/reviews.json"]')(value)
    if not files:
        raise Invalid('is empty; list at least one item file, e.g. data_files: ["data/reviews.json"]')
    return files


def _admin_key(value: object) -> str:
    key: str = text(allow_empty=True)(value)
    if not key.strip():
        raise Invalid("is empty, which would be a key anyone can send; set a long random secret or remove the key")
    return key


_TOP_TABLE: Mapping[str, Check] = {
    "annotation_task_name": text(),
    "task_dir": text(),
    "data_files": _data_files,
    "output_annotation_dir": text(),
    "admin_api_key": _admin_key,
    "debug": boolean,
    "trust_proxy": boolean,
}


WEAK_KEYS = frozenset({"change-me", "changeme", "change_me", "admin", "password", "secret", "potato", "test",
                       "example", "letmein", "12345678", "123456", "qwerty", "your-key-here", "key"})
"""Keys from examples and habits: anyone guesses them first."""
MIN_KEY_LENGTH = 16


def _warn_weak_key(key: str, findings: Findings) -> None:
    weak = key.strip().lower() in WEAK_KEYS
    if weak or len(key) < MIN_KEY_LENGTH:
        why = "is an example key that anyone would try first" if weak else (
            f"has only {len(key)} characters; a guessable key opens the admin pages and the training API")
        findings.warn("admin_api_key", f"{why}. Set a long random secret, e.g. the output of "
                                       "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'")


def _warn_unknown_top_level(raw: Mapping[Any, object], findings: Findings) -> None:
    """Upstream Potato's features by name (an error where they change access, storage or what annotators
    see). Any other unknown key a slip of the keyboard from a known one (``model_trainng``) is an error:
    as a warning, the config "was valid" and the server started without the section. Keys further off
    only warn, as upstream configs carry many keys this server does not read."""
    for key in raw:
        if isinstance(key, str) and key in UPSTREAM_KEYS:
            feature = UPSTREAM_KEYS[key]
            (findings.error if feature.error else findings.warn)(key, unsupported_message(key, feature.what))
        elif key not in TOP_LEVEL_KEYS:
            slip = misspelt(key, TOP_LEVEL_KEYS) if isinstance(key, str) else None
            if slip is not None:
                findings.error(key_text(key), f"not a known key; did you mean '{slip}'? As written, it is ignored: "
                                              f"correct the spelling")
                continue
            near = did_you_mean(key, TOP_LEVEL_KEYS) if isinstance(key, str) else ""
            findings.warn(key_text(key), f"unknown key, ignored{near}")


def _warn_debug(backend_types: Mapping[str, str | None], findings: Findings) -> None:
    """Requests through the ssh socket arrive as loopback, and debug gives loopback admin access.

    One warning per backend, so an acknowledgement that names a backend covers that backend only.
    """
    for name, btype in backend_types.items():
        if btype in ("ssh", "slurm"):
            findings.warn(
                "debug",
                f"true while model_training.backends.{name} is a{'n' if btype == 'ssh' else ''} {btype} backend. "
                "Requests through its ssh socket reach the server as loopback requests, and a server with "
                "debug: true gives loopback requests admin access, so anyone using that account on the "
                "remote host gets admin access while a run goes on. Turn debug off while training over ssh",
                name,
            )


# --- item_properties and annotation_schemes -------------------------------------------------

def _span_target(raw_schemes: object, schemes: tuple[Scheme, ...], items: ItemProperties, page: dict[str, Any],
                 findings: Findings) -> dict[str, Any] | None:
    """Spans are marked on the item's own text (``item_properties.text_key``): a scheme's
    ``target_field`` or a field's ``span_target`` may name that field and no other, and where
    ``instance_display`` lists fields, that one must be among them so the annotator sees what they mark."""
    text_key = items.text_key
    ok = True
    for index, raw in enumerate(raw_schemes if isinstance(raw_schemes, list) else []):
        target = raw.get("target_field") if isinstance(raw, dict) else None
        if target is not None and target != text_key:
            findings.error(f"annotation_schemes[{index}].target_field", unsupported_message(
                f"target_field: {target}", f"marking spans of a field other than the item's text ({text_key}, "
                "from item_properties.text_key)"))
            ok = False
    fields = page["page"].display_fields
    for index, field in enumerate(fields):
        if field.span_target and field.key != text_key:
            findings.error(f"instance_display.fields[{index}].span_target", unsupported_message(
                "span_target", f"marking spans of a field other than the item's text ({text_key}, from "
                "item_properties.text_key)"))
            ok = False
    spans = [s.name for s in schemes if s.annotation_type is SchemeType.SPAN]
    if spans and fields and text_key not in [f.key for f in fields]:
        findings.error("instance_display.fields", f"shows no field {text_key!r}, the item's text that the span "
                       f"scheme {spans[0]!r} marks; add {{key: {text_key}, type: text, span_target: true}}")
        ok = False
    if not ok:
        return None
    if spans and fields:
        marked = tuple(replace(f, span_target=f.key == text_key) for f in fields)
        page = {**page, "page": replace(page["page"], display_fields=marked)}
    return page



_ITEM_PROPERTIES: Mapping[str, Check] = {"id_key": text(), "text_key": text()}


def _check_item_properties(raw: object, findings: Findings) -> ItemProperties | None:
    if raw is None:
        return ItemProperties()
    upstream_only = {"category_key": "assigning items to annotators by category",
                     "kwargs": "extra item fields passed to custom displays"}
    try:
        if isinstance(raw, dict):
            for key in [k for k in raw if k in upstream_only]:
                findings.error(f"item_properties.{key}", unsupported_message(key, upstream_only[key]))
            raw = {k: v for k, v in raw.items() if k not in upstream_only}
        values = section(_ITEM_PROPERTIES, "item_properties", '{id_key: "id", text_key: "text"}')(raw)
    except Invalid as bad:
        findings.errors_at("item_properties", bad.problems)
        return None
    return ItemProperties(**values)


# --- model_training ----------------------------------------------------------


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
            elif labelled_only and scheme_types[name] not in ("radio", "multiselect", "span"):
                why = (f"is a {scheme_types[name] or 'broken'} scheme, and suggestions need a scheme with labels "
                       "(radio, multiselect, likert, select or span); remove it")
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


def _check_model_training(
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


# --- validation -----------------------------------------------------------------------------


def _acknowledge_list(raw: object) -> list[object]:
    if isinstance(raw, dict) and isinstance(raw.get("acknowledge"), list):
        return list(raw["acknowledge"])
    return []


def _acknowledge_entries(raw: object, findings: Findings) -> list[object]:
    """The ``validation.acknowledge`` entries; each entry itself is judged by :func:`apply_acknowledge`."""
    if raw is None:
        return []
    example = '{acknowledge: ["model_training.backends.cluster.time is"]}'
    table = {"acknowledge": _entry_list}
    try:
        section(table, "validation", example)(raw)
    except Invalid as bad:
        findings.errors_at("validation", bad.problems)
    return _acknowledge_list(raw)


def _entry_list(value: object) -> object:
    if not isinstance(value, list):
        raise Invalid(
            'must be a list of warning texts to acknowledge, e.g. acknowledge: ["model_training.backends.cluster.time '
            f'is"], got {show(value)}'
        )
    return value


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
        token_file = _resolve(base if base is not None else Path("."), values["token_file"])
        _warn_token_file(token_file, findings)
    return HubSettings(token_file=token_file, organization=values.get("organization"))


def _warn_open_folder(folder: Path, findings: Findings) -> None:
    """An output folder made beforehand (a volume, a ``mkdir``) that other accounts can open. Potato
    makes what it writes there its user's alone, but the folder's listing and anything put there by
    hand stay open to them. Only the folder's mode is looked at; a missing folder is made 0700."""
    try:
        mode = os.stat(folder).st_mode
    except OSError:
        return
    if mode & 0o077:
        findings.warn("output_annotation_dir", f"other accounts on this machine can open {folder} (mode "
                                               f"{mode & 0o777:04o}); make it yours alone: chmod 700 {shlex.quote(str(folder))}")


def _warn_token_file(path: Path, findings: Findings) -> None:
    """A token file that other accounts can read, or that is not there: each a warning, as for the
    config that holds the admin key. The one look beyond the config file itself: at the file's mode,
    never at what it holds."""
    where = "model_training.hub.token_file"
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        findings.warn(where, f"{path} cannot be read ({exc.strerror or exc}); pushing a model to the Hugging Face "
                             "Hub fails until it holds a token with write access (from "
                             "https://huggingface.co/settings/tokens); chmod 600 it")
        return
    if mode & 0o044:
        findings.warn(where, f"{path} holds a Hugging Face token, and other accounts on this machine can read it "
                             f"(mode {mode & 0o777:04o}); make the file yours alone: chmod 600 {path}")
