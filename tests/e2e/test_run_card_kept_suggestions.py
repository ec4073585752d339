"""The run card of a run that wrote no predictions (issue 33 item 2): it said nothing (suggestions
"—"), while an empty upload had made it the source of the suggestions annotators see, with none.
Now the earlier run's suggestions stay, and the card says whose they are."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from tests.conftest import ADMIN_KEY
from tests.harness.agentprotocol import predictions, run_to_the_end
from tests.harness.agentsetup import Setup
from tests.harness.agentsetup import make_setup  # noqa: F401 - the fixture
from tests.harness.runs import label_all

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_the_card_of_a_run_without_predictions_names_the_run_whose_suggestions_stay(
        make_setup: Callable[..., Setup], page: Any) -> None:  # noqa: F811
    s = make_setup()
    label_all(s.server, 20)
    first = run_to_the_end(s, predictions(40))
    later = run_to_the_end(s, None)
    page.goto(s.server.url + "/admin/training/")
    page.fill("#key", ADMIN_KEY)
    page.press("#key", "Enter")
    page.click(f"#runs tr[data-run-id='{later}'] button.linklike")
    page.wait_for_selector(f"#run-detail[data-run-id='{later}'][data-state=succeeded]")
    page.wait_for_selector("#run-suggestion-count:has-text('written')")
    assert page.inner_text("#run-suggestion-count").startswith("0 suggestions written")
    assert page.inner_text("#run-message") == (f"This run wrote no predictions for sentiment, so annotators keep the "
                                               f"suggestions of run {first}.")
