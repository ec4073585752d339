"""The backends as the server drives them: one module each, behind :class:`~.base.Backend`.

:func:`backends_of` is the one place that maps a config's backend type to its module.
"""

from __future__ import annotations

from potato.config.schema import BackendSettings as Settings
from potato.config.schema import Config
from potato.errors import PotatoError
from potato.server.training.backends.agent import Polling
from potato.server.training.backends.base import Backend, CheckReport, Launch, AgentTimeouts, Results, Session
from potato.server.training.backends.local import Local
from potato.server.training.backends.slurm.backend import Slurm
from potato.server.training.backends.ssh.backend import Ssh

KINDS: dict[str, type[Backend]] = {kind.type: kind for kind in (Local, Ssh, Slurm, Polling)}


class UnknownBackend(PotatoError):
    """A name the config has no backend for; the message lists those it has."""


def backend_for(settings: Settings) -> Backend:
    return KINDS[settings.type](settings)  # type: ignore[arg-type]


def backends_of(config: Config) -> dict[str, Backend]:
    """Every backend of the config, by name, in the config's order (local first)."""
    return {name: backend_for(settings) for name, settings in config.model_training.all_backends().items()}


def backend_named(config: Config, name: str) -> Backend:
    """The backend ``name``, or :class:`UnknownBackend` naming those the config has."""
    backends = backends_of(config)
    if name not in backends:
        raise UnknownBackend(f"Backend {name!r} is not in the config. Backends: {', '.join(backends)}.")
    return backends[name]


__all__ = ["Backend", "CheckReport", "Launch", "AgentTimeouts", "Local", "Polling", "Results", "Session", "Slurm", "Ssh",
           "UnknownBackend", "backend_for", "backend_named", "backends_of"]
