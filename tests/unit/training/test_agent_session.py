"""The agent started by an ssh session (``--session HOST``): when the session's end closes its
stdout, it stops the run in the words the server uses for the same event, so the run's message is
the same whichever side notices first (the fault table's 'The ssh session to <host> ended during
the run')."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

from potato.training.agent.program import Agent
from potato.training.agent.reporting import Console, Reporter
from potato.training.job.results import Reason


def _seen_end(tmp_path: Path, host: str) -> tuple[Agent, Reporter]:
    read, write = os.pipe()
    agent = Agent(None, "lab", tmp_path, console=Console(io.StringIO()))  # type: ignore[arg-type]
    reporter = agent.reporter = Reporter(None, "r1", agent.console)  # type: ignore[arg-type]
    try:
        agent.watch_session(host, interval_s=0.01, stdout=write)
        os.close(read)  # sshd closed the session's end of the agent's stdout
        deadline = time.monotonic() + 10
        while reporter.stop is None and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        os.close(write)
    return agent, reporter


def test_the_agent_reports_a_lost_session_naming_the_host_as_the_server_does(tmp_path: Path) -> None:
    agent, reporter = _seen_end(tmp_path, "gpu1.lab")
    assert reporter.stop is not None and reporter.stop.reason is Reason.AGENT_LOST
    assert reporter.stop.message.startswith("The ssh session to gpu1.lab ended during the run")
    assert agent.host in reporter.stop.message  # and which machine saw it
    assert agent.session_ended and agent.stopping and reporter.give_up_after_s == 0.0


def test_an_agent_told_no_host_names_its_own(tmp_path: Path) -> None:
    agent, reporter = _seen_end(tmp_path, "")
    assert reporter.stop is not None
    assert reporter.stop.message == f"The session to {agent.host} that started the agent ended during the run."
