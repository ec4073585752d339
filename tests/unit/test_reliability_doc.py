"""docs/reliability.md's matrix is generated from the tests' fault marks (issue 20): it must say what
the tests prove, so a mark changed without regenerating the document fails here."""

from __future__ import annotations

from tests.faults import matrix


def test_the_reliability_document_shows_every_fault_mark_as_it_is() -> None:
    current = matrix.DOC.read_text(encoding="utf-8")
    assert current == matrix.document(current, matrix.render(matrix.rows())), (
        "docs/reliability.md is out of date: run .venv/bin/python -m tests.faults.matrix --write")


def test_every_row_says_what_is_lost_and_nothing_acknowledged_is() -> None:
    rows = matrix.rows()
    assert rows, "no test carries a fault mark"
    for row in rows:
        assert row.lost.strip(), row.test
        assert "label" not in row.lost or row.lost == "nothing", row  # an acknowledged label is never lost
