"""How a media file is sent (pure) and found without following links (issue 42 items 9 and 10): a
file is the type it is, never a page or a script of the server, and a link in the media folder is
refused whatever it points to. The route is tested in tests/unit/server/test_media.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from potato.display.media import (DOWNLOAD, MediaLink, MediaMissing, MediaNotAFile, MediaPrivate, NotAPdf, Served, is_pdf,
                                  media_file_problem, open_media, served_as)


@pytest.mark.parametrize(("name", "head", "served"), [
    ("paper.pdf", b"%PDF-1.7\n...", Served("application/pdf", True)),
    ("scan", b"\x00" * 100 + b"%PDF-1.4", Served("application/pdf", True)),  # a header a little way in, as readers allow
    ("page.pdf", b"<html><script>x()</script>", Served(DOWNLOAD, False)),
    ("cat.PNG", b"\x89PNG", Served("image/png", True)),
    ("cat.jpeg", b"", Served("image/jpeg", True)),
    ("logo.svg", b"<svg onload=x()>", Served("image/svg+xml", True)),  # sandboxed when opened on its own
    ("call.mp3", b"ID3", Served("audio/mpeg", True)),  # a sound or a video, for the page's player (issue 45)
    ("clip.WEBM", b"", Served("video/webm", True)),
    ("clip.mp4", b"", Served("video/mp4", True)),
    ("evil.html", b"<html>", Served(DOWNLOAD, False)),
    ("evil.js", b"alert(1)", Served(DOWNLOAD, False)),
    ("style.css", b"body{}", Served(DOWNLOAD, False)),
    ("notes", b"text", Served(DOWNLOAD, False)),
])
def test_a_file_is_sent_as_a_pdf_an_image_a_sound_a_video_or_a_download(name: str, head: bytes, served: Served) -> None:
    assert served_as(name, head) == served


def test_a_pdf_is_known_by_its_bytes() -> None:
    assert is_pdf(b"%PDF-1.4") and not is_pdf(b"PDF") and not is_pdf(b"x" * 1024 + b"%PDF-1.4")


@pytest.fixture
def media(tmp_path: Path) -> Path:
    folder = tmp_path / "media"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.png").write_bytes(b"png")
    (folder / "paper.pdf").write_bytes(b"%PDF-1.4 ...")
    (tmp_path / "secret_key").write_bytes(b"k" * 32)
    (folder / "key").symlink_to(tmp_path / "secret_key")
    (folder / "passwd").symlink_to("/etc/passwd")
    (folder / "inner").symlink_to("paper.pdf")  # even a link to a file beside it: links are not followed
    (folder / "linked").symlink_to(folder / "sub", target_is_directory=True)
    os.mkfifo(folder / "pipe")
    return folder


def test_files_open_and_links_are_refused_whatever_they_point_to(media: Path, tmp_path: Path) -> None:
    file, info = open_media(media, "sub/a.png")
    with file:
        assert file.read() == b"png" and info.st_size == 3
    for name, link, target in [("key", "key", str(tmp_path / "secret_key")), ("passwd", "passwd", "/etc/passwd"),
                               ("inner", "inner", "paper.pdf"), ("linked/a.png", "linked", str(media / "sub"))]:
        with pytest.raises(MediaLink) as refused:
            open_media(media, name)
        assert refused.value.link == link
        assert f"{link} -> {target}. Links there are not followed" in str(refused.value)
    with pytest.raises(MediaMissing):
        open_media(media, "nope.png")
    with pytest.raises(MediaMissing):
        open_media(media, "paper.pdf/x")  # a file where a folder should be
    with pytest.raises(MediaNotAFile):
        open_media(media, "sub")
    with pytest.raises(MediaNotAFile):
        open_media(media, "pipe")  # opened without blocking, then refused
    with pytest.raises(MediaMissing):
        open_media(tmp_path / "gone", "a.png")
    with pytest.raises(MediaMissing):
        open_media(media, "paper.pdf\x00.png")


def test_the_media_folder_itself_may_be_a_link(media: Path, tmp_path: Path) -> None:
    """The config names media_directory: a link there is the admin's choice; below it none is followed."""
    (tmp_path / "via").symlink_to(media, target_is_directory=True)
    file, _ = open_media(tmp_path / "via", "paper.pdf")
    file.close()
    with pytest.raises(MediaLink):
        open_media(tmp_path / "via", "key")


def test_the_output_folder_is_private_even_inside_the_media_folder(tmp_path: Path) -> None:
    out = tmp_path / "annotation_output"
    out.mkdir()
    (out / "secret_key").write_bytes(b"k" * 32)
    (tmp_path / "cat.png").write_bytes(b"png")
    with pytest.raises(MediaPrivate) as refused:
        open_media(tmp_path, "annotation_output/secret_key", private=out)
    assert "keep media_directory apart from it" in str(refused.value)
    open_media(tmp_path, "cat.png", private=out)[0].close()
    with pytest.raises(MediaPrivate):
        open_media(out, "secret_key", private=out)  # media_directory is the output folder
    (out / "media").mkdir()
    (out / "media" / "dog.png").write_bytes(b"png")
    open_media(out / "media", "dog.png", private=out)[0].close()  # a media folder kept inside it: its own files


def test_validate_s_check_is_the_server_s_rules_and_a_pdf_field_takes_pdfs(media: Path) -> None:
    assert media_file_problem(media, "paper.pdf", "pdf") is None
    assert media_file_problem(media, "sub/a.png", "image") is None
    assert isinstance(media_file_problem(media, "sub/a.png", "pdf"), NotAPdf)
    assert isinstance(media_file_problem(media, "key", "image"), MediaLink)
    problem = media_file_problem(media, "nope.png", "image")
    assert isinstance(problem, MediaMissing) and problem.brief == "the file is missing"
