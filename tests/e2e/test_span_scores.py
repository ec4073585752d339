"""Issue 23 on the training page, in a real browser: a span run's holdout is shown as span F1, in the
runs table and, label by label, in the run's detail, readable at a phone's width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from tests.harness.pages import open_page
from tests.harness.runs import H
from tests.harness.spans import trained  # noqa: F401 - the fixture
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.mark.parametrize("width", [390, 1280])
def test_the_span_run_shows_its_f1_overall_and_by_label(trained: tuple[ServerProcess, dict[str, Any]], page: Any,  # noqa: F811
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
