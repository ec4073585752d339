"""Where a run's model files are, as fields written once by whoever put them there.

The copy-back knows which files it fetched, which it left on the host and under which limit; the
local backend knows the folder it moved into place; an agent knows the folder it kept. Each writes
one :class:`ModelPlace` into the run's record, and the Hub push and the training page read it, so
nothing has to read that back out of run.log or the artifact URI's wording.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Mapping


class Kept(str, Enum):
    """Why model files stayed on the training machine."""

    FILE_CAP = "max_artifact_mb"
    """Those files were each over the backend's max_artifact_mb; the others were copied."""
    TOTAL_CAP = "max_artifacts_total_mb"
    """Together they passed max_artifacts_total_mb, so none was copied (nothing partial)."""
    NOT_FETCHED = "fetch_artifacts"
    """The backend's fetch_artifacts is off."""
    ON_AGENT = "agent"
    """An agent backend's runs keep their model files in the agent's --workdir."""


@dataclass(frozen=True)
class ModelPlace:
    """The run's model files: ``folder`` (with ``files`` and ``bytes``) on this server, and/or
    ``host_folder`` on ``host`` when some or all stayed there (``kept`` says why, ``limit_mb`` under
    which limit, ``kept_files`` which, when only some stayed)."""

    folder: str | None = None
    files: int = 0
    bytes: int = 0
    host: str | None = None
    host_folder: str | None = None
    kept: Kept | None = None
    kept_files: tuple[str, ...] = ()
    limit_mb: int | None = None

    @property
    def stayed(self) -> bool:
        """Some or all of the model is on the training machine."""
        return self.host is not None

    @property
    def partial(self) -> bool:
        """This server holds only part of the model; the rest stayed on ``host``."""
        return self.folder is not None and self.stayed

    @classmethod
    def here(cls, folder: Path, **stayed: Any) -> ModelPlace:
        """``folder`` on this server, its regular files counted (links are not model files)."""
        files, size = 0, 0
        for root, _dirs, names in os.walk(folder, followlinks=False):
            for name in names:
                try:
                    info = os.lstat(Path(root) / name)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    files, size = files + 1, size + info.st_size
        return cls(folder=str(folder), files=files, bytes=size, **stayed)

    def to_json(self) -> dict[str, Any]:
        return {"folder": self.folder, "files": self.files, "bytes": self.bytes, "host": self.host,
                "host_folder": self.host_folder, "kept": self.kept.value if self.kept else None,
                "kept_files": list(self.kept_files), "limit_mb": self.limit_mb}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ModelPlace | None:
        """The stored record; None for a run that recorded none (it has not ended, or an older
        server ran it)."""
        if not isinstance(data, Mapping):
            return None
        kept = data.get("kept")
        return cls(folder=data.get("folder"), files=int(data.get("files") or 0), bytes=int(data.get("bytes") or 0),
                   host=data.get("host"), host_folder=data.get("host_folder"),
                   kept=Kept(kept) if kept in {k.value for k in Kept} else None,
                   kept_files=tuple(str(name) for name in data.get("kept_files") or ()),
                   limit_mb=data.get("limit_mb"))
