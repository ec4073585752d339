"""Issue 45 (item 3): upstream's ``option_randomization``, as its classification/multirate example
sets it: each annotator sees the labels (a multirate's rows) in an order of their own, the same on
every item and every visit, as upstream's page shuffles them seeded by the annotator; the answers
are stored by name as ever."""

from __future__ import annotations

import re
from pathlib import Path

from potato.config import validate
from potato.server.annotate import arranged
from tests.harness.labelstore import annotator, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
ROWS = [f"Option {n}" for n in range(1, 9)]
MULTIRATE = {"annotation_type": "multirate", "name": "awesomeness", "description": "How awesome is this?",
             "display_config": {"num_columns": 1}, "options": ROWS,
             "labels": ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly Agree"],
             "label_requirement": {"required": True}, "sequential_key_binding": True, "option_randomization": True}
TOPICS = {"annotation_type": "radio", "name": "topic", "labels": [f"Topic {n}" for n in range(1, 9)],
          "option_randomization": True}


def test_each_annotator_has_an_order_of_their_own_that_stays() -> None:
    report = validate(upstream(annotation_schemes=[MULTIRATE, TOPICS]), CONFIG)
    assert report.errors == []
    rows, topic = report.config.annotation_schemes
    assert rows.shuffled and topic.shuffled
    ana, bo = ([d.name for d in arranged(rows, rows.dimensions, user)] for user in ("ana", "bo"))
    assert sorted(ana) == sorted(bo) == sorted(ROWS) and ana != bo  # 8! orders: two names meeting one is a bug
    assert [d.name for d in arranged(rows, rows.dimensions, "ana")] == ana  # the same on every item and visit
    assert [o.name for o in arranged(rows, rows.options, "ana")] == list(rows.labels)  # the scale keeps its order
    assert [o.name for o in arranged(topic, topic.options, "ana")] != list(topic.labels)
    plain = validate(upstream(annotation_schemes=[{**TOPICS, "option_randomization": False}]), CONFIG).config
    assert [o.name for o in arranged(plain.annotation_schemes[0], plain.annotation_schemes[0].options, "ana")] == list(
        plain.annotation_schemes[0].labels)
    wrong = [i.message for i in validate(upstream(annotation_schemes=[
        {"annotation_type": "likert", "name": "l", "size": 5, "min_label": "a", "max_label": "b",
         "option_randomization": True}]), CONFIG).errors]
    assert wrong == ["annotation_schemes[0].option_randomization: applies to radio, multiselect, select and multirate "
                     "schemes only; remove it from this likert scheme"]


def test_the_page_draws_the_annotators_order_and_answers_are_stored_by_name(tmp_path: Path) -> None:
    path = write_project(tmp_path / "project", "Shuffled", [{"id": "m1", "text": "A thing."}], [MULTIRATE])
    orders = {}
    for user in ("ana", "bo"):
        with annotator(path, user) as client:
            page = client.get("/annotate").get_data(as_text=True)
            orders[user] = re.findall(r'data-dim="(Option \d)"', page)
            scheme = validate(upstream(annotation_schemes=[MULTIRATE]), CONFIG).config.annotation_schemes[0]
            assert orders[user] == [d.name for d in arranged(scheme, scheme.dimensions, user)]
            answer = {row: "Agree" for row in ROWS}
            assert client.post("/api/label", json={"id": "m1", "go": "stay", "labels": {"awesomeness": answer}}).status_code == 200
    assert orders["ana"] != orders["bo"]
    assert stored_answers(path) == {("m1", "awesomeness"): {row: "Agree" for row in ROWS}}
