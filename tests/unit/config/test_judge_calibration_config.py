"""``judge_calibration`` as upstream Potato writes it (issue 44, item 4): its judges are LLM servers
named the way ai_support names one, each key read, each mistake named with its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_upstream_configs import messages, report_of, upstream

UPSTREAM_EXAMPLE = {  # upstream's ai-assisted/judge-calibration example, as written there
    "enabled": True,
    "prompt": "You are an impartial expert annotator. Read the text and classify its\noverall sentiment as exactly "
              "one of: positive, negative, neutral.\n",
    "models": [{"endpoint_type": "ollama", "model": "llama3.2:3b", "base_url": "http://localhost:11434",
                "temperature": 0.7}],
    "k_samples": 5, "max_items": 1000,
    "sampling": {"strategy": "stratified", "stratify_by": None, "sample_size": 10, "seed": 42},
    "human": {"num_raters": 1, "gold": "single"},
    "schemas": ["sentiment"],
    "calibration": {"n_bins": 10},
    "output": {"dir": "judge_calibration_output",
               "files": {"labels": "llm_labels.jsonl", "report_json": "report.json", "report_html": "report.html"}},
    "state_dir": "judge_calibration_output/state",
}


def _report(jc: Any, **top: Any) -> Any:
    return report_of(upstream(judge_calibration=jc, **top))


def test_upstreams_example_is_read_key_by_key() -> None:
    report = _report(UPSTREAM_EXAMPLE)
    assert report.errors == []
    assert messages(report.warnings)[-1] == ("judge_calibration.state_dir: is not used: the judges' answers and the "
                                             "sample are kept in the project's database; it is ignored")
    jc = report.config.judge_calibration
    [judge] = jc.judges
    assert (judge.kind, judge.base_url, judge.model, judge.temperature) == (
        "ollama", "http://localhost:11434/v1", "llama3.2:3b", 0.7)
    assert (judge.max_tokens, judge.timeout) == (200, 60)  # a judge's defaults, not the hint's
    assert (jc.k_samples, jc.max_items, jc.strategy, jc.sample_size, jc.seed) == (5, 1000, "stratified", 10, 42)
    assert (jc.num_raters, jc.gold, jc.schemas, jc.n_bins) == (1, "single", ("sentiment",), 10)
    assert jc.out_dir == report.config.task_dir / "judge_calibration_output"
    assert (jc.labels_file, jc.report_json, jc.report_html) == ("llm_labels.jsonl", "report.json", "report.html")
    assert jc.prompt.startswith("You are an impartial expert annotator.")


def test_off_or_absent_is_nothing() -> None:
    assert report_of(upstream()).config.judge_calibration is None
    assert _report({"enabled": False, "models": "whatever"}).config.judge_calibration is None


def test_every_single_choice_question_is_judged_when_none_is_named() -> None:
    jc = _report({"enabled": True, "models": [{"endpoint_type": "vllm", "model": "m"}]}).config.judge_calibration
    assert jc.schemas == ("sentiment",) and jc.judges[0].base_url == "http://localhost:8000/v1"


@pytest.mark.parametrize(("jc", "expected"), [
    ({"enabled": True}, "judge_calibration.models: missing; name at least one judge, e.g. models: [{endpoint_type: "
                        "ollama, model: llama3.2:3b, temperature: 0.7}]"),
    ({"enabled": True, "models": [{"model": "m"}]},
     "judge_calibration.models[0].endpoint_type: missing; name the judge's server: endpoint_type: ollama, vllm, openai "
     "or openai_compatible (with base_url)"),
    ({"enabled": True, "models": [{"endpoint_type": "ollama"}]},
     "judge_calibration.models[0].model: missing; name the model the server at ollama serves, e.g. model: qwen3:0.6b"),
    ({"enabled": True, "models": [{"endpoint_type": "openai", "model": "gpt-4o-mini", "api_key": "sk-123"}]},
     "judge_calibration.models[0].api_key: holds the key itself, and configs get shared and committed; put it in an "
     "environment variable and write api_key: ${OPENAI_API_KEY}, or in a file only the server's account reads and "
     "write api_key_file: /path/to/key"),
    ({"enabled": True, "models": [{"endpoint_type": "ollama", "model": "a"}, {"endpoint_type": "vllm", "model": "a"}]},
     "judge_calibration.models[1].model: 'a' is named twice; each judge is reported by its model's name, so name "
     "each model once"),
    ({"enabled": True, "models": [{"endpoint_type": "ollama", "model": "m"}], "schemas": ["topic"]},
     "judge_calibration.schemas[0]: 'topic' is not a question of this project; name one of sentiment"),
    ({"enabled": True, "models": [{"endpoint_type": "ollama", "model": "m"}], "sampling": {"strategy": "best"}},
     "judge_calibration.sampling.strategy: 'best' is not a valid sampling strategy; valid choices: random, "
     "stratified, all"),
    ({"enabled": True, "models": [{"endpoint_type": "ollama", "model": "m"}], "human": {"gold": "expert"}},
     "judge_calibration.human.gold: 'expert' is not a valid gold rule; valid choices: single, majority"),
])
def test_mistakes_are_named_with_their_fix(jc: Any, expected: str) -> None:
    report = _report(jc)
    assert messages(report.errors) == [expected] and report.config is None


def test_a_question_a_vote_cannot_settle_is_refused_by_name(tmp_path: Path) -> None:
    schemes = [{"annotation_type": "multiselect", "name": "topics", "description": "Topics", "labels": ["a", "b"]}]
    errors = messages(_report({"enabled": True, "models": [{"endpoint_type": "ollama", "model": "m"}],
                               "schemas": ["topics"]}, annotation_schemes=schemes).errors)
    assert errors == ["judge_calibration.schemas[0]: 'topics' is a multiselect question, and judges are calibrated "
                      "here on single-choice questions (radio, select, likert) only; leave it out of "
                      "judge_calibration.schemas"]
    assert messages(_report({"enabled": True, "models": [{"endpoint_type": "ollama", "model": "m"}]},
                            annotation_schemes=schemes).errors) == [
        "judge_calibration.schemas: the project has no radio, select or likert question for a judge to answer; add "
        "one or turn judge_calibration off"]


def test_a_likert_question_is_judged_as_a_scale() -> None:
    schemes = [{"annotation_type": "likert", "name": "quality", "description": "How good?", "size": 5,
                "min_label": "bad", "max_label": "good"}]
    jc = _report({"enabled": True, "models": [{"endpoint_type": "ollama", "model": "m"}]},
                 annotation_schemes=schemes).config.judge_calibration
    assert jc.schemas == ("quality",) and jc.ordinal == ("quality",)


def test_temperature_zero_with_several_answers_warns_that_confidence_means_nothing() -> None:
    report = _report({"enabled": True, "k_samples": 3, "models": [{"endpoint_type": "ollama", "model": "m",
                                                                   "temperature": 0}]})
    assert report.errors == []
    assert ("judge_calibration.models[0].temperature: is 0 with k_samples: 3, so the 3 answers never differ and every "
            "confidence is 1.0; set a temperature above 0 (e.g. 0.7) for a calibration that means something"
            ) in messages(report.warnings)


def test_an_output_file_name_cannot_leave_the_output_folder() -> None:
    report = _report({"enabled": True, "models": [{"endpoint_type": "ollama", "model": "m"}],
                      "output": {"files": {"report_html": "../../etc/report.html"}}})
    assert report.config.judge_calibration.report_html == "report.html"
    assert ("judge_calibration.output.files.report_html: '../../etc/report.html' is written as report.html in "
            "output.dir (the files stay in that folder)") in messages(report.warnings)
