"""``/media/``: the files items name, served as inert files and never through a link (issue 42 items 9
and 10, the way the probe found them). The browser's side is tests/e2e/test_media_files.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from potato.display.media import Served
from potato.server.media import content_disposition


def _login(client: Any, name: str = "alice") -> None:
    assert client.post("/login", data={"name": name}).status_code == 302


PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"
PAGE = b"<html><script src='evil.js'></script></html>"


def _media_project(make_project: Callable[..., Path], tmp_path: Path, **overrides: Any) -> Path:
    """A project whose items show an image and a PDF from ``media``, with hostile files and links beside them."""
    fields = [{"key": "text", "type": "text"}, {"key": "photo", "type": "image"}, {"key": "paper", "type": "pdf"}]
    path = make_project(n_items=3, instance_display={"fields": fields}, media_directory="media", **overrides)
    media = path.parent / "media"
    media.mkdir(exist_ok=True)
    (media / "cat.png").write_bytes(b"\x89PNG fake")
    (media / "paper.pdf").write_bytes(PDF)
    (media / "evil.html").write_bytes(PAGE)
    (media / "evil.js").write_bytes(b"window.top.__pwned = 1;")
    (media / "page.pdf").write_bytes(PAGE)  # a page that calls itself a PDF
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "dog.png").write_bytes(b"\x89PNG dog")
    (media / "secret").symlink_to(path.parent / "annotation_output" / "secret_key")
    (media / "passwd").symlink_to("/etc/passwd")
    (media / "elsewhere").symlink_to(outside, target_is_directory=True)
    data = path.parent / "data" / "reviews.json"
    items = json.loads(data.read_text())
    papers = ["paper.pdf", "page.pdf", "secret"]
    data.write_text(json.dumps([{**item, "photo": "cat.png", "paper": papers[i]} for i, item in enumerate(items)]))
    return path


def _media_app(path: Path) -> Any:
    from potato.config import load_config
    from potato.server import create_app

    return create_app(load_config(path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})


def test_media_files_are_inert_files_and_never_a_page_of_this_server(make_project: Callable[..., Path],
                                                                     tmp_path: Path) -> None:
    """An item's pdf that was an HTML page loading evil.js from the media folder ran it as the
    signed-in annotator, in the page's frame and opened on its own."""
    from potato.server import close_app
    from potato.server.headers import MEDIA_POLICY

    app = _media_app(_media_project(make_project, tmp_path))
    try:
        client = app.test_client()
        _login(client)
        for name, mimetype, inline in [("paper.pdf", "application/pdf", True), ("cat.png", "image/png", True),
                                       ("evil.html", "application/octet-stream", False),
                                       ("evil.js", "application/octet-stream", False),
                                       ("page.pdf", "application/octet-stream", False)]:
            with client.get(f"/media/{name}") as served:
                assert served.status_code == 200, name
                assert served.mimetype == mimetype, name
                assert served.headers["X-Content-Type-Options"] == "nosniff"
                assert served.headers["Content-Security-Policy"] == MEDIA_POLICY
                assert "sandbox" in served.headers["Content-Security-Policy"].split("; ")
                assert served.headers["Content-Disposition"].startswith("inline" if inline else "attachment"), name
        with client.get("/media/paper.pdf", headers={"Range": "bytes=0-7"}) as part:  # the PDF viewer reads ranges
            assert part.status_code == 206 and part.data == PDF[:8]
            etag = part.headers["ETag"]
        with client.get("/media/paper.pdf", headers={"If-None-Match": etag}) as cached:
            assert cached.status_code == 304 and cached.headers["Content-Security-Policy"] == MEDIA_POLICY
        with client.head("/media/paper.pdf") as head:
            assert head.status_code == 200 and head.headers["Content-Length"] == str(len(PDF))
        page = client.get("/annotate")
        assert "script-src localhost/static/;" in page.headers["Content-Security-Policy"]  # not /media
        first = client.get("/api/item/1").get_json()["item"]["fields"][2]
        assert first["type"] == "pdf" and first["src"] == "/media/paper.pdf"
        second = client.get("/api/item/2").get_json()["item"]["fields"][2]
        assert second == {"label": "paper", "type": "text", "text": "[pdf not shown: the file is not a PDF]"}
    finally:
        close_app(app)


def test_links_in_the_media_folder_are_not_followed(make_project: Callable[..., Path], tmp_path: Path) -> None:
    """A link to annotation_output/secret_key or to /etc/passwd was served to an annotator."""
    from potato.server import close_app

    app = _media_app(_media_project(make_project, tmp_path))
    try:
        client = app.test_client()
        _login(client)
        for name in ("secret", "passwd", "elsewhere/dog.png", "evil.html/x", "nope.png", "paper.pdf%00"):
            with client.get(f"/media/{name}") as refused:
                assert refused.status_code == 404, name
                assert b"root:" not in refused.data and b"PNG" not in refused.data
        third = client.get("/api/item/3").get_json()["item"]["fields"][2]
        assert third == {"label": "paper", "type": "text",
                         "text": "[pdf not shown: the file is behind a link, which the server does not follow]"}
    finally:
        close_app(app)


def test_the_output_folder_is_never_served_even_inside_the_media_folder(make_project: Callable[..., Path]) -> None:
    from potato.server import close_app

    path = make_project(instance_display={"fields": [{"key": "text", "type": "text"}, {"key": "photo", "type": "image"}]},
                        media_directory=".")
    (path.parent / "cat.png").write_bytes(b"\x89PNG fake")
    app = _media_app(path)
    try:
        client = app.test_client()
        _login(client)
        with client.get("/media/cat.png") as served:
            assert served.status_code == 200
        assert (path.parent / "annotation_output" / "secret_key").is_file()
        with client.get("/media/annotation_output/secret_key") as refused:
            assert refused.status_code == 404 and refused.data != (path.parent / "annotation_output" /
                                                                   "secret_key").read_bytes()
    finally:
        close_app(app)


@pytest.mark.parametrize(("served", "name", "value"), [
    (Served("application/pdf", True), "papers/a.pdf", 'inline; filename="a.pdf"'),
    (Served("application/octet-stream", False), "evil.html", 'attachment; filename="evil.html"'),
    (Served("image/png", True), 'ca"t\\.png', 'inline; filename="cat.png"; filename*=UTF-8\'\'ca%22t%5C.png'),
    (Served("image/png", True), "café.png", "inline; filename=\"cafe.png\"; filename*=UTF-8''caf%C3%A9.png"),
])
def test_the_disposition_says_show_or_save_with_a_name_that_cannot_break_the_header(
        served: Served, name: str, value: str) -> None:
    assert content_disposition(served, name) == value


def test_made_up_names_do_not_grow_the_refused_names_without_end(make_project: Callable[..., Path],
                                                                tmp_path: Path, monkeypatch: Any) -> None:
    """Each refused name is logged once; names a signed-in client makes up by the thousand must not
    make that memory grow without end."""
    from potato.server import close_app, media

    monkeypatch.setattr(media, "REFUSED_KEPT", 5)
    monkeypatch.setattr(media, "_REFUSED", set())
    app = _media_app(_media_project(make_project, tmp_path))
    try:
        client = app.test_client()
        _login(client)
        for number in range(12):
            assert client.get(f"/media/missing-{number}.png").status_code == 404
        assert 0 < len(media._REFUSED) <= 5
    finally:
        close_app(app)
