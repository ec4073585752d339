"""What a multi-agent trace's team is, and the answers about it (pure): upstream's
``agent_scorecard`` (each agent and the team scored on dimensions, milestones checked off) and
``emergent_behavior`` (for each collective behaviour, the turns, across agents, that take part) and
``agent_interaction_graph`` (the agents on the critical path, and the handoffs between agents that
were critical or problematic).

Both read the item's list of steps as upstream's pages read it: each step is taken by the agent its
``agent_key`` names (else its speaker or role; a step naming none is an agent of its own), and the
agents are those of the steps in the order they first act, unless the scheme lists its own. An answer
naming an agent or a turn the item lacks is refused, naming those it has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence, Tuple



class BadTeamAnswer(ValueError):
    """A scorecard or behaviour that names what the item does not have; the message says what it has."""


@dataclass(frozen=True)
class TeamTurn:
    """One step of the trace: its place, the agent that took it, and its words (the first 160
    characters: enough to tell the turns apart beside a box)."""

    index: int
    agent: str
    text: str


@dataclass(frozen=True)
class Team:
    """A trace's agents and turns, as the page offers them."""

    agents: Tuple[str, ...]
    turns: Tuple[TeamTurn, ...]

    @property
    def edges(self) -> dict[str, Tuple[str, str, int]]:
        """Each passage from one agent to another between consecutive turns, named ``"A->B"`` as upstream
        names it, with how often it happens, in the order first taken."""
        out: dict[str, Tuple[str, str, int]] = {}
        for before, after in zip(self.turns, self.turns[1:]):
            if before.agent != after.agent:
                key = f"{before.agent}->{after.agent}"
                out[key] = (before.agent, after.agent, out[key][2] + 1 if key in out else 1)
        return out

    def shown(self) -> dict[str, Any]:
        return {"agents": list(self.agents), "turns": [{"index": t.index, "agent": t.agent, "text": t.text} for t in self.turns],
                "edges": [{"key": key, "from": a, "to": b, "count": n} for key, (a, b, n) in self.edges.items()]}


def _words(step: Mapping[str, Any]) -> str:
    for key in ("content", "text", "message", "thought", "action", "output"):
        if isinstance(step.get(key), str) and step[key]:
            return step[key]
    return ""


def team_of(steps: Any, agent_key: str, listed: Sequence[str] = ()) -> Team:
    """The agents (``listed``, else each step's in the order they first act) and turns of ``steps``."""
    turns = []
    for n, step in enumerate(steps if isinstance(steps, list) else []):
        step = step if isinstance(step, dict) else {"text": step if isinstance(step, str) else ""}
        agent = str(step.get(agent_key) or step.get("speaker") or step.get("role") or "") or f"agent {n + 1}"
        words = _words(step)
        turns.append(TeamTurn(n, agent, words if len(words) <= 160 else words[:159] + "\u2026"))
    agents = tuple(listed) or tuple(dict.fromkeys(turn.agent for turn in turns))
    return Team(agents, tuple(turns))


def stored_scorecard(value: Mapping[str, Any], team: Team) -> dict[str, Any] | None:
    """A scorecard as upstream stores it, ``{"agents": {agent: {dimension: score}}, "team": {dimension:
    score}, "milestones": {milestone: true}}``, with unscored dimensions, agents left without a score
    and milestones not reached left out; None when nothing is left."""
    agents = {str(name): {dim: score for dim, score in dims.items() if score}
              for name, dims in (value.get("agents") or {}).items()}
    stray = [name for name, dims in agents.items() if dims and name not in team.agents]
    if stray:
        raise BadTeamAnswer(f"this item's agents are {', '.join(team.agents) or 'none'}; there is no {stray[0]!r}")
    out = {"agents": {name: dims for name, dims in agents.items() if dims},
           "team": {dim: score for dim, score in (value.get("team") or {}).items() if score},
           "milestones": {name: True for name, reached in (value.get("milestones") or {}).items() if reached}}
    return out if any(out.values()) else None


def stored_behaviours(value: Mapping[str, Any], team: Team) -> dict[str, Any] | None:
    """Behaviours as upstream stores them, ``{behaviour: {"turns": [place, ...], "note": text}}``, the
    turns in the trace's order, a behaviour with neither left out; None when nothing is left."""
    out: dict[str, Any] = {}
    for name, given in value.items():
        turns = sorted(set(given.get("turns") or []))
        missing = [n for n in turns if not 0 <= n < len(team.turns)]
        if missing:
            raise BadTeamAnswer(f"this item has {len(team.turns)} turns, numbered 0 to {len(team.turns) - 1}; there is "
                                f"no {missing[0]}" if team.turns else "this item has no turns; leave the answer out")
        note = given.get("note") or ""
        if turns or note:
            out[name] = {"turns": turns, **({"note": note} if note else {})}
    return out or None


EDGE_MARKS = ("critical", "problematic")
"""What a passage between agents may be marked as in an interaction graph (unmarked: normal)."""


def stored_graph(value: Mapping[str, Any], team: Team) -> dict[str, Any] | None:
    """An interaction graph as upstream stores it, ``{"critical_nodes": [agent, ...], "edges": {"A->B":
    "critical" or "problematic"}}``, the agents in the team's order, unmarked passages left out; None
    when nothing is marked."""
    critical = set(value.get("critical_nodes") or [])
    stray = [name for name in critical if name not in team.agents]
    if stray:
        raise BadTeamAnswer(f"this item's agents are {', '.join(team.agents) or 'none'}; there is no {sorted(stray)[0]!r}")
    edges = {key: mark for key, mark in (value.get("edges") or {}).items() if mark}
    known = team.edges
    missing = [key for key in edges if key not in known]
    if missing:
        raise BadTeamAnswer(f"this item's agents pass to each other as {', '.join(known) or 'nothing'}; there is no "
                            f"{missing[0]!r}" if known else "no agent of this item passes to another; leave the edges out")
    out: dict[str, Any] = {"critical_nodes": [name for name in team.agents if name in critical],
                           "edges": {key: edges[key] for key in known if key in edges}}
    return out if out["critical_nodes"] or out["edges"] else None
