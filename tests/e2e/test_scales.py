"""Issue 45 (item 3) in a real browser, under gunicorn, at 390 and 1280 px: upstream's visual analogue
scale, moved by keyboard (the line shows its two ends and no number with ``show_value`` off, its
number with it on; it is no answer until moved), a semantic differential, a point picked by
keyboard between each pair of opposite words, and a soft label, whose shares move together so that
they always add up to the total. Each answer is stored as it is given and is there again
after a reload; the words are hostile markup, and nothing of it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.adminapi import answers_become
from tests.harness.pages import sign_in
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HOSTILE = '<b onmouseover="window.__pwned=1">bold</b><script>window.__pwned=1</script>'
SCHEMES = [
    {"annotation_type": "vas", "name": "pain", "description": "How much pain?", "left_label": f"No pain {HOSTILE}",
     "right_label": "Worst pain imaginable", "precision": 0},
    {"annotation_type": "vas", "name": "mood", "description": "Mood", "left_label": "Low", "right_label": "High",
     "min_value": -1, "max_value": 1, "show_value": True},
    {"annotation_type": "semantic_differential", "name": "feel", "description": "How does it feel?", "scale_points": 5,
     "pairs": [[f"Good {HOSTILE}", "Bad"], ["Strong", "Weak"]]},
    {"annotation_type": "soft_label", "name": "split", "description": "How likely is each?",
     "labels": [f"Positive {HOSTILE}", "Neutral", "Negative"], "total": 100},
]


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    srv = ServerProcess(make_project(n_items=2, annotation_schemes=SCHEMES)).start()
    yield srv
    srv.stop()


def stored(server: ServerProcess, expected: dict[tuple[str, str], Any], within: float = 15.0) -> None:
    answers_become(server.url, "ana", expected, within)


@pytest.mark.parametrize("width", [390, 1280])
def test_scales_are_answered_by_keyboard_and_kept(server: ServerProcess, page: Any, width: int) -> None:
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text))
    sign_in(page, server, "ana", width)
    pain, mood = "fieldset[data-schema=pain]", "fieldset[data-schema=mood]"
    assert page.inner_text(f"{pain} .scale-ends") == f"No pain {HOSTILE}\nWorst pain imaginable"
    assert page.is_hidden(f"{pain} .slider-value") and page.is_visible(f"{mood} .slider-value")
    assert page.get_attribute(f"{pain} input[type=range]", "step") == "1"
    assert page.inner_text(f"{mood} .slider-value") == "not set"
    # Up and Down move it (Left and Right are the page's: the item before and after).
    page.focus(f"{pain} input[type=range]")
    for _ in range(3):
        page.keyboard.press("ArrowUp")
    page.focus(f"{mood} input[type=range]")
    page.keyboard.press("ArrowDown")
    assert page.inner_text(f"{mood} .slider-value") == "-0.1"
    page.keyboard.press("Tab")
    # A pair's points by keyboard: the first, then down the row to the third.
    feel = "fieldset[data-schema=feel]"
    good = f"Good {HOSTILE}__Bad"
    assert page.eval_on_selector_all(f"{feel} .dimension", "l => l.map(d => [...d.querySelectorAll('.pole')].map(p => "
                                     "p.textContent))") == [[f"Good {HOSTILE}", "Bad"], ["Strong", "Weak"]]
    page.focus(f"{feel} .dimension >> nth=0 >> input[value='1']")
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == f"Good {HOSTILE} to Bad: 3 of 5"
    # A soft label: untouched it is no answer; a share moved by keyboard moves the others, so that
    # together they stay 100.
    split = "fieldset[data-schema=split]"
    assert page.inner_text(f"{split} .soft-total") == "Not set: move a share to give one."
    page.focus(f"{split} .soft-row >> nth=0 >> input")
    for _ in range(7):
        page.keyboard.press("ArrowUp")
    shares = page.eval_on_selector_all(f"{split} .soft-row input", "l => l.map(i => Number(i.value))")
    assert shares[0] == 40 and sum(shares) == 100 and all(v >= 0 for v in shares)
    assert page.eval_on_selector_all(f"{split} .soft-value", "l => l.map(o => Number(o.textContent))") == shares
    assert page.inner_text(f"{split} .soft-total") == "Together 100 of 100."
    split_stored = dict(zip([f"Positive {HOSTILE}", "Neutral", "Negative"], shares))
    stored(server, {("r000", "pain"): 53, ("r000", "mood"): -0.1, ("r000", "feel"): {good: "3"},
                    ("r000", "split"): split_stored})
    page.reload()
    page.wait_for_selector("#item-id:text('r000')")
    assert page.input_value(f"{pain} input[type=range]") == "53"
    assert page.input_value(f"{mood} input[type=range]") == "-0.1"
    assert page.eval_on_selector_all(f"{feel} input:checked", "l => l.map(i => i.value)") == ["3"]
    assert page.eval_on_selector_all(f"{split} .soft-row input", "l => l.map(i => Number(i.value))") == shares
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('#answers script, #answers b').length") == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console
