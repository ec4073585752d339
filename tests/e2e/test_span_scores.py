"""Issue 23 on the training page, in a real browser: a span run's holdout is shown as span F1, in the
runs table and, label by label, in the run's detail, readable at a phone's width."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from tests.e2e.test_training_page_newcomer import open_page
from tests.integration.test_spans_local import H, mark, signed_in, span_items, span_project, true_spans
from tests.harness.runs import TERMINAL, start, wait
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def trained(make_project: Callable[..., Path]) -> Iterator[tuple[ServerProcess, dict[str, Any]]]:
    srv = ServerProcess(span_project(make_project)).start()
    try:
        gold = signed_in(srv, "gold")
        for item in span_items()[:30]:
            mark(gold, srv, item["id"], true_spans(item))
        run = start(srv, trainer="sklearn-token-classification", schemas=["entities"])
        done = wait(srv, run["id"], TERMINAL, timeout=180)
        assert done["state"] == "succeeded", srv.output()[-3000:]
        yield srv, done
    finally:
        srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_span_run_shows_its_f1_overall_and_by_label(trained: tuple[ServerProcess, dict[str, Any]], page: Any,
                                                        width: int, tmp_path: Path) -> None:
    srv, run = trained
    metrics = run["metrics"]
    page.set_viewport_size({"width": width, "height": 900})
    open_page(page, srv.url + "/admin/training/")
    row = page.wait_for_selector(f"#runs tr[data-run-id='{run['id']}']")
    score_cell = row.query_selector("td:nth-child(6)")
    assert score_cell.inner_text().strip() == f"{metrics['entities/holdout_f1']:.2f} span F1"  # named (issue 33)
    assert "Span F1" in score_cell.get_attribute("title")
    page.click(f"#runs tr[data-run-id='{run['id']}'] button.linklike")
    page.wait_for_selector("#run-span-scores:not([hidden]) tbody tr")
    assert f"entities: span F1 {metrics['entities/holdout_f1']:.2f}" in page.inner_text("#run-score")
    rows = page.eval_on_selector_all("#run-span-scores tbody tr",
                                     "trs => trs.map(tr => Array.from(tr.cells).map(c => c.textContent))")
    assert [r[:2] for r in rows] == [["entities", "LOC"], ["entities", "PER"]]
    for schema, label, precision, recall, f1, support in rows:
        base = f"{schema}/{label}/holdout_"
        assert (precision, recall, f1) == tuple(f"{metrics[base + k]:.2f}" for k in ("precision", "recall", "f1"))
        assert support == str(int(metrics[base + "support"]))
    page.screenshot(path=str(tmp_path / f"span-scores-{width}.png"), full_page=True)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    assert requests.get(srv.url + "/admin/training/api/runs", headers=H).status_code == 200
