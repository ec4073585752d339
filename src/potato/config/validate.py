"""The one place a project config is checked and turned into :class:`Config`.

Pure: takes the already-parsed YAML value and the config's path (only to resolve relative paths),
reads no file (but ``ai_support.ai_config_file`` and ``keyword_highlights_file``, which upstream reads
as part of its config) and
never raises, whatever the YAML held. Every problem is reported at once, each
message starting with its dotted key path and ending with the fix, so one ``potato validate`` run
shows the whole list. Item data files are not opened here; the item loader reports those.

This module is the walk over the sections and what ties them together (active learning's runs,
the acknowledged warnings); each section's own checks live in a sibling module (``_top_level``,
``_page``, ``_schemes``, ``_items``, ``_training``, ``_active``), and the few looks at file modes
in ``_files``, so that this file reads as the order in which a config is judged.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from potato import defaults
from potato.config.study import assist as assist_keys
from potato.config.study import chat as chat_keys
from potato.config.study import crowdsourcing as crowd_keys
from potato.config.study import judging as judge_keys
from potato.config import _page as page_keys
from potato.config.study import phases as phase_keys
from potato.config.training.active import as_auto_retrain, check_active_learning
from potato.config._checks import Findings, Invalid, section, show
from potato.errors import did_you_mean
from potato.display.fields import media_path
from potato.display.media import MediaMissing, media_file_problem
from potato.config._files import resolve, warn_open_folder
from potato.config._keywords import check_keywords
from potato.config._items import check_item_properties, span_target
from potato.config._turns import bind_fields, turn_ratings
from potato.config._schemes import check_schemes, scheme_types as declared_types, training_types
from potato.config._top_level import check_top_level, warn_debug
from potato.config.training.model_training import check_model_training
from potato.config.acknowledge import apply_acknowledge
from potato.config.schema import (
    ActiveLearning,
    AiSupport,
    ChatSupport,
    Config,
    DisplayField,
    JudgeCalibration,
    ModelTraining,
    Report,
)
from potato.training.job.schemes import Scheme, SchemeType


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
        warn_open_folder(config.output_annotation_dir, findings)
    entries = _acknowledge_entries(raw.get("validation"), findings)
    remaining, acknowledged = apply_acknowledge(entries, findings.warnings, backend_names)
    return Report(
        config if not findings.errors else None,
        findings.errors,
        remaining,
        acknowledged,
        source=str(config_path),
    )


def _pairs_shown(schemes: tuple[Scheme, ...], text_key: str, fields: tuple[DisplayField, ...], findings: Findings) -> None:
    """A pairwise comparison's ``items_key`` is what the page shows: the item's text (its options
    lettered A and B) or one of its fields."""
    shown = [text_key] + [f.key for f in fields]
    index = -1
    for scheme in schemes:
        index += 0 if scheme.free_response_of else 1
        if scheme.pairwise_mode and scheme.items_key not in shown:
            findings.error(f"annotation_schemes[{index}].items_key",
                           f"names {scheme.items_key!r}, which the page does not show (it shows {', '.join(shown)}); "
                           f"name the key of the item that holds the two options, e.g. items_key: {text_key}")


def _rated_known(schemes: tuple[Scheme, ...], findings: Findings) -> None:
    """A confidence rating's ``target_schema`` names another question of the page."""
    names = [s.name for s in schemes]
    index = -1
    for scheme in schemes:
        index += 0 if scheme.free_response_of else 1
        if scheme.rates and (scheme.rates not in names or scheme.rates == scheme.name):
            findings.error(f"annotation_schemes[{index}].target_schema",
                           f"names {scheme.rates!r}, which is not another scheme of this config (its schemes: "
                           f"{', '.join(names)}){did_you_mean(scheme.rates, names)}; name the question whose answer "
                           "this confidence rates")


def _links_known(schemes: tuple[Scheme, ...], findings: Findings) -> None:
    """Links between spans name a span scheme of the page as their ``span_schema``, and their link
    types' labels are that scheme's."""
    spans = {s.name: s for s in schemes if s.annotation_type is SchemeType.SPAN}
    index = -1
    for scheme in schemes:
        index += 0 if scheme.free_response_of else 1
        if scheme.link_spans is None:
            continue
        target = spans.get(scheme.link_spans)
        if target is None:
            findings.error(f"annotation_schemes[{index}].span_schema",
                           f"names {scheme.link_spans!r}, which is not a span scheme of this config (its span schemes: "
                           f"{', '.join(spans) or 'none'}); name the span scheme whose spans the links join")
            continue
        for n, kind in enumerate(scheme.link_types):
            stray = [label for label in (*kind.sources, *kind.targets) if label not in target.labels]
            if stray:
                findings.error(f"annotation_schemes[{index}].link_types[{n}]",
                               f"names the label {stray[0]!r}, which {target.name!r} does not have (its labels: "
                               f"{', '.join(target.labels)})")


def _check_config(raw: Mapping[Any, object], path: Path, findings: Findings,
                  file_mode: int | None = None) -> tuple[Config | None, list[str]]:
    """All top-level checks; the config (None if anything failed) and the declared backend names."""
    values = check_top_level(raw, path, findings, file_mode)
    page = _page_and_platform(raw, resolve(path.parent, values.get("task_dir", ".")), findings)
    schemes = check_schemes(raw.get("annotation_schemes"), findings,
                            go_to_item=page is None or not page["page"].jumping_to_id_disabled)
    scheme_types = training_types(raw.get("annotation_schemes"))
    item_properties = check_item_properties(raw.get("item_properties"), findings)
    training, backend_types = check_model_training(raw.get("model_training"), scheme_types, findings, path.parent)
    stated = None if raw.get("model_training") is None else training is not None and training.enabled
    active = check_active_learning(raw.get("active_learning"), scheme_types, stated, findings)
    assist = assist_keys.check_ai_support(raw.get("ai_support"), scheme_types, findings, path.parent)
    chat = chat_keys.check_chat(raw.get("chat_support"), findings, path.parent)
    task_dir = resolve(path.parent, values.get("task_dir", "."))
    judges = judge_keys.check_judge_calibration(raw.get("judge_calibration"), declared_types(raw.get("annotation_schemes")),
                                                task_dir, path.parent, findings)
    if active is not None and active.enabled and training is not None:
        training = _with_active_learning(training, active, backend_types, findings)
    if assist is not None and assist.enabled and assist.source == assist_keys.RUNS and training is not None:
        training, assist = _with_ai_support(training, assist, stated, scheme_types, findings)
    if values.get("debug") is True:
        warn_debug(backend_types, findings)
    names = list(backend_types)
    if schemes is not None and item_properties is not None and page is not None:
        marked = span_target(raw.get("annotation_schemes"), schemes, item_properties, page, findings)
        schemes, page = marked if marked is not None else (schemes, None)
    if schemes is not None and page is not None and any(s.turns for s in schemes):
        schemes = bind_fields(schemes, page["page"].display_fields, findings)
    if schemes is not None and page is not None:
        schemes = turn_ratings(schemes, page["page"].display_fields, findings)
    if schemes is not None and page is not None and item_properties is not None:
        _pairs_shown(schemes, item_properties.text_key, page["page"].display_fields, findings)
    if schemes is not None:
        _rated_known(schemes, findings)
        _links_known(schemes, findings)
    phases_ok, phases = phase_keys.check(raw, schemes, task_dir, findings)
    codebook = _codebook_mode(raw.get("codebook_mode"), schemes or (), page, findings)
    if page is not None:
        crowd_keys.warn_unpaid_outcomes(page["crowdsourcing"], phases, findings)
    for index, scheme in enumerate(schemes or ()):
        if scheme.right_labels:
            findings.error(f"annotation_schemes[{index}].label_requirement", "required_label applies to the questions "
                                                                             "of a study page (phases), not to items; "
                                                                             "use required: true")
    if findings.errors or schemes is None or item_properties is None or training is None or page is None \
            or active is None or assist is None or chat is False or judges is False or not phases_ok:
        return None, names
    config = Config(
        path=Path(os.path.abspath(path)),
        annotation_task_name=values["annotation_task_name"],
        task_dir=task_dir,
        data_files=tuple(resolve(task_dir, f) for f in values["data_files"]),
        output_annotation_dir=resolve(task_dir, values.get("output_annotation_dir", "annotation_output")),
        annotation_schemes=schemes,
        admin_api_key=values.get("admin_api_key"),
        item_properties=item_properties,
        debug=values.get("debug", False),
        trust_proxy=values.get("trust_proxy", False),
        model_training=training,
        acknowledge=tuple(_acknowledge_list(raw.get("validation"))),
        active_learning=active,
        ai_support=assist,
        chat_support=chat if isinstance(chat, ChatSupport) else None,
        judge_calibration=judges if isinstance(judges, JudgeCalibration) else None,
        phases=phases,
        codebook_mode=codebook,
        export_phase_data=raw.get("export_include_phase_data") is True,
        **page,
    )
    return config, names


def _page_and_platform(raw: Mapping[Any, object], task_dir: Path, findings: Findings) -> dict[str, Any] | None:
    """The page's values with ``crowdsourcing``: a platform's participants sign in by its link's id."""
    page = page_keys.check(raw, findings)
    if page is None:
        return None
    login = raw.get("login")
    ok, crowd = crowd_keys.check(raw, login if isinstance(login, dict) else {}, task_dir, findings)
    if not ok:
        return None
    if crowd is not None:
        if page["access"].require_password:
            findings.error("require_password", "a crowdsourcing platform signs participants in by its link, which "
                                               "cannot carry a password; remove require_password")
            return None
        page["access"] = replace(page["access"], url_argument=crowd.id_param)
    media = _media_directory(raw.get("media_directory"), task_dir, findings)
    marked = check_keywords(raw, task_dir, findings)
    if media is False or marked is None:
        return None
    if not _codebook_file(page["page"].codebook_url, media if isinstance(media, Path) else None, findings):
        return None
    return {**page, "crowdsourcing": crowd, "media_directory": media, "keywords": marked[0],
            "keyword_settings": marked[1]}


def _codebook_mode(value: object, schemes: Sequence[Scheme], page: Mapping[str, Any] | None,
                   findings: Findings) -> str | None:
    """``fixed`` or ``extensible`` where a scheme says ``codebook: true`` (upstream's default is fixed),
    else None. A crowdsourcing study's codebook stays fixed, as upstream locks it: paid participants
    do not reshape a shared codebook."""
    if value is not None and value not in ("fixed", "extensible"):
        if value == "open":
            findings.error("codebook_mode", "open lets annotators rename, move and delete codes, which this server does "
                                            "not support; use fixed (a tray of the codes) or extensible (annotators "
                                            "may add codes)")
        else:
            findings.error("codebook_mode", f"must be fixed or extensible, got {show(value)}")
        return None
    if not any(s.codebook for s in schemes):
        if value is not None:
            findings.warn("codebook_mode", "no annotation scheme has codebook: true, so there is no codebook; it is "
                                           "ignored")
        return None
    if value == "extensible" and page is not None and page.get("crowdsourcing") is not None:
        findings.warn("codebook_mode", "is extensible, but a crowdsourcing study's codebook stays fixed (paid "
                                       "participants do not add codes to a shared codebook)")
        return "fixed"
    return str(value or "fixed")


def _codebook_file(url: str | None, media: Path | None, findings: Findings) -> bool:
    """A codebook named as a file of media_directory (``/media/<file>``) is there and may be handed out."""
    if not url or not url.startswith(page_keys.MEDIA_PREFIX):
        return True
    name = media_path(url[len(page_keys.MEDIA_PREFIX):])
    if media is None or name is None:
        findings.error("annotation_codebook_url", f"{url} names a file of media_directory, which "
                       + ("this config does not set; set media_directory to the folder that holds it" if media is None
                          else "a path cannot leave; name a file inside it"))
        return False
    problem = media_file_problem(media, name, "codebook")
    if isinstance(problem, MediaMissing):
        findings.error("annotation_codebook_url", f"{url}: there is no {name!r} in media_directory {media}; put the "
                                                  "codebook there, or fix the address")
        return False
    if problem is not None:
        findings.error("annotation_codebook_url", f"{url}: {name!r} {problem.why}")
        return False
    return True


def _media_directory(value: object, task_dir: Path, findings: Findings) -> Path | None | bool:
    """The folder of the image and PDF files items name (False: a problem was reported)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        findings.error("media_directory", f"must be a folder's path, got {show(value)}")
        return False
    folder = resolve(task_dir, value)
    if not folder.is_dir():
        findings.error("media_directory", f"{folder} is not a folder; make it and put the items' image and PDF files "
                                          "there, or fix the path (it is relative to task_dir)")
        return False
    return folder


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


def _with_ai_support(training: ModelTraining, assist: AiSupport, stated: bool | None,
                     scheme_types: Mapping[str, str | None],
                     findings: Findings) -> tuple[ModelTraining | None, AiSupport | None]:
    """The project's runs are the help's source: training is on, and each highlighted scheme's
    predictions are written back with their probabilities. An upstream config has no model_training:
    training turns on, writing back every item's ranking (upstream highlights items nobody labelled).
    Upstream's default (no ``schemas``) is every radio and multiselect scheme that is written back."""
    highlighting = assist.option_highlighting
    if stated is False:
        findings.error("ai_support.endpoint_type", "runs needs the project's trained models, and model_training says "
                                                   "enabled: false; set it to true")
        return None, None
    if highlighting is None:
        return replace(training, enabled=True), assist
    named = highlighting.schemas
    if stated is None:
        schemas = named or assist_keys.highlightable(scheme_types)
        wb = replace(training.writeback, schemas=tuple(dict.fromkeys((*training.writeback.schemas, *schemas))),
                     include_unlabeled=True)
        training = replace(training, enabled=True, writeback=wb)
    else:
        missing = [name for name in named if name not in training.writeback.schemas]
        if missing:
            one = len(missing) == 1
            findings.error("ai_support.option_highlighting.schemas",
                           f"{', '.join(missing)} {'is' if one else 'are'} not written back, so no run's ranking of "
                           f"{'its' if one else 'their'} options reaches the page; add {'it' if one else 'them'} to "
                           "model_training.writeback.schemas")
            return None, None
        schemas = named or assist_keys.highlightable(scheme_types, training.writeback.schemas)
        if not schemas:
            findings.error("ai_support.option_highlighting", "no radio or multiselect scheme is written back, so no "
                                                             "run's ranking reaches the page; add one to "
                                                             "model_training.writeback.schemas")
            return None, None
    return training, replace(assist, option_highlighting=replace(highlighting, schemas=schemas))


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
