"""``potato training check <backend>`` and the page's Check button: one report for both (R9, R12)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from potato.config.schema import Config, LocalBackend


class UnknownBackend(Exception):
    """The check names a backend the config does not have; the message lists those it has."""


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


def check_local(backend: LocalBackend) -> CheckReport:
    """Which device a local run would get (R11, R12), e.g. ``local: this machine, CPU (2 threads)``."""
    from potato.training.devices import describe_local, probe_devices, resolve_device

    probe = probe_devices()
    device, warning = resolve_device(backend.device, probe)
    lines = [describe_local(device, probe, backend.num_threads)]
    if warning:
        lines.append(f"warning: {warning}")
    return CheckReport(backend.name, "local", True, lines, {"device": device, "warning": warning})


def run_check(config: Config, name: str) -> CheckReport:
    backends = config.model_training.all_backends()
    backend = backends.get(name)
    if backend is None:
        raise UnknownBackend(f"Backend {name!r} is not in the config. Backends: {', '.join(backends)}.")
    if isinstance(backend, LocalBackend):
        return check_local(backend)
    return CheckReport(
        name, backend.type, False,
        [(f"{backend.describe()}: this server cannot execute runs on {backend.type} backends yet, "
         "so there is nothing to check; use 'local'.")],
    )
