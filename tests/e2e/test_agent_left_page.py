"""The training page's Agents table after an agent was stopped (issue 33 item 11, R34): it said
"connected" with a fresh last-seen until the stopped agent's open poll timed out. Now the row says
when the agent left."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.harness.agents import AgentProcess, register
from tests.conftest import ADMIN_KEY
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_the_agents_table_says_a_stopped_agent_left(make_project: Callable[..., Path], page: Any) -> None:
    path = make_project(model_training={"enabled": True, "backends": {"lab": {"type": "agent"}}})
    _, token = register(path, "lab")
    srv = ServerProcess(path).start()
    agent = AgentProcess(srv.url, "lab", token, path.parent / "agent")
    try:
        agent.wait_for("waiting for jobs on lab")
        page.goto(srv.url + "/admin/training/")
        page.fill("#key", ADMIN_KEY)
        page.press("#key", "Enter")
        page.wait_for_selector("#agents tr[data-backend=lab][data-status=connected]")
        agent.signal(signal.SIGTERM)
        assert agent.wait_exit(30) == 130
        page.reload()
        row = page.wait_for_selector("#agents tr[data-backend=lab][data-status=disconnected]")
        status = row.query_selector("td.agent-status")
        assert status is not None and status.inner_text().startswith("left at ")
    finally:
        agent.stop()
        srv.stop()
