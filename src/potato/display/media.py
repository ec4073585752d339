"""The files of ``media_directory`` as the server hands them out, and as ``potato validate`` checks
the ones items name (issue 42).

A media file is served as the inert file it is, never as a page or a script of this server: a PDF
(by its bytes) as ``application/pdf``, an image (by its extension) as that image, anything else as a
download (``application/octet-stream``, ``Content-Disposition: attachment``); every one with
``nosniff`` and a sandboxing policy (``headers.MEDIA_POLICY``). An item whose ``pdf`` was an HTML
page that loaded a script from the media folder used to run it as the signed-in annotator.

A file is found without following links: each part of its path is opened below the folder with
``O_NOFOLLOW``, so a link placed there (to ``annotation_output/secret_key``, to ``/etc/passwd``) is
refused, not followed, whatever it points to, and no link can be swapped in between a check and the
open. ``media_directory`` itself may be a link: the config names it.

:func:`served_as` and :func:`is_pdf` are pure; :func:`open_media` and :func:`media_file_problem` read
the file system.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from potato.errors import PotatoError

IMAGE_TYPES = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
    ".avif": "image/avif", ".bmp": "image/bmp", ".ico": "image/x-icon", ".svg": "image/svg+xml",
}
"""Images served as themselves (an ``<img>`` never runs a script, whatever the image holds; an SVG
opened on its own is sandboxed by its policy)."""
PLAYED_TYPES = {
    ".mp3": "audio/mpeg", ".wav": "audio/wav", ".ogg": "audio/ogg", ".oga": "audio/ogg", ".m4a": "audio/mp4",
    ".flac": "audio/flac", ".aac": "audio/aac", ".opus": "audio/ogg", ".mp4": "video/mp4", ".m4v": "video/mp4",
    ".webm": "video/webm", ".ogv": "video/ogg", ".mov": "video/quicktime",
}
"""Sound and video served as themselves, for an ``<audio>`` or ``<video>`` element (which plays them
and runs nothing in them)."""
PDF_MAGIC = b"%PDF-"
PDF_HEAD = 1024
"""A PDF's ``%PDF-`` line may come this far into the file (as PDF readers, Chromium's included, allow)."""
DOWNLOAD = "application/octet-stream"


@dataclass(frozen=True)
class Served:
    """How one media file is sent: its Content-Type, and whether the browser may show it (inline) or
    only save it (attachment)."""

    mimetype: str
    inline: bool


def is_pdf(head: bytes) -> bool:
    """Whether a file whose first bytes are ``head`` is a PDF (pure)."""
    return PDF_MAGIC in head[:PDF_HEAD]


def served_as(name: str, head: bytes) -> Served:
    """How the media file ``name``, whose first bytes are ``head``, is sent (pure): a PDF by its bytes,
    an image, a sound or a video by its extension, anything else as a download. A ``.pdf`` that is not a PDF is a download
    too: what it is, the browser never looks at (``nosniff``)."""
    if is_pdf(head):
        return Served("application/pdf", True)
    suffix = PurePosixPath(name).suffix.lower()
    mimetype = IMAGE_TYPES.get(suffix) or PLAYED_TYPES.get(suffix)
    return Served(mimetype, True) if mimetype else Served(DOWNLOAD, False)


class MediaFileError(PotatoError):
    """A file an item names is not handed out from ``media_directory``; the subclass says why and its
    message the fix. ``why`` reads after the file's name ("'a.png' is not in ..."); ``brief`` is what
    an annotator is told instead (no path of the server's, no fix they could make)."""

    brief = "the file cannot be shown"

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self.why = why
        super().__init__(f"The media file {name!r} {why}")


class MediaMissing(MediaFileError):
    """The file is not in ``media_directory``."""

    brief = "the file is missing"

    def __init__(self, name: str, folder: Path) -> None:
        super().__init__(name, f"is not in media_directory {folder}; put the file there or fix the item")


class MediaLink(MediaFileError):
    """The file's path in ``media_directory`` goes through a link, which the server never follows."""

    brief = "the file is behind a link, which the server does not follow"

    def __init__(self, name: str, folder: Path, link: str, target: str) -> None:
        self.link = link
        super().__init__(
            name, f"is reached through a link in media_directory {folder}: {link} -> {target}. Links there are not "
                  "followed (one could hand any file of the server to annotators), so annotators would not see it: "
                  "put the file itself in place of the link (a copy: cp -L), or set media_directory to the folder "
                  "the link leads to")


class MediaNotAFile(MediaFileError):
    """The name is a folder, a device or a pipe, not a plain file."""

    brief = "it is not a file"

    def __init__(self, name: str, folder: Path) -> None:
        super().__init__(name, f"is not a plain file in media_directory {folder} (a folder, a device or a pipe); "
                               "name a file")


class MediaPrivate(MediaFileError):
    """The file lies in ``output_annotation_dir``, which holds the key that signs sessions and the database."""

    brief = "the file is in the server's output folder"

    def __init__(self, name: str, output: Path) -> None:
        super().__init__(name, f"lies in output_annotation_dir {output}, which holds the server's secret key and "
                               "database and is never served; keep media_directory apart from it")


class NotAPdf(MediaFileError):
    """A ``pdf`` field names a file that is not a PDF."""

    brief = "the file is not a PDF"

    def __init__(self, name: str) -> None:
        super().__init__(name, "is not a PDF (it does not begin with %PDF-), and a pdf field shows PDF files only: "
                               "convert it to PDF, or show it with a field of its own type (image, document)")


def open_media(folder: Path, name: str, private: Path | None = None) -> tuple[BinaryIO, os.stat_result]:
    """The media file ``name`` (a relative path, :func:`potato.display.fields.media_path`) of ``folder``,
    open for reading, and its stat; raises the :class:`MediaFileError` that says why not. No link
    below ``folder`` is followed; a file in ``private`` (the output folder) is refused."""
    parts = PurePosixPath(name).parts
    if not parts or "\x00" in name:  # no such file can exist (and os.open refuses the NUL)
        raise MediaMissing(name, folder)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        raise MediaMissing(name, folder) from None
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                raise _why_not(exc, fd, folder, name, parts[:i + 1]) from None
            os.close(fd)
            fd = child
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise MediaNotAFile(name, folder)
        if private is not None and _private(folder, parts, private):
            raise MediaPrivate(name, private)
        os.set_blocking(fd, True)
        file = os.fdopen(fd, "rb")
    except BaseException:  # any failure, an interrupt too: the descriptor is ours to close
        os.close(fd)
        raise
    return file, info


def _why_not(exc: OSError, parent: int, folder: Path, name: str, walked: tuple[str, ...]) -> MediaFileError:
    """The error for a part of the path (the last of ``walked``) that would not open below ``parent``."""
    try:
        mode = os.lstat(walked[-1], dir_fd=parent).st_mode
    except OSError:
        return MediaMissing(name, folder)
    if stat.S_ISLNK(mode):
        link = "/".join(walked)
        try:
            target = os.readlink(walked[-1], dir_fd=parent)
        except OSError:
            target = "?"
        return MediaLink(name, folder, link, target)
    if exc.errno == errno.ENOTDIR:  # a file where the path needs a folder
        return MediaMissing(name, folder)
    return MediaNotAFile(name, folder)


def _private(folder: Path, parts: tuple[str, ...], private: Path) -> bool:
    """Whether the file ``parts`` of ``folder`` (no link on its way: its real path is the folder's plus
    its parts) lies in ``private`` where the media folder holds that folder (``media_directory: .``);
    a media folder kept inside the output folder holds only its own files."""
    real = folder.resolve()
    out = private.resolve()
    if real != out and real.is_relative_to(out):
        return False
    return real.joinpath(*parts).is_relative_to(out)


def media_file_problem(folder: Path, name: str, kind: str, private: Path | None = None) -> MediaFileError | None:
    """Why the file ``name`` cannot be shown in a ``kind`` field (image, pdf), or None: the check
    ``potato validate`` makes of every file an item names, with :func:`open_media`'s rules."""
    try:
        file, _ = open_media(folder, name, private)
    except MediaFileError as exc:
        return exc
    with file:
        head = file.read(PDF_HEAD) if kind == "pdf" else b""
    if kind == "pdf" and not is_pdf(head):
        return NotAPdf(name)
    return None
