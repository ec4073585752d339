"""Issue 45 (item 3): upstream's ranking, as its classification/ranking example configures it: the
labels put in order, best first. Stored as the list of labels in order; upstream's export holds the
order comma-joined under ``rank_order`` (a label with a comma in its name read back whole); both
exports import back. ``allow_ties: true`` is refused by name: upstream's page reads it and offers no tie."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.upstream_export import our_value, upstream_labels
from tests.harness.labelstore import annotator, exported, invoke, stored_answers, write_project
from tests.harness.upstream import upstream

CONFIG = Path(__file__).parent / "config.yaml"  # never read: paths are resolved against its folder
RANKING = {"annotation_type": "ranking", "name": "response_quality",
           "description": "Rank the responses from best (1st) to worst (last) based on helpfulness and accuracy",
           "labels": ["Response A", "Response B", "Response C, the long one", "Response D"], "allow_ties": False}
ITEMS = [{"id": "rk001", "text": "Question: How do I reverse a list in Python?"}, {"id": "rk002", "text": "Another."}]
ORDER = ["Response B", "Response C, the long one", "Response A", "Response D"]


def test_upstreams_ranking_validates_as_an_order_of_its_labels() -> None:
    report = validate(upstream(annotation_schemes=[RANKING]), CONFIG)
    assert report.errors == []
    scheme = report.config.annotation_schemes[0]
    assert scheme.labels == tuple(RANKING["labels"]) and [o.key for o in scheme.options] == ["", "", "", ""]
    assert scheme.accepts(ORDER) and not scheme.accepts(ORDER[:3]) and not scheme.accepts(ORDER + ["Response A"])
    assert not scheme.accepts(ORDER[:3] + ["Response E"]) and not scheme.accepts("Response A")
    errors = [i.message for i in validate(upstream(annotation_schemes=[{**RANKING, "allow_ties": True}]), CONFIG).errors]
    assert errors == ["annotation_schemes[0].allow_ties: ties in a ranking are not offered (upstream's page offers none "
                      "either); remove allow_ties, or ask for a rating of each label with annotation_type: multirate"]
    assert upstream_labels(scheme, ORDER) == {"rank_order": "Response B,Response C, the long one,Response A,Response D"}
    assert our_value(scheme, upstream_labels(scheme, ORDER)) == ORDER


def _project(root: Path) -> Path:
    return write_project(root, "Ranking", ITEMS, [RANKING])


def test_an_order_of_every_label_is_stored_and_anything_else_refused(tmp_path: Path) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        page = client.get("/annotate").get_data(as_text=True)
        assert 'data-type="ranking"' in page and page.count('class="rank-item"') == 4 and "Keep this order" in page
        assert client.post("/api/label", json={"id": "rk001", "go": "stay", "labels": {"response_quality": ORDER}}).status_code == 200
        refused = client.post("/api/label", json={"id": "rk002", "go": "stay", "labels": {"response_quality": ORDER[:2]}})
        assert refused.get_json()["error"] == (
            "['Response B', 'Response C, the long one'] is not an answer to 'response_quality' (valid: a list of every "
            "label once, best first: Response A, Response B, Response C, the long one, Response D)")
    assert stored_answers(path) == {("rk001", "response_quality"): ORDER}


@pytest.mark.parametrize("fmt", ["ours", "jsonl", "csv"])
def test_both_exports_import_back_as_the_same_stored_answers(tmp_path: Path, fmt: str) -> None:
    path = _project(tmp_path / "project")
    with annotator(path) as client:
        assert client.post("/api/label", json={"id": "rk002", "go": "stay", "labels": {"response_quality": ORDER}}).status_code == 200
    source = exported(path, tmp_path, fmt)
    fresh = _project(tmp_path / "fresh")
    result: Any = invoke("import-labels", fresh, source, "--user", "ann")
    assert result.exit_code == 0, result.output
    assert stored_answers(fresh) == stored_answers(path) == {("rk002", "response_quality"): ORDER}
