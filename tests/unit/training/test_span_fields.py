"""Issue 36: spans on several fields of an item (a premise and a hypothesis), checked, trained and
predicted by field.

A span names its field (none: the item's own text); the worker trains each field's text as a text
of its own and puts the predicted spans back in their field, so the holdout score counts a span in
the wrong field as wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from potato.training.worker import spanfields
from potato.training.job.spec import JobItem, parse_job, read_items
from potato.training.job.labels import Example
from potato.training.worker.predictions import check_prediction
from potato.training.job.schemes import Scheme, SchemeType
from potato.training.job.spans import BadSpan, ScoredSpan, Span, check_spans
from potato.training.trainers.base import Prediction
from potato.training.worker.program import run_job

from tests.harness.jobdirs import job_json, read_jsonl, read_result, write_bundle

TEXTS = {"": "Ada flew to Oslo.", "hypothesis": "Oslo is where Ada went."}
PAIR = Scheme(SchemeType.SPAN, "entities", labels=("PER", "LOC"), span_fields=("", "hypothesis"), text_key="premise")
ENTITIES = {"name": "entities", "annotation_type": "span", "labels": ["PER", "LOC"], "fields": ["", "hypothesis"]}


# --- what a span on a field must be -----------------------------------------------------------------

def test_a_span_names_its_field_and_counts_in_that_fields_text() -> None:
    spans = check_spans(TEXTS, [{"start": 0, "end": 4, "label": "LOC", "field": "hypothesis"},
                                {"start": 0, "end": 3, "label": "PER"},
                                {"start": 12, "end": 16, "label": "LOC", "field": "premise"}], ("PER", "LOC"),
                        main_name="premise")
    assert spans == [Span(0, 3, "PER"), Span(12, 16, "LOC"), Span(0, 4, "LOC", "hypothesis")]
    assert [s.to_json(TEXTS[s.field]) for s in spans][2] == {"start": 0, "end": 4, "label": "LOC", "text": "Oslo",
                                                             "field": "hypothesis"}
    # The same stretch in two fields is two spans; an overlap is one only within a field.
    assert len(check_spans(TEXTS, [{"start": 0, "end": 3, "label": "PER"},
                                   {"start": 0, "end": 3, "label": "PER", "field": "hypothesis"}], ("PER",))) == 2
    with pytest.raises(BadSpan, match=r"the spans LOC 0-7 in hypothesis \('Oslo is'\) and PER 0-4 in hypothesis \('Oslo'\) overlap"):
        check_spans(TEXTS, [{"start": 0, "end": 4, "label": "PER", "field": "hypothesis"},
                            {"start": 0, "end": 7, "label": "LOC", "field": "hypothesis"}], ("PER", "LOC"))


@pytest.mark.parametrize(("span", "message"), [
    ({"start": 0, "end": 3, "label": "PER", "field": "title"},
     "span 1: field 'title' is not one this scheme marks spans on: premise, hypothesis"),
    ({"start": 0, "end": 3, "label": "PER", "field": ["hypothesis"]},
     "span 1: field ['hypothesis'] is not one this scheme marks spans on: premise, hypothesis"),
    ({"start": 14, "end": 30, "label": "PER", "field": "hypothesis"},
     "span 1 (field hypothesis): 14-30 is not a stretch of the field's text, which has 23 characters"),
    ({"start": 0, "end": 4, "label": "LOC", "field": "hypothesis", "text": "Ada "},
     "span 1 (field hypothesis): the text at 0-4 is 'Oslo', not 'Ada '"),
])
def test_a_span_off_its_field_is_refused_naming_the_field(span: dict[str, Any], message: str) -> None:
    with pytest.raises(BadSpan) as bad:
        PAIR.check_spans([span], TEXTS)
    assert str(bad.value).startswith(message)


def test_a_scheme_narrowed_to_one_field_wants_each_span_to_name_it() -> None:
    claims = Scheme(SchemeType.SPAN, "claims", labels=("CLAIM",), span_fields=("hypothesis",), text_key="premise")
    assert claims.span_problem([{"start": 0, "end": 3, "label": "CLAIM"}], TEXTS) == (
        'span 1 names no field, and this scheme marks spans on hypothesis: add "field" with one of them')
    assert claims.accepts([{"start": 0, "end": 4, "label": "CLAIM", "field": "hypothesis"}], TEXTS)


# --- the bundle and the pieces a trainer sees --------------------------------------------------------

def test_the_bundle_carries_each_schemes_fields_and_each_items_texts(
        tmp_path: Path, make_project: Callable[..., Path]) -> None:
    from potato.config import load_config
    from potato.server.training.runs.bundle import job_spec

    config = load_config(make_project(
        annotation_schemes=[{"annotation_type": "span", "name": "entities", "labels": ["PER", "LOC"]}],
        instance_display={"fields": [{"key": "text", "type": "text", "span_target": True},
                                     {"key": "hypothesis", "type": "text", "span_target": True}]}))
    written = job_spec(config, "r1", "sklearn-token-classification", ["entities"], {})
    # A worker from before fields refuses the job (format 2) instead of training these spans on the text.
    assert written["format"] == 2 and written["schemes"][0]["fields"] == ["", "hypothesis"]
    job = parse_job(job_json("sklearn-token-classification", (ENTITIES,), format=2))
    assert job.schemas[0].span_fields == ("", "hypothesis")
    (tmp_path / "items.jsonl").write_text('{"id": "a", "text": "Ada flew.", "texts": {"hypothesis": "Ada went."}}\n'
                                          '{"id": "b", "text": "Bo ran."}\n', encoding="utf-8")
    a, b = read_items(tmp_path)
    assert a.span_texts == {"": "Ada flew.", "hypothesis": "Ada went."} and a.fields == {}
    assert b.span_texts == {"": "Bo ran."}
    (tmp_path / "items.jsonl").write_text('{"id": "a", "text": "x", "texts": {"hypothesis": 3}}\n', encoding="utf-8")
    with pytest.raises(Exception, match=r"items.jsonl line 1 \(item 'a'\) has texts that are not an object of strings"):
        read_items(tmp_path)
    bad = job_json("sklearn-token-classification", ({**ENTITIES, "fields": []},))
    with pytest.raises(Exception, match=r"schemes\[0\] \(entities\) fields must be a non-empty list of field names"):
        parse_job(bad)


def test_items_are_cut_into_one_text_per_field_and_predictions_put_back_by_field() -> None:
    item = JobItem("a", TEXTS[""], {}, {"hypothesis": TEXTS["hypothesis"]})
    claims = Scheme(SchemeType.SPAN, "claims", labels=("CLAIM",), span_fields=("hypothesis",))
    schemas = (PAIR, claims)
    assert spanfields.marks_fields(schemas) and not spanfields.marks_fields((Scheme(SchemeType.SPAN, "x"),))
    fields = spanfields.fields_of(schemas)
    assert fields == ("", "hypothesis")
    pieces = spanfields.split_items([item], fields)
    assert [(p.id, p.text) for p in pieces] == [("a\x1f", TEXTS[""]), ("a\x1fhypothesis", TEXTS["hypothesis"])]

    targets = {"entities": (Span(0, 3, "PER"), Span(0, 4, "LOC", "hypothesis")), "claims": ()}
    split = spanfields.split_examples([Example(item, targets)], schemas)
    assert [(ex.text, dict(ex.targets)) for ex in split] == [
        (TEXTS[""], {"entities": (Span(0, 3, "PER"),)}),
        (TEXTS["hypothesis"], {"entities": (Span(0, 4, "LOC"),), "claims": ()})]

    predicted = [{"entities": Prediction((ScoredSpan(0, 3, "PER", 0.9),), 0.8), "claims": Prediction((), 1.0)},
                 {"entities": Prediction(((0, 4, "LOC", 0.7),), 0.6),
                  "claims": Prediction(((5, 7, "CLAIM", 0.5),), 0.5)}]
    joined = spanfields.join_predictions([item], fields, schemas, predicted)
    entities = check_prediction(PAIR, joined[0]["entities"], "item 'a'", item.span_texts)
    assert entities == Prediction((ScoredSpan(0, 3, "PER", 0.9), ScoredSpan(0, 4, "LOC", 0.7, "hypothesis")),
                                  pytest.approx(0.7))
    claim = check_prediction(claims, joined[0]["claims"], "item 'a'", item.span_texts)
    assert claim is not None and claim.label == (ScoredSpan(5, 7, "CLAIM", 0.5, "hypothesis"),)
    # A span the trainer put past its field's text, or nothing for a field, is said, not kept.
    wrong = spanfields.join_predictions([item], fields, schemas,
                                        [predicted[0], {"entities": Prediction(((0, 99, "LOC", 0.7),), 0.6)}])
    assert wrong[0]["claims"] is None
    with pytest.raises(ValueError, match="outside its 23 characters"):
        check_prediction(PAIR, wrong[0]["entities"], "item 'a'", item.span_texts)


# --- a run ---------------------------------------------------------------------------------------------

PEOPLE = ["Ada", "Grace", "Alan", "Linus", "Barbara", "Dennis", "Margaret", "Ken"]
PLACES = ["London", "Paris", "Berlin", "Oslo", "Madrid", "Vienna", "Prague", "Dublin"]


def pair(i: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An item (premise, hypothesis) and its spans: the person and the place in each."""
    person, place = PEOPLE[i % 8], PLACES[(i * 3) % 8]
    premise, hypothesis = f"{person} flew to {place} on day {i}.", f"{place} is where {person} went."
    spans = [{"start": 0, "end": len(person), "label": "PER"},
             {"start": premise.index(place), "end": premise.index(place) + len(place), "label": "LOC"},
             {"start": 0, "end": len(place), "label": "LOC", "field": "hypothesis"},
             {"start": hypothesis.index(person), "end": hypothesis.index(person) + len(person), "label": "PER",
              "field": "hypothesis"}]
    return {"id": f"p{i:03d}", "text": premise, "texts": {"hypothesis": hypothesis}}, spans


def test_a_run_learns_spans_in_both_fields_and_predicts_each_in_its_field(tmp_path: Path) -> None:
    data = [pair(i) for i in range(60)]
    labels = [{"item_id": item["id"], "schema": "entities", "label": spans, "user": "ann"} for item, spans in data[:50]]
    holdout = [item["id"] for item, _ in data[:50:5]]
    job_dir = write_bundle(tmp_path, job_json("sklearn-token-classification", (ENTITIES,)),
                           [item for item, _ in data], labels, holdout)
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    metrics = read_result(job_dir)["metrics"]
    assert metrics["entities/n_train"] == 40  # items, not texts
    assert metrics["entities/PER/holdout_support"] == 20  # ten holdout items, a person in each of two fields
    assert metrics["entities/holdout_f1"] >= 0.9
    rows = {r["item_id"]: r for r in read_jsonl(job_dir / "predictions.jsonl")}
    unseen, spans = data[57]
    assert [{k: s.get(k) for k in ("start", "end", "label", "field")} for s in rows[unseen["id"]]["label"]] == [
        {k: s.get(k) for k in ("start", "end", "label", "field")} for s in sorted(
            spans, key=lambda s: (s.get("field", ""), s["start"]))]


def test_a_span_in_a_field_no_longer_marked_is_left_out_and_one_past_its_text_is_a_bad_job(tmp_path: Path) -> None:
    """A span_target taken away after spans were marked there: those spans are not trained, and said."""
    data = [pair(i) for i in range(10)]
    labels = [{"item_id": item["id"], "schema": "entities", "user": "u",
               "label": spans + [{"start": 0, "end": 3, "label": "PER", "field": "title"}]} for item, spans in data]
    job_dir = write_bundle(tmp_path, job_json("noop", (ENTITIES,)), [item for item, _ in data], labels, [])
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    warnings = [e["text"] for e in read_jsonl(job_dir / "events.jsonl") if e.get("type") == "warning"]
    assert ("Schema 'entities': 10 span(s) lie in fields it does not mark now ('', 'hypothesis'); they were left "
            "out of training") in warnings
    item, _ = data[0]
    long = write_bundle(tmp_path / "long", job_json("sklearn-token-classification", (ENTITIES,)), [item],
                        [{"item_id": item["id"], "schema": "entities", "user": "u",
                          "label": [{"start": 0, "end": 80, "label": "PER", "field": "hypothesis"}]}], [])
    assert run_job(long) == 2
    assert "ends at 80, past the field's text (25 characters)" in read_result(long)["message"]


def test_a_radio_scheme_trained_beside_them_learns_the_items_own_text(tmp_path: Path) -> None:
    """noop learns radio and span schemes in one run: the radio scheme sees the item's text, whole,
    and counts its items once, while the span scheme's spans come back in both fields."""
    claims = {"name": "claims", "annotation_type": "span", "labels": ["PER", "LOC"], "fields": ["hypothesis"]}
    mood = {"name": "mood", "annotation_type": "radio", "labels": ["near", "far"]}
    data = [pair(i) for i in range(30)]
    labels = []
    for n, (item, spans) in enumerate(data[:25]):
        labels.append({"item_id": item["id"], "schema": "claims", "user": "ann",
                       "label": [s for s in spans if s.get("field") == "hypothesis"]})
        labels.append({"item_id": item["id"], "schema": "mood", "user": "ann", "label": "far" if n % 2 else "near"})
    job_dir = write_bundle(tmp_path, job_json("noop", (claims, mood)), [item for item, _ in data], labels,
                           [item["id"] for item, _ in data[:25:5]])
    assert run_job(job_dir) == 0, read_result(job_dir)["message"]
    metrics = read_result(job_dir)["metrics"]
    assert metrics["mood/n_train"] == 20 and metrics["claims/n_train"] == 20
    assert metrics["claims/holdout_f1"] >= 0.9  # every name and place was seen in training
    rows = {(r["item_id"], r["schema"]): r for r in read_jsonl(job_dir / "predictions.jsonl")}
    assert rows[("p027", "mood")]["label"] in ("near", "far")
    assert {s.get("field") for s in rows[("p027", "claims")]["label"]} == {"hypothesis"}
