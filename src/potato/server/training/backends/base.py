"""The seam between the server and the places a run executes: what every backend answers.

The dispatcher, the agent protocol, the checks, the training page and the CLI ask a
:class:`Backend` and never look at its type, so a new backend is one module here plus its config
dataclass. A backend whose runs the server starts (local, ssh, slurm) gives back a :class:`Session`
for each, which the dispatcher watches; an agent backend's runs are claimed by its agents
(``jobs/next``), so the server starts nothing for it. Whoever executes a run, its agent reports
through the same protocol, and the run ends in :meth:`Backend.results`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, Sequence

from potato.config.schema import BackendSettings as Settings
from potato.config.schema import Config
from potato.defaults import HEARTBEAT_TIMEOUT_S
from potato.project import Project
from potato.server.training.runs.modelplace import Kept
from potato.server.training.runs.store import Run, RunStore


@dataclass
class CheckReport:
    """One check's answer: ``ok`` means a run could start there; ``lines`` are what the CLI prints."""

    backend: str
    type: str
    ok: bool
    lines: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "type": self.type, "ok": self.ok, "lines": self.lines, **self.details}


class Session(Protocol):
    """A run the server itself keeps going (the local agent's process, an ssh session's thread)."""

    def alive(self) -> bool:
        """Whether it still runs; asked once a second, it also reaps what ended."""


@dataclass(frozen=True)
class Launch:
    """What starting or adopting a run needs: the project, its runs, and the address its agents
    report to (``potato start`` sets it)."""

    project: Project
    store: RunStore
    agent_url: str


@dataclass(frozen=True)
class Results:
    """Where a finished run's model files are: already on this machine (``artifacts``), or still to
    be copied back by the backend (``fetch``: the run stays ``copying`` until then); neither means
    they stay on the training machine, in the folder the agent reports, for the reason ``kept``."""

    artifacts: Path | None = None
    fetch: bool = False
    kept: Kept | None = None


@dataclass(frozen=True)
class AgentTimeouts:
    """How long a run of this backend may go without a word from its agent, and wait in the queue."""

    heartbeat_s: float = HEARTBEAT_TIMEOUT_S
    queue_s: float | None = None


class Backend:
    """One backend of the config, as the server drives it. Subclasses set the class flags and
    override what differs; the defaults are those of a backend whose agents the server never sees
    start (an agent backend)."""

    type: ClassVar[str] = ""
    claimed_by_agents: ClassVar[bool] = False
    """Its runs wait until an agent of its own asks for one (``jobs/next``); else the dispatcher
    starts them, one at a time per backend."""
    one_session_at_a_time: ClassVar[bool] = False
    """A run starts only when no other session of such a backend is alive: its clean-up still uses
    (and then ends) the control master that runs to the same login share."""
    adopts_runs: ClassVar[bool] = False
    """After a restart its sessions can be taken over (:meth:`adopt`); a local agent needs no
    taking over, it reports to whichever server answers."""
    on_this_machine: ClassVar[bool] = False
    """Its worker runs on the server's machine: the job takes the local backend's device, threads and
    memory cap, trainers that read the server's run folders (decision-calibrate) can run here, and the
    model files are here when the run reports its result."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def name(self) -> str:
        return self.settings.name

    def describe(self) -> str:
        """The "Runs on" menu text, and the run's first line in run.log."""
        return self.settings.describe()

    # -- before a run ---------------------------------------------------------------------------

    def check(self, config: Config) -> CheckReport:
        """``potato training check`` and the page's Check button: ok when a run could start here."""
        raise NotImplementedError

    def agent_timeouts(self) -> AgentTimeouts:
        return AgentTimeouts()

    def cannot_train(self, trainer: str, requires: Sequence[str]) -> str | None:
        """Why a run of ``trainer`` (needing the pip packages ``requires``) would fail here before it
        trains, as a message that names the fix; None when nothing is known against it. Only a
        backend whose worker is the server's own Python can tell without a run or a check."""
        return None

    def packages_missing(self, requires: Sequence[str]) -> list[str]:
        """Which of the pip packages ``requires`` a run here lacks, as far as the server knows without a
        run or a check (the training page marks such trainers in its menu); empty where it cannot
        know, as for a machine other than this one."""
        return []

    # -- a run the server starts ----------------------------------------------------------------

    def claimer(self) -> tuple[str, str]:
        """Who claims its queued runs (the agent id the run records) and where they execute."""
        raise NotImplementedError(f"the server claims no run of a {self.type} backend")

    def first_step(self) -> str:
        """The run's step line while the server starts it."""
        return "starting"

    def no_address(self) -> str:
        """Why a run cannot start on a server started without an address for its agents."""
        return ("This server was started without an address its agents can use; start it with "
                "`potato start`.")

    def start(self, launch: Launch, run: Run, token: str) -> Session:
        """Start ``run`` (claimed, its bundle built, ``token`` its run token) and hand back its session."""
        raise NotImplementedError(f"the server starts no run on a {self.type} backend")

    def adopt(self, launch: Launch, run: Run) -> Session | None:
        """Take over an active run after a restart (only where :attr:`adopts_runs`); None when nothing
        of it is left to take over: the run cannot report any more."""
        return None

    def adopt_lost(self, run: Run) -> str:
        """The run's failure message when :meth:`adopt` found nothing to take over."""
        return "The server restarted and the run's session is gone; start the run again."

    def agent_alive(self, run: Run, session: Session | None) -> bool | None:
        """Whether the run's agent still runs, where the server can see it (None: it cannot)."""
        return None

    def end_silent_agent(self, project: Project, store: RunStore, run: Run, session: Session | None) -> None:
        """A run failed because its agent fell silent: end that agent where the server can reach it."""

    # -- after a run ----------------------------------------------------------------------------

    def results(self, project: Project, run: Run) -> Results:
        """Where the run's model files are once its agent reported the result."""
        return Results(kept=Kept.ON_AGENT)

    def finished(self, project: Project, run: Run) -> None:
        """Clean up on the server after the run's result was recorded."""
