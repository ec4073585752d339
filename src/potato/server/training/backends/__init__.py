"""The backends as the server drives them: one module each, behind :class:`~.base.Backend`.

:func:`backends_of` is the one place that maps a config's backend type to its module.
"""

from __future__ import annotations

from potato.config import BackendKind, register_backend_kind
from potato.config.schema import BackendSettings as Settings
from potato.config.schema import Config
from potato.errors import PotatoError
from potato.server.training.backends.agent import Polling
from potato.server.training.backends.base import Backend, CheckReport, Launch, AgentTimeouts, Results, Session
from potato.server.training.backends.local import Local
from potato.server.training.backends.slurm.backend import Slurm
from potato.server.training.backends.ssh.backend import Ssh

BACKEND_CLASSES: dict[str, type[Backend]] = {kind.type: kind for kind in (Local, Ssh, Slurm, Polling)}
"""The server's class for each backend type; the config's side of each type is in config/_backends.py."""


def register_backend(kind: type[Backend], settings: BackendKind) -> None:
    """Add a backend type: its server class and its config side (keys, settings dataclass), so a
    config may name ``type: <kind.type>`` and the server drives it like the built-in ones."""
    if kind.type != settings.type:
        raise ValueError(f"the backend class has type {kind.type!r} and its settings {settings.type!r}")
    if kind.claimed_by_agents != settings.polled:
        raise ValueError(f"the backend class of {kind.type!r} says claimed_by_agents={kind.claimed_by_agents} and its "
                         f"settings polled={settings.polled}: both sides must agree whether agents poll for its runs")
    if kind.type in BACKEND_CLASSES and BACKEND_CLASSES[kind.type] is not kind:
        raise ValueError(f"a backend type {kind.type!r} exists already")
    register_backend_kind(settings)
    BACKEND_CLASSES[kind.type] = kind


class UnknownBackend(PotatoError):
    """A name the config has no backend for; the message lists those it has."""


def backend_for(settings: Settings) -> Backend:
    return BACKEND_CLASSES[settings.type](settings)


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
           "UnknownBackend", "backend_for", "backend_named", "backends_of", "register_backend"]
