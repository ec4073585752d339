"""Issue 21 (R9, C6): the training page's label summary counts each labelled item once, by the label a
run trains on, and says how many items annotators disagree on; a run trains on exactly those labels."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from potato.config import load_config
from potato.labels import Label
from potato.server.training.runs.bundle import build_bundle, job_spec
from potato.training.job.archive import extract_archive
from potato.training.job.spec import read_job, read_labels
from potato.training.job.labels import aggregate
from tests.conftest import ADMIN_KEY, truth


@pytest.fixture
def app(make_project: Callable[..., Path]) -> Iterator[Any]:
    from potato.server import close_app, create_app

    config = load_config(make_project(model_training={"enabled": True, "trainer": "noop"}))
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    yield application
    close_app(application)


def disagreeing_labels() -> list[Label]:
    """32 distinct items: gold labels r000-r029; a second annotator adds r030, r031 and disagrees on
    r000 and r001; a third sides with gold on r000 (2 to 1), so only r001 is a tie."""
    labels = [Label("gold", f"r{i:03d}", "sentiment", truth(f"r{i:03d}")) for i in range(30)]
    labels += [Label("second", "r000", "sentiment", "negative"), Label("second", "r001", "sentiment", "positive"),
               Label("second", "r030", "sentiment", "positive"), Label("second", "r031", "sentiment", "negative"),
               Label("third", "r000", "sentiment", "positive"),
               Label("gold", "gone", "sentiment", "positive")]  # an item no longer in the data: no run sees it
    return labels


def page_summary(app: Any) -> dict[str, Any]:
    """The summary the training page's form shows, as the page carries it."""
    resp = app.test_client().get("/admin/training/", headers={"X-API-Key": ADMIN_KEY})
    assert resp.status_code == 200
    found = re.search(r'data-summary="([^"]*)"', resp.get_data(as_text=True))
    assert found, "the page carries no label summary"
    summary: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return summary


def test_each_item_counts_once_by_the_label_a_run_trains_on(app: Any) -> None:
    """Issue 21: "negative 22, positive 23" was shown for 32 labelled items, an item with disagreeing
    labels counting in both classes. Now: 32 items, r000 as its majority (positive), r001's tie as the
    label that sorts first (negative), and the 2 disagreements apart."""
    app.extensions["potato"].labels.save(disagreeing_labels())
    assert page_summary(app)["sentiment"] == {
        "kind": "radio", "kind_of_items": "items", "items": 32, "classes": [["positive", 16], ["negative", 16]], "disagree": 2, "none": 0}


def test_multiselect_counts_labels_more_than_half_chose(app: Any) -> None:
    """Issue 21: on a multiselect schema a label counts where more than half of the item's annotators
    chose it; an item where none did counts as "with no label"."""
    app.extensions["potato"].labels.save([
        Label("a", "r000", "aspects", ["price", "quality"]), Label("b", "r000", "aspects", ["price"]),
        Label("c", "r000", "aspects", []),
        Label("a", "r001", "aspects", []),
        Label("a", "r002", "aspects", ["quality"]), Label("b", "r002", "aspects", ["delivery"]),
    ])
    assert page_summary(app)["aspects"] == {
        "kind": "multiselect", "kind_of_items": "items", "items": 3, "classes": [["price", 1]], "disagree": 2, "none": 2}


def test_the_page_counts_what_the_worker_trains_on(app: Any, tmp_path: Path) -> None:
    """Issue 21, C6: the counts on the page are the worker's own: the run's bundle, read and combined
    by the worker, gives the same items per class."""
    project = app.extensions["potato"]
    project.labels.save(disagreeing_labels())
    job = job_spec(project.config, "run-1", "noop", ["sentiment"], {})
    info = build_bundle(tmp_path / "bundle.tar.gz", job, project.items, list(project.labels.iter_labels()), 0.2)
    extract_archive(info.path, tmp_path / "job")
    spec = read_job(tmp_path / "job")
    targets = aggregate(read_labels(tmp_path / "job", spec), spec.schemas)
    trained = Counter(per["sentiment"] for per in targets.values())
    summary = page_summary(app)["sentiment"]
    assert summary["items"] == len(targets) == 32
    assert dict(summary["classes"]) == dict(trained)


def test_the_start_form_offers_only_trainers_for_the_projects_schemes(app: Any) -> None:
    """Issue 23: the span trainer is registered, and a project with no span scheme is not offered it."""
    page = app.test_client().get("/admin/training/", headers={"X-API-Key": ADMIN_KEY}).get_data(as_text=True)
    offered = re.findall(r'<option value="([^"]+)" data-description', page)
    assert "sklearn-text-classification" in offered and "sklearn-token-classification" not in offered


def test_a_span_schema_counts_items_by_the_labels_of_their_majority_spans(make_project: Callable[..., Path]) -> None:
    """Issue 23: the form said "no labelled items yet" for a span schema with 30 marked items. Now an
    item counts once per label its majority spans have, and an item with nothing marked apart."""
    from potato.server import close_app, create_app

    ner = {"annotation_type": "span", "name": "names", "labels": ["PER", "ORG"]}
    config = load_config(make_project(annotation_schemes=[ner], model_training={"enabled": True}))
    application = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        per, item = {"start": 0, "end": 3, "label": "PER"}, {"start": 4, "end": 8, "label": "PER"}
        org = {"start": 4, "end": 8, "label": "ORG"}  # "The item 0 ...": "The" and "item"
        application.extensions["potato"].labels.save([
            Label("a", "r000", "names", [per, item]), Label("a", "r001", "names", [per, org]),
            Label("b", "r001", "names", [per]), Label("a", "r002", "names", []),
        ])
        assert page_summary(application)["names"] == {
            "kind": "span", "kind_of_items": "items", "items": 3, "classes": [["PER", 2]], "disagree": 1, "none": 1}
    finally:
        close_app(application)
