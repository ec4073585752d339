"""Issue 35: the errors a user acts on are found, not listed by hand: every PotatoError subclass,
wherever it is defined, says in its docstring what it means, and none of the kinds the docs name
went missing."""

from __future__ import annotations

from potato.errors import PotatoError, user_errors


def test_every_user_error_is_found_wherever_it_is_defined() -> None:
    found = {cls.__qualname__: cls for cls in user_errors()}
    for name in ("ConfigError", "AccountError", "RunRequestError", "SshFailed", "DiskReserve", "CopyFailed",
                 "UnknownBackend", "PackageUnavailable", "ProtocolError", "Unreachable", "BundleCorrupt",
                 "UnsafeArchive", "SlurmError", "SlurmConfigError", "NoGpuFree", "AgentError", "WorkerError",
                 "ProjectExistsError", "ProjectWriteError", "PushRefused", "UnknownTrainer"):
        assert name in found, f"{name} is no longer a PotatoError"
    assert PotatoError not in found.values()
    assert all(issubclass(cls, PotatoError) for cls in found.values())


def test_every_user_error_says_what_it_means() -> None:
    undocumented = [f"{cls.__module__}.{cls.__qualname__}" for cls in user_errors() if not cls.__doc__]
    assert undocumented == []
