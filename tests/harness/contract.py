"""Sending a Schemathesis case to a live server and checking the answer against the contract, for the
two contract suites (the agent protocol's and the admin API's)."""

from __future__ import annotations

from typing import Any, Dict

import schemathesis

from tests.harness.servers import ServerProcess


def call_and_check(srv: ServerProcess, case: schemathesis.Case, headers: Dict[str, str]) -> Any:
    """Send ``case`` and run Schemathesis' checks on the answer; a failure names the server log."""
    try:
        return case.call_and_validate(base_url=srv.url, headers=headers, timeout=60)
    except Exception as exc:
        tail = srv.output()[-4000:]
        raise AssertionError(f"{exc}\n--- {srv.log_path} (tail) ---\n{tail}") from exc
