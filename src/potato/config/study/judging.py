"""``judge_calibration``: upstream's LLM judges, each asked ``k_samples`` times per item, calibrated
against a sample the annotators label blind.

The judges are OpenAI-compatible servers named the way ``ai_support`` names one (upstream's
``models`` entries are flat: ``endpoint_type``, ``model``, ``base_url``, ``api_key``, ...), so the
same check serves them: a key only from the environment or a file, an address that is an address.
Single-choice questions only (radio, select, likert): a vote over k answers is plain there.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    Problem,
    anything,
    boolean,
    choice,
    check_keys,
    integer,
    mapping,
    number,
    section,
    show,
    subset,
    text,
    text_list,
)
from potato.config._files import resolve
from potato.config.schema import JudgeCalibration, LlmService
from potato.config.study.assist import SERVED_BY_AN_LLM, check_service
from potato.config.upstream import unsupported_message

KEYS = ("judge_calibration",)
JUDGED_TYPES = ("radio", "select", "likert")
"""Question types a judge answers here: one option each, so k answers vote."""
STRATEGIES = ("random", "stratified", "all")
GOLD = ("single", "majority")
EXAMPLE = ("{enabled: true, models: [{endpoint_type: ollama, model: llama3.2:3b, temperature: 0.7}], "
           "k_samples: 5, sampling: {strategy: stratified, sample_size: 200}}")

_KEYS: Mapping[str, Check] = {
    "enabled": boolean,
    "prompt": text(),
    "models": anything,
    "k_samples": integer(1, 50),
    "max_items": integer(1),
    "fraction": number(0, 1, open_low=True),
    "sampling": section({"strategy": choice(STRATEGIES, "sampling strategy"), "stratify_by": text(),
                         "sample_size": integer(1), "seed": integer()}, "judge_calibration.sampling",
                        "{strategy: stratified, sample_size: 200, seed: 42}"),
    "human": section({"num_raters": integer(1, 1000), "gold": choice(GOLD, "gold rule")}, "judge_calibration.human",
                     "{num_raters: 1, gold: single}"),
    "schemas": text_list("[sentiment]", unique=True),
    "calibration": section({"n_bins": integer(2, 100)}, "judge_calibration.calibration", "{n_bins: 10}"),
    "output": section({"dir": text(), "files": section({"labels": text(), "report_json": text(),
                                                        "report_html": text()},
                                                       "judge_calibration.output.files",
                                                       "{labels: llm_labels.jsonl, report_json: report.json}")},
                      "judge_calibration.output", "{dir: judge_calibration_output}"),
    "state_dir": text(),
}

JUDGE_DEFAULTS = {"temperature": 0.1, "max_tokens": 200, "timeout": 60}
"""Upstream's per-judge defaults, but for max_tokens: a label and one sentence of reasons fit in 200
(upstream's 1000 leaves room for a thinking model's preamble; set it where a judge thinks)."""


def check_judge_calibration(raw: object, scheme_types: Mapping[str, str | None], task_dir: Path, config_dir: Path,
                            findings: Findings) -> JudgeCalibration | None | bool:
    """The judges; None when off, False when something is wrong (reported)."""
    if raw is None:
        return None
    try:
        values, problems = check_keys(mapping(raw, EXAMPLE), _KEYS, "judge_calibration")
    except Invalid as bad:
        findings.errors_at("judge_calibration", bad.problems)
        return False
    if not values.get("enabled", False):
        if problems:
            findings.errors_at("judge_calibration", problems)
            return False
        return None
    judges = _judges(values.get("models"), config_dir, problems, findings)
    schemas = _schemas(values.get("schemas", ()), scheme_types, problems)
    if "state_dir" in values:
        findings.warn("judge_calibration.state_dir", "is not used: the judges' answers and the sample are kept in the "
                                                     "project's database; it is ignored")
    k = values.get("k_samples", 5)
    for index, judge in enumerate(judges or ()):
        if k > 1 and judge.temperature == 0:
            findings.warn(f"judge_calibration.models[{index}].temperature",
                          f"is 0 with k_samples: {k}, so the {k} answers never differ and every confidence is 1.0; "
                          "set a temperature above 0 (e.g. 0.7) for a calibration that means something")
    findings.errors_at("judge_calibration", problems)
    if problems or not judges:
        return False
    sampling: dict[str, Any] = values.get("sampling") or {}
    human: dict[str, Any] = values.get("human") or {}
    output: dict[str, Any] = values.get("output") or {}
    files: dict[str, Any] = output.get("files") or {}
    return JudgeCalibration(
        judges=tuple(judges), prompt=values.get("prompt", ""), k_samples=k,
        max_items=values.get("max_items"), fraction=values.get("fraction"),
        strategy=sampling.get("strategy", "stratified"), stratify_by=sampling.get("stratify_by"),
        sample_size=sampling.get("sample_size", 200), seed=sampling.get("seed", 42),
        num_raters=human.get("num_raters", 1), gold=human.get("gold", "single"), schemas=schemas,
        ordinal=tuple(name for name in schemas if scheme_types.get(name) == "likert"),
        n_bins=(values.get("calibration") or {}).get("n_bins", 10),
        out_dir=resolve(task_dir, output.get("dir", "judge_calibration_output")),
        labels_file=_file_name(files, "labels", "llm_labels.jsonl", findings),
        report_json=_file_name(files, "report_json", "report.json", findings),
        report_html=_file_name(files, "report_html", "report.html", findings))


def _judges(raw: object, config_dir: Path, problems: list[Problem], findings: Findings) -> list[LlmService] | None:
    """Each ``models`` entry as the server it names, checked as ``ai_support`` checks its own."""
    if not isinstance(raw, list) or not raw:
        problems.append((".models", f"missing; name at least one judge, e.g. models: [{{endpoint_type: ollama, model: "
                                    f"llama3.2:3b, temperature: 0.7}}]{'' if raw is None else f', got {show(raw)}'}"))
        return None
    judges: list[LlmService] = []
    for index, entry in enumerate(raw):
        at = f".models[{index}]"
        if not isinstance(entry, dict):
            problems.append((at, f"must be a mapping such as {{endpoint_type: ollama, model: llama3.2:3b}}, got "
                                 f"{show(entry)}"))
            continue
        kind = entry.get("endpoint_type")
        entry = subset(entry, lambda key: key != "endpoint_type")  # a copy that still notes what is read
        if kind not in SERVED_BY_AN_LLM:
            problems.append((at + ".endpoint_type", "missing; name the judge's server: endpoint_type: ollama, vllm, "
                                                    "openai or openai_compatible (with base_url)" if kind is None else
                             unsupported_message(f"endpoint_type: {kind}", f"a judge served by {show(kind)}; use "
                                                 "openai_compatible with base_url for any server that speaks "
                                                 "OpenAI's chat API")))
            continue
        found: list[Problem] = []
        service = check_service(str(kind), entry, None, None, config_dir, found, findings,
                                at=f"judge_calibration.models[{index}]", inner="")
        problems.extend((at + where, detail) for where, detail in found)
        if service is not None:
            defaults = {key: value for key, value in JUDGE_DEFAULTS.items() if key not in entry}
            judges.append(_with(service, defaults))
    names = [judge.model for judge in judges]
    for index, judge in enumerate(judges):
        if names.index(judge.model) != index:
            problems.append((f".models[{index}].model", f"{show(judge.model)} is named twice; each judge is reported "
                                                        "by its model's name, so name each model once"))
    return judges


def _with(service: LlmService, defaults: Mapping[str, Any]) -> LlmService:
    return replace(service, **defaults) if defaults else service


def _schemas(named: tuple[str, ...], scheme_types: Mapping[str, str | None], problems: list[Problem]) -> tuple[str, ...]:
    """The questions judged: those named, or every single-choice question ([] means all, as upstream)."""
    judged = tuple(name for name, kind in scheme_types.items() if kind in JUDGED_TYPES)
    for index, name in enumerate(named):
        kind = scheme_types.get(name, "")
        if name not in scheme_types:
            problems.append((f".schemas[{index}]", f"{show(name)} is not a question of this project; name one of "
                                                   f"{', '.join(judged) or 'its radio, select or likert questions'}"))
        elif kind not in JUDGED_TYPES:
            problems.append((f".schemas[{index}]", f"{show(name)} is a {kind} question, and judges are calibrated here "
                                                   "on single-choice questions (radio, select, likert) only; leave it "
                                                   "out of judge_calibration.schemas"))
    if not named and not judged:
        problems.append((".schemas", "the project has no radio, select or likert question for a judge to answer; "
                                     "add one or turn judge_calibration off"))
    return named or judged


def _file_name(files: Mapping[str, Any], key: str, default: str, findings: Findings) -> str:
    """A file name inside ``output.dir``: a path that leaves it is cut to its last part."""
    name = str(files.get(key, default))
    plain = Path(name).name
    if plain != name:
        findings.warn(f"judge_calibration.output.files.{key}", f"{show(name)} is written as {plain} in output.dir "
                                                               "(the files stay in that folder)")
    return plain or default
