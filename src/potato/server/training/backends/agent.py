"""The agent backend: a machine the server cannot reach, whose agent asks for work.

The server starts nothing here: a registered agent polls ``jobs/next`` with the backend's token
and claims the oldest queued run. So what the server can say about such a backend is whether an
agent is there: it asked for work within ``heartbeat_timeout_s``, or reports on the run it executes.
The check, the Agents table and a queued run's step line all use that one rule.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Sequence, cast

from potato.config import polled
from potato.config.schema import AgentBackendSettings, Config
from potato.db import Database
from potato.server.training.backends.base import Backend, CheckReport, AgentTimeouts
from potato.server.training.runs.store import ACTIVE, Run, RunState, RunStore
from potato.server.training.runs.tokens import BackendToken, BackendTokens
from potato.training.agent.protocol import LONG_POLL_MAX_S, RETRY_AFTER_S


class Polling(Backend):
    """``type: agent``: a backend whose runs its own agents claim by polling; the server only hands
    them out and records them. (Every backend's runs are carried out by the agent program,
    :mod:`potato.training.agent`; this is the one where a person starts that program.)"""

    type = "agent"
    claimed_by_agents = True

    def __init__(self, settings: AgentBackendSettings) -> None:
        super().__init__(settings)
        self.agent = settings

    def check(self, config: Config) -> CheckReport:
        return check_agent(config, self.agent)

    def agent_timeouts(self) -> AgentTimeouts:
        return AgentTimeouts(self.agent.heartbeat_timeout_s, self.agent.queue_timeout_s)


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def check_agent(config: Config, backend: AgentBackendSettings, now: float | None = None) -> CheckReport:
    """The backend's token entry with ``last_seen``, or how to issue one; no secret shown. ok
    only while an agent works for the backend (asks for work, or reports on its run): a token
    without an agent runs nothing, and the check says how to start one."""
    now = time.time() if now is None else now
    db = Database(config.database_path)
    active = RunStore(db, config.training_dir / "runs").in_states(list(ACTIVE))
    presence = agent_presence(BackendTokens(db), active, backend, now)
    entry = presence.token
    if entry is None:
        return CheckReport(backend.name, "agent", False, [
            f"{backend.describe()}: no token issued yet",
            f"Issue one on this server: potato training register {backend.name} {config.path.name}",
        ], {"token": None, "polling": False})
    lines = [f"{backend.describe()}: token issued {_when(entry.created_at)}"]
    if entry.last_seen is None:
        lines.append("last_seen: never (no agent has connected with this token yet)")
    else:
        lines.append(f"last_seen: {_when(entry.last_seen)} ({now - entry.last_seen:.0f} s ago)")
    agent = entry.agent or {}
    if agent:
        gpus = ", ".join(f"{g.get('index')}: {g.get('name')}" for g in agent.get("gpus") or []) or "no GPU"
        lines.append(f"agent: {agent.get('host')} (Python {agent.get('python')}, {gpus}), "
                     f"workdir {agent.get('workdir')}")
    if presence.busy is not None and presence.polling:
        lines.append(f"The agent is running run {presence.busy.id}.")
    if not presence.polling:
        lines.append(no_agent_text(config, db, backend, presence, now))
    return CheckReport(backend.name, "agent", presence.polling, lines,
                       {"token": entry.to_json(), "polling": presence.polling})


@dataclass
class AgentPresence:
    """Whether an agent works for an agent backend now (and the fix when none does)."""

    token: BackendToken | None
    seen: float | None
    """The latest request of the backend's agent: a poll for work, or a report on the run it executes."""
    busy: Run | None
    """The backend's run that executes now (its agent then reports on it instead of polling)."""
    polling: bool
    left_at: float | None = None
    """When the backend's agent said it stops (and none has polled since)."""


def polling_window_s(backend: AgentBackendSettings) -> float:
    """How long after its last request an agent still counts as there: the backend's
    ``heartbeat_timeout_s``, but never less than one long poll plus the longest ``Retry-After``
    (a waiting agent's ``last_seen`` moves only when a poll starts and ends)."""
    return float(max(backend.heartbeat_timeout_s, LONG_POLL_MAX_S + max(RETRY_AFTER_S) + 5))


def agent_presence(tokens: BackendTokens, active: Sequence[Run], backend: AgentBackendSettings, now: float) -> AgentPresence:
    """The backend's token entry and whether its agent polled (or reported on its run) lately."""
    entry = tokens.get(backend.name)
    busy = next((run for run in active if run.backend == backend.name), None)
    seen = entry.last_seen if entry is not None else None
    if busy is not None and busy.last_seen is not None and (seen is None or busy.last_seen > seen):
        seen = busy.last_seen
    left_at = entry.left_at if entry is not None and busy is None else None
    polling = entry is not None and seen is not None and now - seen <= polling_window_s(backend) and left_at is None
    return AgentPresence(entry, seen, busy, polling, left_at)


@functools.lru_cache(maxsize=1)
def _this_host() -> str:
    """This machine's name, looked up once (a slow resolver must not slow every runs list)."""
    from potato.server.training.address import this_host

    return this_host()


def start_agent_command(config: Config, db: Database, backend: str) -> str:
    """The command that starts an agent for ``backend``, with the address ``register`` prints."""
    from potato.server.training.address import recorded_address, server_address

    address = server_address(None, config.public_url, recorded_address(db), config.host, config.port, _this_host())
    return f"potato training agent --server {address.url} --backend {backend}"


def no_agent_text(config: Config, db: Database, backend: AgentBackendSettings, presence: AgentPresence, now: float) -> str:
    """No agent polls for the backend, and how to start one (register first, if never registered)."""
    name = backend.name
    if presence.token is None:
        return (f"no agent polls for backend '{name}': no token issued yet; on the server run "
                f"`potato training register {name} {config.path.name}`, then on the training machine the commands "
                "it prints")
    host = (presence.token.agent or {}).get("host") or "the training machine"
    since = (f"its agent on {host} left at {_when(presence.left_at)}" if presence.left_at is not None
             else "none has connected with its token yet" if presence.seen is None
             else f"the last request came {now - presence.seen:.0f} s ago")
    return (f"no agent polls for backend '{name}' ({since}): start one on the training machine with the backend's "
            f"token in POTATO_TRAINING_TOKEN: `{start_agent_command(config, db, name)}` (a lost token: "
            f"`potato training register {name} {config.path.name}` issues a new one)")


def explain_queued(config: Config, store: RunStore, runs: Sequence[Run], now: float | None = None) -> None:
    """Set the step line of each queued run on an agent backend to why it waits (at read time, so it
    is always current): no agent polls for its backend, or the run that executes before it."""
    backends = config.model_training.all_backends()
    waiting: list[tuple[Run, AgentBackendSettings]] = []
    for run in runs:
        backend = backends.get(run.backend)
        if run.state is RunState.QUEUED and backend is not None and polled(backend):
            waiting.append((run, cast(AgentBackendSettings, backend)))
    if not waiting:
        return
    now = time.time() if now is None else now
    db = store.db
    tokens = BackendTokens(db)
    active = store.in_states(list(ACTIVE))
    presences: dict[str, AgentPresence] = {}
    for run, backend in waiting:
        if run.backend not in presences:
            presences[run.backend] = agent_presence(tokens, active, backend, now)
        presence = presences[run.backend]
        if not presence.polling:
            run.step = no_agent_text(config, db, backend, presence, now)
        elif active:
            run.step = f"waiting in the queue behind run {active[0].id} ({active[0].backend})"


def agent_entries(config: Config, tokens: BackendTokens, store: RunStore, now: float | None = None) -> list[dict[str, Any]]:
    """Each agent backend's agent as the page lists it: connected, last seen, host, Python, GPUs, run.
    "connected" is the check's own rule (:func:`agent_presence`), so the table and the Check
    button never disagree."""
    now = time.time() if now is None else now
    active = store.in_states([RunState.PREPARING, RunState.RUNNING, RunState.COPYING])
    out = []
    for settings in config.model_training.all_backends().values():
        if not polled(settings):
            continue
        b = cast(AgentBackendSettings, settings)  # a polled backend's settings: a name and heartbeat_timeout_s
        presence = agent_presence(tokens, active, b, now)
        entry = presence.token
        out.append({
            "backend": b.name,
            "registered": entry is not None,
            "registered_at": entry.created_at if entry else None,
            "last_seen": presence.seen,
            "connected": presence.polling,
            "left_at": presence.left_at,
            "agent": entry.agent if entry else None,
            "run": presence.busy.id if presence.busy else None,
        })
    return out
