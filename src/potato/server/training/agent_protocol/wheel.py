"""The wheel of the Potato this server runs, for the agents it hands work to.

A training machine behind NAT reaches the server by definition, so the server is the one place that
always has the exact Potato an agent should run (the way a build controller hands out its agent):
``potato training register`` prints a ``pip install`` of this wheel's URL, and an agent too old for
the protocol is told the same command. The wheel is rebuilt from the files this process imports and
the distribution's own metadata (name, version, dependencies and their Python markers, the
``potato`` command), so an installed wheel, an editable checkout and a container all hand out what
they run. The bytes are deterministic (sorted names, fixed timestamps): every gunicorn worker builds
the same file, once, in memory (a few hundred kB).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import itertools
import zipfile
from importlib import metadata
from pathlib import Path

import potato
from potato import defaults
from potato.errors import PotatoError

DIST = "potato-annotation"
"""The distribution name on package indexes."""
ROUTE = "/training/agent/v1/package"
"""Where the server serves the wheel (no token: it is the published code, like an index)."""
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
"""Every member's timestamp: the same files give the same bytes, on any worker, at any time."""


class PackageUnavailable(PotatoError):
    """This server runs from files without package metadata (a bare source tree on PYTHONPATH)."""


def wheel_name(version: str = potato.__version__) -> str:
    """The wheel's file name (PEP 427); pip reads name and version from it."""
    return f"{DIST.replace('-', '_')}-{version}-py3-none-any.whl"


def wheel_url(server_url: str, version: str = potato.__version__) -> str:
    return f"{server_url.rstrip('/')}{ROUTE}/{wheel_name(version)}"


def agent_install_command(server_url: str, extra: str | None, version: str = potato.__version__) -> str:
    """``pip install`` of exactly this server's Potato, with ``extra`` (a trainer's packages)."""
    name = f"{DIST}[{extra}]" if extra else DIST
    return f'pip install "{name} @ {wheel_url(server_url, version)}"'


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _package_files(package_dir: Path) -> list[tuple[str, Path]]:
    """(name in the wheel, file) for every file of the ``potato`` package, bytecode left out."""
    out = []
    for path in sorted(package_dir.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            out.append((f"potato/{path.relative_to(package_dir).as_posix()}", path))
    return out


def build_wheel(version: str = potato.__version__) -> bytes:
    """The wheel's bytes: this process's ``potato`` package and the installed distribution's metadata."""
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        raise PackageUnavailable(
            f"This server runs Potato from files without package metadata, so it has no wheel to hand to agents; "
            f"install it (pip install {DIST}, or pip install . in the source tree) and start it again.") from None
    meta = dist.read_text("METADATA") or ""
    if f"\nVersion: {version}\n" not in f"\n{meta}":
        raise PackageUnavailable(
            f"The installed package metadata is not of Potato {version} (a stale editable install?); run pip install "
            "again in the source tree and restart the server.")
    info = f"{DIST.replace('-', '_')}-{version}.dist-info"
    members: list[tuple[str, bytes]] = [(name, path.read_bytes())
                                        for name, path in _package_files(Path(potato.__file__).resolve().parent)]
    members.append((f"{info}/METADATA", meta.encode("utf-8")))
    members.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: potato-server\nRoot-Is-Purelib: true\n"
                                     b"Tag: py3-none-any\n"))
    entry_points = dist.read_text("entry_points.txt")
    if entry_points:
        members.append((f"{info}/entry_points.txt", entry_points.encode("utf-8")))
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in members)
    members.append((f"{info}/RECORD", (record + f"{info}/RECORD,,\n").encode("utf-8")))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            entry = zipfile.ZipInfo(name, ZIP_DATE)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data)
    return buffer.getvalue()


@functools.lru_cache(maxsize=1)
def wheel_bytes() -> bytes:
    """This process's wheel, built on first use: the code a process runs does not change under it."""
    return build_wheel()


# -- which agents the protocol serves ------------------------------------------------------------

def version_tuple(text: str) -> tuple[int, ...]:
    """``"2.14.0"`` -> (2, 14, 0); a suffix such as ``rc1`` or ``.dev3`` ends the numbers."""
    numbers = []
    for part in text.split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        numbers.append(int(digits))
        if digits != part:
            break
    return tuple(numbers)


def agent_too_old(version: object, server_url: str) -> str | None:
    """The answer for an agent whose version the protocol cannot serve, naming the command that
    updates it; None for a current one and for agents that send no version (other people's)."""
    if not isinstance(version, str) or not version_tuple(version):
        return None
    if version_tuple(version) >= version_tuple(defaults.AGENT_MIN_VERSION):
        return None
    return (f"This agent is Potato {version[:40]}; this server runs Potato {potato.__version__} and needs an agent "
            f"of {defaults.AGENT_MIN_VERSION} or newer. Update it on the training machine with "
            f"`{agent_install_command(server_url, None)}`, then start the agent again.")
